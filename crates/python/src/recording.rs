//! Recording from Python: `Telemetry` and its `EventHandle`.

use std::path::PathBuf;
use std::sync::RwLock;
use std::time::Duration;

use nixl_telemetry::config::{
    check_buffer_size, check_plugin_name, check_run_interval, parse_ring_version,
};
use nixl_telemetry::filter::MetricFilter;
use nixl_telemetry::{
    Category, ConfigError, Direction, EventHandle as RustHandle, ExporterChoice,
    Telemetry as RustTelemetry, TelemetryConfig, TelemetryError as RustError, TelemetryStats,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::TelemetryError;
use nixl_telemetry::fork;

/// The keyword settings `Telemetry(agent, **settings)` accepts.
const SETTINGS: &str = "enabled, buffer_size, run_interval_ms, dir, exporter, output_path, \
                        plugin_dirs, enabled_metrics, ring_version";

fn telemetry_error(err: impl std::fmt::Display) -> PyErr {
    TelemetryError::new_err(err.to_string())
}

fn setting_error(name: &str, value: &Bound<'_, PyAny>, accepted: &str) -> PyErr {
    let shown = value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".to_owned());
    TelemetryError::new_err(format!(
        "setting {name}={shown} is invalid; accepted: {accepted}"
    ))
}

fn text_setting(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return value.extract::<String>();
    }
    // os.PathLike
    if let Ok(path) = value.call_method0("__fspath__") {
        if path.is_instance_of::<PyString>() {
            return path.extract::<String>();
        }
    }
    Err(setting_error(name, value, "a str or an os.PathLike"))
}

fn int_setting(name: &str, value: &Bound<'_, PyAny>, accepted: &str) -> PyResult<u64> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(setting_error(name, value, accepted));
    }
    value
        .extract::<u64>()
        .map_err(|_| setting_error(name, value, accepted))
}

/// The `ring_version` setting: what `NIXL_TELEMETRY_RING_VERSION` accepts, as
/// an int (1–4) or a str (`"2-typed"`, `"v4"`, …).
fn ring_version_setting(
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<&'static nixl_telemetry::ring::layout::RingLayout> {
    // What the core accepts, as it says it (one list of choices for both).
    let accepted = |text: &str| match parse_ring_version(text) {
        Err(ConfigError::InvalidValue { accepted, .. }) => accepted,
        _ => "1, 2, 2-named, 2-typed, 3 or 4".to_owned(),
    };
    let text = if value.is_instance_of::<pyo3::types::PyBool>() {
        None
    } else if value.is_instance_of::<PyString>() {
        Some(value.extract::<String>()?)
    } else if value.is_instance_of::<pyo3::types::PyInt>() {
        Some(value.str()?.to_string())
    } else {
        None
    };
    let Some(text) = text else {
        return Err(setting_error(
            name,
            value,
            &format!("an int or a str: {}", accepted("")),
        ));
    };
    parse_ring_version(&text).map_err(|_| setting_error(name, value, &accepted(&text)))
}

