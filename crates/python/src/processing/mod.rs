//! Processing from Python: `MetricProcessor` over the caller's dict, and the
//! reference's helper functions.
//!
//! A call reads its records (`convert`) and the caller's dict
//! (`metrics_dict`) into the processor's types, applies the records in Rust,
//! and writes back only the keys whose values changed, all or none: any
//! error leaves the dict exactly as it was.

mod convert;
mod metrics_dict;
mod reference_functions;

use std::sync::{Mutex, PoisonError};

use nixl_telemetry_processor::{
    builder_by_name, render_prometheus, AttributeRegistry, Context, JsonNumber, JsonValue,
    MetricProcessor as RustProcessor, Metrics, Record, Timestamp,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use pyo3::{PyTraverseError, PyVisit};

pub use convert::MAX_NESTING;
use convert::{
    batch_item, context_of, error_in, processing_error, read_record, timestamp_of, type_name,
};
use metrics_dict::{last_updated_of, load_all, load_keys, write_back, Loaded};
pub use reference_functions::{
    create_gpu_identifier, extract_gpu_type, extract_primary_gpu, extract_telemetry_data,
    sanitize_field_value,
};

/// A processor's output as Python objects.
pub(crate) fn json_to_python(py: Python<'_>, value: &serde_json::Value) -> PyResult<Py<PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else {
                n.as_f64()
                    .unwrap_or(f64::NAN)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_python(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, json_to_python(py, v)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// A Python value as a `serde_json` value (a registry document).
fn json_of_python(value: &Bound<'_, PyAny>, key: &str) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    let value = convert::read_value(value, key)?;
    Ok(match value.json()? {
        JsonValue::Null => Value::Null,
        other => convert_json(other),
    })
}

/// A processor JSON value as a `serde_json` value.
fn convert_json(value: JsonValue<'_>) -> serde_json::Value {
    use serde_json::Value;
    match value {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(b),
        JsonValue::Number(JsonNumber::PosInt(u)) => Value::from(u),
        JsonValue::Number(JsonNumber::NegInt(i)) => Value::from(i),
        JsonValue::Number(JsonNumber::Float(f)) => Value::from(f),
        JsonValue::String(s) => Value::String(s.into_owned()),
        JsonValue::Array(items) => Value::Array(items.into_iter().map(convert_json).collect()),
        JsonValue::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.into_owned(), convert_json(v)))
                .collect(),
        ),
    }
}

