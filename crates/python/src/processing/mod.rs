//! Processing from Python: `MetricProcessor` over the caller's dict, and the
//! reference's helper functions.
//!
//! A call converts the caller's dict into the processor's map, applies the
//! record(s) in Rust, and writes back only the keys whose values changed. Any
//! error leaves the dict exactly as it was.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use nixl_telemetry_processor::{
    builder_by_name, extract_gpu_type as rust_gpu_type, extract_primary_gpu as rust_primary_gpu,
    render_prometheus, sanitize_str, AttributeRegistry, Context, JsonNumber, JsonValue,
    MetricProcessor as RustProcessor, Metrics, Record, Timestamp, LAST_UPDATED,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::borrowed_batch::{read_batch, GiveUp, Spare};
use crate::datetime_state::naive_state;
use crate::dict_entries::same_entries;
use crate::errors::ProcessingError;
use crate::text::TextArena;

fn processing_error(message: impl Into<String>) -> PyErr {
    ProcessingError::new_err(message.into())
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// How deeply lists and dicts may nest in a record value (as deep as the
/// processor's JSON-lines input allows): deeper values, a list or dict that
/// contains itself among them, are refused instead of exhausting the stack.
pub const MAX_NESTING: usize = 128;

/// Converts a Python value into a JSON value the processor reads: None, bool,
/// int, float, str, list/tuple and dict (str keys) are accepted, nested at most
/// [`MAX_NESTING`] levels. Strings are borrowed through `arena` (no copy on
/// Python 3.10+).
pub fn to_json<'a, 'py>(
    value: Bound<'py, PyAny>,
    key: &str,
    arena: &'a TextArena<'py>,
) -> PyResult<JsonValue<'a>> {
    to_json_within(
        value,
        key,
        arena,
        Nesting {
            levels: MAX_NESTING,
            outer_key: key,
        },
    )
}

/// How many more levels of lists and dicts a value may open, and the record
/// key it is under (for the error).
#[derive(Clone, Copy)]
struct Nesting<'k> {
    levels: usize,
    outer_key: &'k str,
}

impl Nesting<'_> {
    /// The nesting inside one more list or dict, or the error when no level is left.
    fn one_level_in(self) -> PyResult<Self> {
        match self.levels.checked_sub(1) {
            Some(levels) => Ok(Nesting { levels, ..self }),
            None => Err(processing_error(format!(
                "key `{}`: lists and dicts nested more than {MAX_NESTING} levels deep \
                 (a list or dict that contains itself?); accepted: at most {MAX_NESTING} levels",
                self.outer_key
            ))),
        }
    }
}

/// [`to_json`] within `nesting`.
fn to_json_within<'a, 'py>(
    value: Bound<'py, PyAny>,
    key: &str,
    arena: &'a TextArena<'py>,
    nesting: Nesting<'_>,
) -> PyResult<JsonValue<'a>> {
    // The exact types of JSON-like data first: a pointer comparison each.
    if value.is_none() {
        return Ok(JsonValue::Null);
    }
    let value = match value.cast_into_exact::<PyString>() {
        Ok(text) => return Ok(JsonValue::String(arena.text_of(text)?)),
        Err(e) => e.into_inner(),
    };
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(JsonValue::Bool(b.is_true()));
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        return json_array(list.iter(), list.len(), key, arena, nesting);
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(u) = value.extract::<u64>() {
            return Ok(JsonValue::Number(JsonNumber::PosInt(u)));
        }
        if let Ok(i) = value.extract::<i64>() {
            return Ok(JsonValue::Number(JsonNumber::NegInt(i)));
        }
        // Outside the 64-bit range: as a JSON reader reads it, the nearest double.
        let f: f64 = value.call_method0("__float__")?.extract()?;
        return Ok(JsonValue::Number(JsonNumber::Float(f)));
    }
    if value.is_instance_of::<PyFloat>() {
        let f: f64 = value.extract()?;
        if !f.is_finite() {
            return Err(processing_error(format!(
                "key `{key}`: {f} is not a JSON number; accepted: a finite float"
            )));
        }
        return Ok(JsonValue::Number(JsonNumber::Float(f)));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(JsonValue::String(arena.text(text)?));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return json_array(list.iter(), list.len(), key, arena, nesting);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return json_array(tuple.iter(), tuple.len(), key, arena, nesting);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let nesting = nesting.one_level_in()?;
        let mut fields = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(processing_error(format!(
                    "key `{key}`: an object key is {}; accepted: str keys",
                    type_name(&k)
                )));
            };
            let k = arena.text(k)?;
            let v = to_json_within(v, &k, arena, nesting)?;
            fields.push((k, v));
        }
        return Ok(JsonValue::Object(fields));
    }
    Err(processing_error(format!(
        "key `{key}`: expected a JSON value (None, bool, int, float, str, list or dict), found {}",
        type_name(&value)
    )))
}