/// Builds a configuration from keyword settings (everything else at its default:
/// enabled, collect only).
fn config_from_settings(settings: Option<&Bound<'_, PyDict>>) -> PyResult<TelemetryConfig> {
    let mut config = TelemetryConfig::default();
    let mut dir: Option<String> = None;
    let mut exporter: Option<String> = None;
    let Some(settings) = settings else {
        return Ok(config);
    };
    for (key, value) in settings.iter() {
        let key: String = key.extract()?;
        match key.as_str() {
            "enabled" => {
                config.enabled = value
                    .extract::<bool>()
                    .map_err(|_| setting_error(&key, &value, "True or False"))?
            }
            "buffer_size" => {
                let accepted = "a power of two from 2 to 67108864 (events)";
                let n = int_setting(&key, &value, accepted)?;
                config.buffer_size =
                    check_buffer_size("buffer_size", usize::try_from(n).unwrap_or(usize::MAX))
                        .map_err(telemetry_error)?;
            }
            "run_interval_ms" => {
                let n = int_setting(&key, &value, "a whole number of milliseconds, at least 1")?;
                config.run_interval =
                    check_run_interval("run_interval_ms", Duration::from_millis(n))
                        .map_err(telemetry_error)?;
            }
            "dir" => dir = Some(text_setting(&key, &value)?),
            "exporter" => {
                if !value.is_none() {
                    exporter = Some(value.extract::<String>().map_err(|_| {
                        setting_error(&key, &value, "buffer, nop, or a plug-in name")
                    })?)
                }
            }
            "output_path" => {
                if !value.is_none() {
                    config.output_path = Some(text_setting(&key, &value)?)
                }
            }
            "plugin_dirs" => {
                let accepted = "a list of directories (str or os.PathLike)";
                if value.is_instance_of::<PyString>() {
                    return Err(setting_error(&key, &value, accepted));
                }
                let mut dirs = Vec::new();
                for item in value
                    .try_iter()
                    .map_err(|_| setting_error(&key, &value, accepted))?
                {
                    dirs.push(PathBuf::from(text_setting(&key, &item?)?));
                }
                config.plugin_dirs = dirs;
            }
            "enabled_metrics" => {
                if !value.is_none() {
                    let globs: String = value.extract().map_err(|_| {
                        setting_error(&key, &value, "comma-separated globs of event names")
                    })?;
                    config.enabled_metrics = MetricFilter::parse(&globs);
                }
            }
            "ring_version" => config.ring_layout = ring_version_setting(&key, &value)?,
            other => {
                return Err(TelemetryError::new_err(format!(
                    "unknown setting {other:?}; accepted: {SETTINGS}"
                )))
            }
        }
    }
    config.exporter = match (exporter.as_deref().map(str::trim), dir) {
        (None, None) => ExporterChoice::None,
        (None, Some(dir)) => ExporterChoice::Buffer { dir: dir.into() },
        (Some("buffer"), dir) => match (&config.output_path, dir) {
            (Some(out), _) => ExporterChoice::Buffer { dir: out.into() },
            (None, Some(dir)) => ExporterChoice::Buffer { dir: dir.into() },
            (None, None) => {
                return Err(TelemetryError::new_err(
                    "setting exporter='buffer' needs a ring directory; accepted: set dir or output_path",
                ))
            }
        },
        (Some("nop"), _) => ExporterChoice::Nop,
        (Some(name), _) => {
            check_plugin_name("exporter", name).map_err(telemetry_error)?;
            ExporterChoice::Plugin {
                name: name.to_owned(),
            }
        }
    };
    Ok(config)
}

fn category_of(value: &Bound<'_, PyAny>) -> PyResult<Category> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "category must be a Category or an int (a 32-bit category number), not bool",
        ));
    }
    value.extract::<i32>().map(Category).map_err(|_| {
        let shown = value.repr().map(|r| r.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!(
            "category {shown} is invalid; accepted: a Category or an int in the 32-bit range"
        ))
    })
}

/// Telemetry of one agent (see `docs/python.md`).
#[pyclass(frozen, module = "nixl_telemetry._native")]
pub struct Telemetry {
    /// `None` once closed. Never locked in a forked child (a lock held by another
    /// thread of the parent at fork time would never be released there). Boxed:
    /// the telemetry holds cache-line aligned handles, which a Python object's
    /// storage (16-byte aligned) cannot hold in place.
    inner: RwLock<Option<Box<RustTelemetry>>>,
    /// The accounting at close, for `stats()` afterwards.
    final_stats: std::sync::Mutex<Option<TelemetryStats>>,
    /// The fork generation of the creating process.
    generation: u64,
    agent: String,
}