/// The `builders` argument: None (the defaults), names, or a comma-separated str.
fn builders_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if value.is_instance_of::<PyString>() {
        let list: String = value.extract()?;
        return Ok(Some(
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        ));
    }
    let mut out = Vec::new();
    let iter = value.try_iter().map_err(|_| {
        processing_error(format!(
            "builders must be None, a list of builder names or a comma-separated str, found {}",
            type_name(value)
        ))
    })?;
    for item in iter {
        let item = item?;
        let name: String = item.extract().map_err(|_| {
            processing_error(format!(
                "builders: {} is not a builder name; accepted: legacy, comprehensive, time, labeled",
                item.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        out.push(name.trim().to_owned());
    }
    Ok(Some(out))
}

/// The `attributes` argument: None (built in), a registry document or a file's path.
fn registry_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<AttributeRegistry> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(AttributeRegistry::default());
    };
    if value.is_instance_of::<PyDict>() {
        let doc = json_of_python(value, "attributes")?;
        return AttributeRegistry::from_document(&doc)
            .map_err(|e| processing_error(format!("attributes: {e}")));
    }
    let path: std::path::PathBuf = value.extract().map_err(|_| {
        processing_error(format!(
            "attributes must be None, a registry document (dict) or the path of a .toml or \
             .json registry file, found {}",
            type_name(value)
        ))
    })?;
    AttributeRegistry::from_path(&path).map_err(|e| processing_error(format!("attributes: {e}")))
}

/// Turns usage records into metrics in the caller's dict (see `docs/python.md`).
///
/// Usable from any thread: its state (the Rust processor, whose builders keep
/// caches from record to record, and the map of the dict `process_many` last
/// wrote) is behind a lock, held only while Rust code runs, never while
/// Python code does.
#[pyclass(frozen, module = "nixl_telemetry._native")]
pub struct MetricProcessor {
    state: Mutex<State>,
    builder_names: Vec<String>,
}

/// What a processor keeps from call to call.
struct State {
    processor: RustProcessor,
    /// The dict `process_many` last wrote, as it left it.
    kept: Option<KeptMap>,
}

/// The map of the dict `process_many` last wrote, with the dict and a shallow
/// copy of it as it was left: while the dict still holds the very same keys
/// and values in the same order, the next batch starts from the map (no
/// conversion, and the builders' caches, which belong to the map, stay warm).
struct KeptMap {
    dict: Py<PyDict>,
    copy: Py<PyDict>,
    loaded: Loaded,
}

impl KeptMap {
    /// Whether `dict` is the dict kept, unchanged since: the same object
    /// holding the same key and value objects in the same order (compared by
    /// identity: no Python code runs meanwhile).
    fn matches(&self, dict: &Bound<'_, PyDict>) -> bool {
        let copy = self.copy.bind(dict.py());
        self.dict.bind(dict.py()).is(dict)
            && dict.len() == copy.len()
            && dict
                .iter()
                .zip(copy.iter())
                .all(|((k, v), (kept_k, kept_v))| k.is(&kept_k) && v.is(&kept_v))
    }
}

impl MetricProcessor {
    /// Runs `f` with the state.
    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut state)
    }

    /// Runs `f` with the Rust processor.
    fn with_processor<R>(&self, f: impl FnOnce(&mut RustProcessor) -> R) -> R {
        self.with_state(|state| f(&mut state.processor))
    }

    /// Applies one record to the dict, touching only the keys it writes: a
    /// first run on an empty map finds them (the built-in builders' keys
    /// depend on the record and its times, never on the values already
    /// there), then the record is applied to a map holding just those keys'
    /// values from the dict. The cost does not grow with the dict.
    fn apply_one(
        &self,
        dict: &Bound<'_, PyDict>,
        record: &Record<'_>,
        context: Context,
        stamp: bool,
    ) -> PyResult<()> {
        let now = context.now.unwrap_or_else(Timestamp::now_local);
        let old_now = match context.old_now {
            Some(t) => t,
            None => match last_updated_of(dict)? {
                Some(text) if !text.is_empty() => Timestamp::parse_iso(&text)
                    .map_err(|e| processing_error(format!("metrics key `last_updated`: {e}")))?,
                _ => now,
            },
        };
        let context = Context {
            now: Some(now),
            old_now: Some(old_now),
        };
        let mut written = Metrics::new();
        self.with_processor(|p| p.process(&mut written, record, &context))
            .map_err(|e| processing_error(e.to_string()))?;
        let mut keys: Vec<(usize, &str)> = written.keys_from_slot(0).collect();
        keys.sort_unstable_by_key(|&(slot, _)| slot);
        let mut loaded = load_keys(dict, keys.into_iter().map(|(_, key)| key))?;
        let before = loaded.metrics.values_by_slot().to_vec();
        self.with_processor(|p| p.process(&mut loaded.metrics, record, &context))
            .map_err(|e| processing_error(e.to_string()))?;
        write_back(dict, &before, &mut loaded, stamp)
    }
}

#[pymethods]
impl MetricProcessor {
    #[new]
    #[pyo3(signature = (builders=None, attributes=None))]
    fn new(
        builders: Option<&Bound<'_, PyAny>>,
        attributes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let registry = registry_of(attributes)?;
        let err =
            |e: nixl_telemetry_processor::BindError| processing_error(format!("builders: {e}"));
        let inner = match builders_of(builders)? {
            None => RustProcessor::with_registry(registry).map_err(err)?,
            Some(names) => {
                let builders = names
                    .iter()
                    .map(|n| builder_by_name(n))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                RustProcessor::with_builders(registry, builders).map_err(err)?
            }
        };
        let builder_names = inner
            .builder_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Ok(MetricProcessor {
            state: Mutex::new(State {
                processor: inner,
                kept: None,
            }),
            builder_names,
        })
    }

    /// The builders' names, in run order.
    #[getter]
    fn builder_names(&self) -> Vec<String> {
        self.builder_names.clone()
    }