/// A list's or tuple's items as a JSON array.
fn json_array<'a, 'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    key: &str,
    arena: &'a TextArena<'py>,
    nesting: Nesting<'_>,
) -> PyResult<JsonValue<'a>> {
    let nesting = nesting.one_level_in()?;
    let mut out = Vec::with_capacity(len);
    for item in items {
        out.push(to_json_within(item, key, arena, nesting)?);
    }
    Ok(JsonValue::Array(out))
}

/// A record: a dict whose str keys become members (other keys cannot name an
/// attribute and are ignored, as the reference ignores them). Its strings are
/// borrowed through `arena`.
fn record_from<'a, 'py>(
    value: &Bound<'py, PyAny>,
    arena: &'a TextArena<'py>,
) -> PyResult<Record<'a>> {
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(processing_error(format!(
            "the record must be a dict, found {}",
            type_name(value)
        )));
    };
    let mut fields = Vec::with_capacity(dict.len());
    for (k, v) in dict.iter() {
        let Ok(k) = k.cast_into::<PyString>() else {
            continue;
        };
        let k = arena.text_of(k)?;
        let v = to_json(v, &k, arena)?;
        fields.push((k, v));
    }
    Ok(Record::from_fields(fields))
}

fn from_json(py: Python<'_>, value: &serde_json::Value) -> PyResult<Py<PyAny>> {
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
                list.append(from_json(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, from_json(py, v)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

fn json_of_python(value: &Bound<'_, PyAny>, key: &str) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    let arena = TextArena::new();
    Ok(match to_json(value.clone(), key, &arena)? {
        JsonValue::Null => Value::Null,
        other => convert_json(other),
    })
}

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

static DATETIME_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The type `datetime.datetime`.
fn datetime_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DATETIME_TYPE
        .get_or_try_init(py, || {
            py.import("datetime")?
                .getattr("datetime")?
                .cast_into::<PyType>()
                .map(Bound::unbind)
                .map_err(PyErr::from)
        })
        .map(|t| t.bind(py))
}

/// A `datetime.datetime` as a processor timestamp (through its `isoformat()`).
fn timestamp_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Timestamp> {
    let py = value.py();
    let datetime = datetime_type(py)?;
    if !value.is_instance(datetime)? {
        return Err(processing_error(format!(
            "{what} must be a datetime.datetime, found {}",
            type_name(value)
        )));
    }
    // A naive `datetime` itself (the usual case): its fields read in place,
    // without a call (see `datetime_state`).
    if let Some(t) = naive_state(value, datetime).and_then(timestamp_from_state) {
        return Ok(t);
    }
    // A naive datetime: its fields, without formatting and parsing.
    if value.getattr(intern!(py, "tzinfo"))?.is_none() {
        let field =
            |name: &Bound<'_, PyString>| -> PyResult<u32> { value.getattr(name)?.extract() };
        let year: i32 = value.getattr(intern!(py, "year"))?.extract()?;
        let date = chrono::NaiveDate::from_ymd_opt(
            year,
            field(intern!(py, "month"))?,
            field(intern!(py, "day"))?,
        );
        let time = chrono::NaiveTime::from_hms_micro_opt(
            field(intern!(py, "hour"))?,
            field(intern!(py, "minute"))?,
            field(intern!(py, "second"))?,
            field(intern!(py, "microsecond"))?,
        );
        if let (Some(date), Some(time)) = (date, time) {
            return Ok(Timestamp::from_naive(date.and_time(time)));
        }
    }
    let text: String = value.call_method0("isoformat")?.extract()?;
    Timestamp::parse_iso(&text).map_err(|e| processing_error(format!("{what}: {e}")))
}

/// A naive timestamp from a datetime's ten state bytes (year high and low,
/// month, day, hour, minute, second, microsecond in three); `None` if they
/// name no valid date and time.
pub(crate) fn timestamp_from_state(state: [u8; 10]) -> Option<Timestamp> {
    let [y_hi, y_lo, month, day, hour, minute, second, u0, u1, u2] = state;
    let date = chrono::NaiveDate::from_ymd_opt(
        i32::from(y_hi) * 256 + i32::from(y_lo),
        u32::from(month),
        u32::from(day),
    )?;
    let micro = (u32::from(u0) << 16) | (u32::from(u1) << 8) | u32::from(u2);
    let time = chrono::NaiveTime::from_hms_micro_opt(
        u32::from(hour),
        u32::from(minute),
        u32::from(second),
        micro,
    )?;
    Some(Timestamp::from_naive(date.and_time(time)))
}

/// The context dict (or None): `now` and `old_now`, both optional datetimes.
fn context_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Context> {
    let mut context = Context::default();
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(context);
    };
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(processing_error(format!(
            "context must be a dict (with optional `now` and `old_now` datetimes) or None, found {}",
            type_name(value)
        )));
    };
    if let Some(now) = dict.get_item("now")? {
        context.now = Some(timestamp_of(&now, "context['now']")?);
    }
    if let Some(old) = dict.get_item("old_now")? {
        context.old_now = Some(timestamp_of(&old, "context['old_now']")?);
    }
    Ok(context)
}