impl Telemetry {
    fn create(py: Python<'_>, agent: String, mut config: TelemetryConfig) -> PyResult<Telemetry> {
        config.environment_libdir = Some(environment_libdir(py)?);
        fork::install();
        let generation = fork::generation();
        let telemetry = py
            .detach(|| RustTelemetry::new(&agent, config))
            .map_err(|e: RustError| telemetry_error(e))?;
        Ok(Telemetry {
            inner: RwLock::new(Some(Box::new(telemetry))),
            final_stats: std::sync::Mutex::new(None),
            generation,
            agent,
        })
    }

    /// Runs `f` with the telemetry when it is open and belongs to this process.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&RustTelemetry) -> R) -> Option<R> {
        if self.generation != fork::generation() {
            return None;
        }
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        guard.as_deref().map(f)
    }

    fn close_inner(&self, py: Python<'_>) {
        if self.generation != fork::generation() {
            // Inherited through fork: left alone (see `Drop`).
            return;
        }
        let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(telemetry) = taken {
            // Flushes, stops the flush thread and closes the exporter; the
            // accounting after the last flush stays readable through `stats()`.
            let stats = py.detach(move || {
                telemetry.flush();
                let stats = telemetry.stats();
                drop(telemetry);
                stats
            });
            *self.final_stats.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if self.generation != fork::generation() {
            // Inherited through fork: the flush thread does not exist here, its
            // locks may be held forever and the ring is the parent's. Never flush,
            // join or close it: the memory is left to the process's exit.
            let taken = self
                .inner
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            std::mem::forget(taken);
        }
        // In the creating process the field's own drop flushes and closes it.
    }
}

fn stats_dict<'py>(py: Python<'py>, s: &TelemetryStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("recorded", s.recorded)?;
    d.set_item("generated", s.generated)?;
    d.set_item("delivered", s.delivered)?;
    d.set_item("pending", s.pending)?;
    d.set_item("dropped", s.dropped.total())?;
    d.set_item("dropped_staging_full", s.dropped.staging_full)?;
    d.set_item("dropped_exporter_full", s.dropped.exporter_full)?;
    d.set_item("dropped_exporter_failed", s.dropped.exporter_failed)?;
    d.set_item("dropped_format", s.dropped.format)?;
    d.set_item("dropped_late", s.dropped.late)?;
    Ok(d)
}

/// The `lib` directory the wheel installed the plug-ins under
/// (`lib/nixl/telemetry_exporters`): the install scheme's data root is the one
/// that holds `lib/pythonX.Y/site-packages/nixl_telemetry`, for a virtual
/// environment, a `--user` install and a system-wide one alike. A package found
/// elsewhere (a source checkout on `PYTHONPATH`) gives `<sys.prefix>/lib`.
fn environment_libdir(py: Python<'_>) -> PyResult<PathBuf> {
    let init: PathBuf = py
        .import("nixl_telemetry")?
        .getattr("__file__")?
        .extract()?;
    let mut ancestors = init.ancestors().skip(2);
    let site = ancestors.next();
    let lib = ancestors.nth(1);
    if let (Some(site), Some(lib)) = (site, lib) {
        if matches!(
            site.file_name().and_then(|n| n.to_str()),
            Some("site-packages" | "dist-packages")
        ) {
            return Ok(lib.to_path_buf());
        }
    }
    let prefix: PathBuf = py.import("sys")?.getattr("prefix")?.extract()?;
    Ok(prefix.join("lib"))
}

#[pymethods]
impl Telemetry {
    #[new]
    #[pyo3(signature = (agent, **settings))]
    fn new(py: Python<'_>, agent: String, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let config = config_from_settings(settings)?;
        Telemetry::create(py, agent, config)
    }

    /// Telemetry configured from the `NIXL_TELEMETRY_*` variables.
    #[staticmethod]
    fn from_env(py: Python<'_>, agent: String) -> PyResult<Self> {
        let config = TelemetryConfig::from_env().map_err(|e: ConfigError| telemetry_error(e))?;
        Telemetry::create(py, agent, config)
    }

    #[getter]
    fn agent(&self) -> &str {
        &self.agent
    }