    /// Applies one record to `metrics` (updated in place and returned), wholly or not at all.
    #[pyo3(signature = (metrics, record, context=None))]
    fn process<'py>(
        &self,
        metrics: Bound<'py, PyDict>,
        record: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let context = context_of(context)?;
        let record = read_record(record)?;
        self.apply_one(&metrics, &record.record()?, context, true)?;
        Ok(metrics)
    }

    /// Applies records in order, all or none: each item is a record dict (taking
    /// `context`), or a pair `(record, context)` whose context is a dict or a
    /// `datetime` (its `now`). Returns `metrics`, updated in place.
    #[pyo3(signature = (metrics, records, context=None))]
    fn process_many<'py>(
        &self,
        py: Python<'py>,
        metrics: Bound<'py, PyDict>,
        records: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let shared = context_of(context)?;
        let mut raw = Vec::new();
        for (index, item) in records.try_iter()?.enumerate() {
            let item = item.map_err(|e| error_in(py, &format!("record #{index}"), e))?;
            raw.push(
                batch_item(&item, shared)
                    .map_err(|e| error_in(py, &format!("record #{index}"), e))?,
            );
        }
        let batch = raw
            .iter()
            .map(|(record, context)| Ok((record.record()?, *context)))
            .collect::<PyResult<Vec<_>>>()?;
        // The kept map is taken out: on any error below it is dropped, and
        // the next batch reads the dict anew.
        let mut loaded = match self.with_state(|state| state.kept.take()) {
            Some(kept) if kept.matches(&metrics) => kept.loaded,
            _ => load_all(&metrics)?,
        };
        let before = loaded.metrics.values_by_slot().to_vec();
        // The records are Rust data now: other threads run meanwhile.
        py.detach(|| {
            self.with_processor(|p| {
                for (index, (record, context)) in batch.iter().enumerate() {
                    p.process(&mut loaded.metrics, record, context)
                        .map_err(|e| format!("record #{index}: {e}"))?;
                }
                Ok::<(), String>(())
            })
        })
        .map_err(processing_error)?;
        write_back(&metrics, &before, &mut loaded, true)?;
        let kept = KeptMap {
            dict: metrics.clone().unbind(),
            copy: metrics.copy()?.unbind(),
            loaded,
        };
        self.with_state(|state| state.kept = Some(kept));
        Ok(metrics)
    }

    /// The metrics as Prometheus text exposition.
    fn to_prometheus(&self, metrics: &Bound<'_, PyDict>) -> PyResult<String> {
        let loaded = load_all(metrics)?;
        self.with_processor(|p| {
            render_prometheus(&loaded.metrics, |family| p.metric_kind(family))
                .map_err(|e| processing_error(e.to_string()))
        })
    }

    /// For `nixl_telemetry.tao`: applies the built-in builders without setting
    /// `last_updated`; returns the normalised record when `want_data`.
    #[pyo3(signature = (metrics, record, now, old_now, want_data))]
    fn _apply<'py>(
        &self,
        py: Python<'py>,
        metrics: Bound<'py, PyDict>,
        record: &Bound<'py, PyAny>,
        now: &Bound<'py, PyAny>,
        old_now: &Bound<'py, PyAny>,
        want_data: bool,
    ) -> PyResult<Py<PyAny>> {
        let context = Context {
            now: Some(timestamp_of(now, "context['now']")?),
            old_now: Some(timestamp_of(old_now, "context['old_now']")?),
        };
        let record = read_record(record)?;
        let record = record.record()?;
        self.apply_one(&metrics, &record, context, false)?;
        if !want_data {
            return Ok(py.None());
        }
        let data = self
            .with_processor(|p| {
                nixl_telemetry_processor::extract_telemetry_data(p.registry(), &record)
                    .map(|data| data.to_json())
            })
            .map_err(|e| processing_error(e.to_string()))?;
        json_to_python(py, &data)
    }

    fn __repr__(&self) -> String {
        format!("MetricProcessor(builders={:?})", self.builder_names)
    }

    /// The dict kept (and its copy) for the garbage collector: a cycle through
    /// them (a value that refers to the processor) is collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(state) = self.state.try_lock() {
            if let Some(kept) = &state.kept {
                visit.call(&kept.dict)?;
                visit.call(&kept.copy)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        if let Ok(mut state) = self.state.try_lock() {
            state.kept = None;
        }
    }
}