/// The caller's dict as the processor's map. Keys holding something other than
/// an int (values a Python builder may keep there) are left out and remembered:
/// a built-in builder writing one of them is an error.
struct Loaded {
    metrics: Metrics,
    foreign: HashSet<String>,
    /// The key object of each of the map's slots (`Metrics::values_by_slot`):
    /// the dict's own for keys read from it, one made once for a key a batch
    /// created.
    keys: Vec<Py<PyString>>,
}

fn load_metrics(dict: &Bound<'_, PyDict>) -> PyResult<Loaded> {
    let mut metrics = Metrics::new();
    let mut foreign = HashSet::new();
    let mut keys = Vec::new();
    for (k, v) in dict.iter() {
        let Ok(key) = k.extract::<String>() else {
            continue;
        };
        if key == LAST_UPDATED {
            if v.is_none() {
                continue;
            }
            let text: String = v.extract().map_err(|_| {
                processing_error(format!(
                    "metrics key `last_updated`: expected a str (an ISO 8601 date-time), found {}",
                    type_name(&v)
                ))
            })?;
            metrics.set_last_updated(Some(text));
            continue;
        }
        if v.is_instance_of::<PyInt>() {
            match v.extract::<i64>() {
                Ok(n) => {
                    metrics
                        .insert(&key, n)
                        .map_err(|e| processing_error(format!("metrics key `{key}`: {e}")))?;
                    // Dict keys are distinct: each insert made a new slot.
                    keys.push(k.cast_into::<PyString>()?.unbind());
                }
                Err(_) => {
                    return Err(processing_error(format!(
                        "metrics key `{key}`: expected an int in the signed 64-bit range, found {}",
                        v.repr()?
                    )))
                }
            }
        } else {
            foreign.insert(key);
        }
    }
    Ok(Loaded {
        metrics,
        foreign,
        keys,
    })
}

/// Writes the values that differ from `before` into the dict; `last_updated`
/// too when `stamp` is set.
fn store_metrics(
    dict: &Bound<'_, PyDict>,
    before: &Metrics,
    after: &Metrics,
    foreign: &HashSet<String>,
    stamp: bool,
) -> PyResult<()> {
    let mut changed = Vec::new();
    for (key, value) in after.iter() {
        if before.get(key) != Some(value) {
            if foreign.contains(key) {
                return Err(processing_error(format!(
                    "metrics key `{key}`: a built-in builder writes it, but the dict holds a \
                     non-int value there; expected an int"
                )));
            }
            changed.push((key, value));
        }
    }
    for (key, value) in changed {
        dict.set_item(key, value)?;
    }
    if stamp {
        if let Some(text) = after.last_updated() {
            dict.set_item(LAST_UPDATED, text.as_ref())?;
        }
    }
    Ok(())
}