    /// Whether events are recorded (false when disabled, closed, or inherited through fork).
    #[getter]
    fn enabled(&self) -> bool {
        self.with(|t| t.is_enabled()).unwrap_or(false)
    }

    fn handle(&self, category: &Bound<'_, PyAny>, name: &str) -> PyResult<EventHandle> {
        let category = category_of(category)?;
        let inner = self
            .with(|t| t.handle(category, name))
            .unwrap_or_else(|| RustHandle::noop(category, name));
        Ok(EventHandle {
            inner: Box::new(inner),
            generation: self.generation,
        })
    }

    fn record(&self, category: &Bound<'_, PyAny>, name: &str, value: u64) -> PyResult<()> {
        let category = category_of(category)?;
        self.with(|t| t.record(category, name, value));
        Ok(())
    }

    #[pyo3(signature = (duration_us, write, nbytes))]
    fn transfer_completed(&self, duration_us: u64, write: bool, nbytes: u64) {
        let direction = if write {
            Direction::Write
        } else {
            Direction::Read
        };
        self.with(|t| t.transfer_completed(duration_us, direction, nbytes));
    }

    fn post_time(&self, us: u64) {
        self.with(|t| t.post_time(us));
    }

    fn memory_registered(&self, nbytes: u64) {
        self.with(|t| t.memory_registered(nbytes));
    }

    fn memory_deregistered(&self, nbytes: u64) {
        self.with(|t| t.memory_deregistered(nbytes));
    }

    fn error(&self, status: &str) {
        self.with(|t| t.error(status));
    }

    fn backend_event(&self, name: &str, value: u64) {
        self.with(|t| t.backend_event(name, value));
    }

    fn connection_event(&self, name: &str, value: u64) {
        self.with(|t| t.connection_event(name, value));
    }

    /// Flushes everything staged to the exporter now (the GIL is released meanwhile).
    fn flush(&self, py: Python<'_>) {
        py.detach(|| self.with(|t| t.flush()));
    }

    /// The accounting so far (after `close()`, as it was at close; all zeros in
    /// a forked child).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = match self.with(|t| t.stats()) {
            Some(stats) => stats,
            None if self.generation == fork::generation() => self
                .final_stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_default(),
            None => TelemetryStats::default(),
        };
        stats_dict(py, &stats)
    }

    /// Flushes and closes (the GIL is released meanwhile); later calls record nothing.
    fn close(&self, py: Python<'_>) {
        self.close_inner(py);
    }

    #[getter]
    fn closed(&self) -> bool {
        self.generation != fork::generation()
            || self
                .inner
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close_inner(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "Telemetry(agent={:?}, enabled={}, closed={})",
            self.agent,
            if self.enabled() { "True" } else { "False" },
            if self.closed() { "True" } else { "False" }
        )
    }
}

// Python allocates an object's storage 16-byte aligned and PyO3 places the Rust
// value in it as laid out, so a `#[pyclass]` must not need more.
const _: () = assert!(
    std::mem::align_of::<Telemetry>() <= 16 && std::mem::align_of::<EventHandle>() <= 16,
    "a pyclass needs at most 16-byte alignment: box what is aligned further"
);

/// A pre-resolved (category, name): `record(value)` is the fast path.
#[pyclass(frozen, module = "nixl_telemetry._native")]
pub struct EventHandle {
    /// Boxed: the handle is cache-line aligned, which a Python object's
    /// storage (16-byte aligned) cannot hold in place.
    inner: Box<RustHandle>,
    generation: u64,
}

#[pymethods]
impl EventHandle {
    #[inline]
    fn record(&self, value: u64) {
        if self.generation == fork::generation() {
            self.inner.record(value);
        }
    }

    /// Whether records reach the collector (false when disabled, filtered out, or
    /// inherited through fork).
    #[getter]
    fn enabled(&self) -> bool {
        self.generation == fork::generation() && self.inner.is_enabled()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