/// Writes a batch's changes into the dict: the slots whose value differs from
/// `before` (the values by slot when the batch began), the slots the batch
/// created, and `last_updated`. Nothing is written if a created key holds a
/// non-int value in the dict.
fn store_batch(dict: &Bound<'_, PyDict>, before: &[i64], loaded: &mut Loaded) -> PyResult<()> {
    let py = dict.py();
    let after = loaded.metrics.values_by_slot();
    if after.len() > loaded.keys.len() {
        let mut created: Vec<(usize, &str)> =
            loaded.metrics.keys_from_slot(loaded.keys.len()).collect();
        created.sort_unstable_by_key(|&(slot, _)| slot);
        if let Some((_, key)) = created.iter().find(|(_, k)| loaded.foreign.contains(*k)) {
            return Err(processing_error(format!(
                "metrics key `{key}`: a built-in builder writes it, but the dict holds a \
                 non-int value there; expected an int"
            )));
        }
        for (slot, key) in created {
            if slot != loaded.keys.len() {
                return Err(processing_error(format!(
                    "internal error: metrics slot {slot} of `{key}` is not the next one \
                     ({}); the dict is unchanged",
                    loaded.keys.len()
                )));
            }
            loaded.keys.push(PyString::new(py, key).unbind());
        }
    }
    for (slot, (&value, key)) in after.iter().zip(&loaded.keys).enumerate() {
        if before.get(slot) != Some(&value) {
            dict.set_item(key.bind(py), value)?;
        }
    }
    if let Some(text) = loaded.metrics.last_updated() {
        dict.set_item(intern!(py, "last_updated"), text.as_ref())?;
    }
    Ok(())
}

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

/// The map of the dict the processor last wrote, and a shallow copy of that dict
/// as it was left: while the dict still equals the copy, the map is reused (no
/// conversion, and the builders' slot caches stay warm).
struct MapCache {
    dict: Py<PyDict>,
    snapshot: Py<PyDict>,
    loaded: Loaded,
}

/// What one Python `MetricProcessor` keeps on one thread: the Rust processor
/// (its builders are not `Send`) and the map cache.
struct ThreadState {
    inner: RustProcessor,
    cache: Option<MapCache>,
    /// Vectors a batch read with borrowed references reuses.
    spare: Spare,
}

thread_local! {
    /// Each thread's processors, by the Python object's id.
    static STATES: RefCell<HashMap<u64, ThreadState>> = RefCell::new(HashMap::new());
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The configuration a processor is built from (on each thread that uses it).
#[derive(Clone)]
struct Recipe {
    registry: AttributeRegistry,
    /// `None`: the default builders.
    builders: Option<Vec<String>>,
}

impl Recipe {
    fn build(&self) -> PyResult<RustProcessor> {
        let err =
            |e: nixl_telemetry_processor::BindError| processing_error(format!("builders: {e}"));
        match &self.builders {
            None => RustProcessor::with_registry(self.registry.clone()).map_err(err),
            Some(names) => {
                let builders = names
                    .iter()
                    .map(|n| builder_by_name(n))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                RustProcessor::with_builders(self.registry.clone(), builders).map_err(err)
            }
        }
    }
}

/// Turns usage records into metrics in the caller's dict (see `docs/python.md`).
/// Usable from any thread: each thread that uses it gets its own Rust processor
/// (built from the same configuration; they share no state but their results).
#[pyclass(frozen, module = "nixl_telemetry._native")]
pub struct MetricProcessor {
    id: u64,
    recipe: Recipe,
    builder_names: Vec<String>,
}

impl MetricProcessor {
    /// Runs `f` with this thread's state, taken out of the thread's table
    /// meanwhile (a re-entrant call from Python code `f` runs gets a new one).
    fn with_state<R>(&self, f: impl FnOnce(&mut ThreadState) -> PyResult<R>) -> PyResult<R> {
        let taken = STATES.with(|states| states.borrow_mut().remove(&self.id));
        let mut state = match taken {
            Some(state) => state,
            None => ThreadState {
                inner: self.recipe.build()?,
                cache: None,
                spare: Spare::default(),
            },
        };
        let result = f(&mut state);
        STATES.with(|states| states.borrow_mut().insert(self.id, state));
        result
    }
}

impl Drop for MetricProcessor {
    fn drop(&mut self) {
        // This thread's state; other threads' go when those threads end.
        let _ = STATES.try_with(|states| {
            if let Ok(mut states) = states.try_borrow_mut() {
                states.remove(&self.id);
            }
        });
    }
}

impl MapCache {
    /// Whether `dict` is the dict last written and unchanged since: the same
    /// object, holding the same entries as the copy (identical ones, checked
    /// without hashing; else compared with `==`).
    fn matches(&self, dict: &Bound<'_, PyDict>) -> PyResult<bool> {
        let py = dict.py();
        if !self.dict.bind(py).is(dict) {
            return Ok(false);
        }
        let snapshot = self.snapshot.bind(py);
        Ok(same_entries(dict, snapshot) || dict.as_any().eq(snapshot)?)
    }
}

impl ThreadState {
    /// The dict as the processor's map: the cached one when the dict is the one
    /// last written and unchanged since, else read anew.
    fn take_map(&mut self, dict: &Bound<'_, PyDict>) -> PyResult<Loaded> {
        if let Some(cache) = self.cache.take() {
            if cache.matches(dict)? {
                return Ok(cache.loaded);
            }
        }
        load_metrics(dict)
    }

    /// Remembers the map of `dict` after a successful write-back.
    fn keep_map(&mut self, dict: &Bound<'_, PyDict>, loaded: Loaded) -> PyResult<()> {
        let snapshot = dict.copy()?;
        self.cache = Some(MapCache {
            dict: dict.clone().unbind(),
            snapshot: snapshot.unbind(),
            loaded,
        });
        Ok(())
    }

    /// Applies one record, touching only the keys it writes: a first run on an
    /// empty map finds them (the built-in builders' keys depend on the record
    /// and its times, never on the values already there), then the record is
    /// applied to a map holding just those keys' values from the dict. The cost
    /// does not grow with the dict.
    fn apply_single(
        &mut self,
        dict: &Bound<'_, PyDict>,
        record: &Record<'_>,
        context: Context,
        stamp: bool,
    ) -> PyResult<()> {
        let last_updated = match dict.get_item(LAST_UPDATED)? {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => Some(v.extract::<String>().map_err(|_| {
                processing_error(format!(
                    "metrics key `last_updated`: expected a str (an ISO 8601 date-time), found {}",
                    type_name(&v)
                ))
            })?),
        };
        let now = context.now.unwrap_or_else(Timestamp::now_local);
        let old_now = match (context.old_now, last_updated.as_deref()) {
            (Some(t), _) => t,
            (None, Some(text)) if !text.is_empty() => Timestamp::parse_iso(text)
                .map_err(|e| processing_error(format!("metrics key `last_updated`: {e}")))?,
            _ => now,
        };
        let context = Context {
            now: Some(now),
            old_now: Some(old_now),
        };
        let mut scratch = Metrics::new();
        self.inner
            .process(&mut scratch, record, &context)
            .map_err(|e| processing_error(e.to_string()))?;
        let mut map = Metrics::new();
        let mut foreign = HashSet::new();
        for (key, _) in scratch.iter() {
            let Some(value) = dict.get_item(key)? else {
                continue;
            };
            if value.is_instance_of::<PyInt>() {
                let n = value.extract::<i64>().map_err(|_| {
                    processing_error(format!(
                        "metrics key `{key}`: expected an int in the signed 64-bit range, found {}",
                        value.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })?;
                map.insert(key, n)
                    .map_err(|e| processing_error(format!("metrics key `{key}`: {e}")))?;
            } else {
                foreign.insert(key.to_owned());
            }
        }
        map.set_last_updated(last_updated);
        let before = map.clone();
        self.inner
            .process(&mut map, record, &context)
            .map_err(|e| processing_error(e.to_string()))?;
        store_metrics(dict, &before, &map, &foreign, stamp)
    }

    /// Applies records to the map in order; the error names the record.
    fn process_all(
        &mut self,
        metrics: &mut Metrics,
        batch: &[(Record<'_>, Context)],
    ) -> Result<(), String> {
        for (index, (record, context)) in batch.iter().enumerate() {
            self.inner
                .process(metrics, record, context)
                .map_err(|e| format!("record #{index}: {e}"))?;
        }
        Ok(())
    }

    /// Applies records to the dict, all or none.
    fn apply_batch(
        &mut self,
        metrics: &Bound<'_, PyDict>,
        batch: &[(Record<'_>, Context)],
    ) -> PyResult<()> {
        let mut loaded = self.take_map(metrics)?;
        let before = loaded.metrics.values_by_slot().to_vec();
        // On an error the map is dropped: the next call reads the dict anew.
        self.process_all(&mut loaded.metrics, batch)
            .map_err(processing_error)?;
        // On an error here too the map is dropped, and the dict is unchanged.
        store_batch(metrics, &before, &mut loaded)?;
        self.keep_map(metrics, loaded)
    }

    /// [`ThreadState::apply_batch`] over a list read with borrowed references
    /// (`borrowed_batch`): the same result, without a reference taken per
    /// object read. `Ok(false)` when that reader does not take this input (or
    /// the dict cannot be read as a map): nothing was done, and the caller
    /// applies the batch the general way.
    fn apply_borrowed(
        &mut self,
        metrics: &Bound<'_, PyDict>,
        records: &Bound<'_, PyList>,
        shared: Context,
    ) -> PyResult<bool> {
        let datetime = datetime_type(metrics.py())?;
        // What may run Python code comes first, before anything is borrowed:
        // the map (comparing the dict with the kept copy may call a foreign
        // value's `__eq__`).
        let (mut loaded, kept) = match self.cache.take() {
            Some(cache) => match cache.matches(metrics) {
                Ok(true) => (cache.loaded, Some((cache.dict, cache.snapshot))),
                // An error is raised by the general way, in its order.
                Ok(false) | Err(_) => match load_metrics(metrics) {
                    Ok(loaded) => (loaded, None),
                    Err(_) => return Ok(false),
                },
            },
            None => match load_metrics(metrics) {
                Ok(loaded) => (loaded, None),
                Err(_) => return Ok(false),
            },
        };
        // SAFETY: from here until `batch` is given back to `spare` (which
        // empties it) only Rust code runs: the processor over the batch, no
        // call into Python (errors are kept as text), and nothing that
        // releases the GIL.
        let batch = match unsafe { read_batch(records, shared, datetime, &mut self.spare) } {
            Ok(batch) => batch,
            Err(GiveUp) => {
                if let Some((dict, snapshot)) = kept {
                    // No Python code ran: the dict still matches the copy.
                    self.cache = Some(MapCache {
                        dict,
                        snapshot,
                        loaded,
                    });
                }
                return Ok(false);
            }
        };
        let before = loaded.metrics.values_by_slot().to_vec();
        let processed = self.process_all(&mut loaded.metrics, &batch);
        self.spare.recycle(batch);
        // From here Python code may run again (writing back; the old copy freed
        // last, with `kept`).
        processed.map_err(processing_error)?;
        store_batch(metrics, &before, &mut loaded)?;
        self.keep_map(metrics, loaded)?;
        drop(kept);
        Ok(true)
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
        let recipe = Recipe {
            registry: registry_of(attributes)?,
            builders: builders_of(builders)?,
        };
        // Built once here: a bad configuration fails now, on any thread.
        let inner = recipe.build()?;
        let builder_names = inner
            .builder_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let processor = MetricProcessor {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            recipe,
            builder_names,
        };
        STATES.with(|states| {
            states.borrow_mut().insert(
                processor.id,
                ThreadState {
                    inner,
                    cache: None,
                    spare: Spare::default(),
                },
            )
        });
        Ok(processor)
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
        let arena = TextArena::new();
        let record = record_from(record, &arena)?;
        self.with_state(|state| state.apply_single(&metrics, &record, context, true))?;
        Ok(metrics)
    }

    /// Applies records in order, all or none: each item is a record dict (taking
    /// `context`), or a pair `(record, context)` whose context is a dict or a
    /// `datetime` (its `now`). Returns `metrics`, updated in place.
    #[pyo3(signature = (metrics, records, context=None))]
    fn process_many<'py>(
        &self,
        metrics: Bound<'py, PyDict>,
        records: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let shared = context_of(context)?;
        if let Ok(list) = records.cast_exact::<PyList>() {
            if self.with_state(|state| state.apply_borrowed(&metrics, list, shared))? {
                return Ok(metrics);
            }
        }
        let arena = TextArena::new();
        let mut batch = Vec::new();
        for (index, item) in records.try_iter()?.enumerate() {
            let item = item?;
            let at = |e: PyErr| {
                let py = item.py();
                processing_error(format!("record #{index}: {}", e.value(py)))
            };
            if let Ok(pair) = item.cast::<PyTuple>() {
                if pair.len() != 2 {
                    return Err(processing_error(format!(
                        "record #{index}: expected a dict or a (record, context) pair, found a \
                         tuple of {}",
                        pair.len()
                    )));
                }
                let record = record_from(&pair.get_item(0)?, &arena).map_err(at)?;
                let ctx = pair.get_item(1)?;
                let ctx = if ctx.is_instance_of::<PyDict>() || ctx.is_none() {
                    context_of(Some(&ctx)).map_err(at)?
                } else {
                    Context {
                        now: Some(timestamp_of(&ctx, "context").map_err(at)?),
                        old_now: None,
                    }
                };
                batch.push((record, ctx));
            } else {
                batch.push((record_from(&item, &arena).map_err(at)?, shared));
            }
        }
        self.with_state(|state| state.apply_batch(&metrics, &batch))?;
        Ok(metrics)
    }

    /// The metrics as Prometheus text exposition.
    fn to_prometheus(&self, metrics: &Bound<'_, PyDict>) -> PyResult<String> {
        let Loaded { metrics: map, .. } = load_metrics(metrics)?;
        self.with_state(|state| {
            render_prometheus(&map, |family| state.inner.metric_kind(family))
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
        let record_object = record;
        let context = Context {
            now: Some(timestamp_of(now, "context['now']")?),
            old_now: Some(timestamp_of(old_now, "context['old_now']")?),
        };
        let arena = TextArena::new();
        let record = record_from(record, &arena)?;
        self.with_state(|state| state.apply_single(&metrics, &record, context, false))?;
        if !want_data {
            return Ok(py.None());
        }
        let record = record_from(record_object, &arena)?;
        let data = nixl_telemetry_processor::extract_telemetry_data(&self.recipe.registry, &record)
            .map_err(|e| processing_error(e.to_string()))?;
        from_json(py, &data.to_json())
    }

    fn __repr__(&self) -> String {
        format!("MetricProcessor(builders={:?})", self.builder_names)
    }
}

/// Normalises a raw record against the built-in registry (the reference's
/// `extract_telemetry_data`; values that do not fit their type are an error).
#[pyfunction]
pub fn extract_telemetry_data(py: Python<'_>, raw_data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let arena = TextArena::new();
    let record = record_from(raw_data, &arena)?;
    let registry = AttributeRegistry::default();
    let data = nixl_telemetry_processor::extract_telemetry_data(&registry, &record)
        .map_err(|e| processing_error(e.to_string()))?;
    from_json(py, &data.to_json())
}

/// `str(value)`, each code point not an ASCII letter or digit replaced by `_`,
/// then lower (or upper) case.
#[pyfunction]
#[pyo3(signature = (value, uppercase=false))]
pub fn sanitize_field_value(value: &Bound<'_, PyAny>, uppercase: bool) -> PyResult<String> {
    let text: String = value.str()?.extract()?;
    Ok(sanitize_str(&text, uppercase).into_owned())
}

/// `<count>_<NAME>_<n>_…`: the number of GPUs, then each distinct upper-case
/// sanitised name with its count, in code-point order.
#[pyfunction]
pub fn create_gpu_identifier(gpu_list: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut names = Vec::new();
    for item in gpu_list.try_iter()? {
        names.push(item?.str()?.extract::<String>()?);
    }
    Ok(nixl_telemetry_processor::create_gpu_identifier(&names))
}

/// The GPU type the labeled builder derives from a GPU name.
#[pyfunction]
pub fn extract_gpu_type(gpu_name: &str) -> String {
    rust_gpu_type(gpu_name)
}

/// The primary GPU type of a job's GPU list.
#[pyfunction]
pub fn extract_primary_gpu(gpus: Vec<String>) -> String {
    rust_primary_gpu(&gpus)
}
