//! `nixl_telemetry._native`: the Rust side of the `nixl_telemetry` Python package.
//!
//! * [`recording`]: `Telemetry` and `EventHandle` over [`nixl_telemetry::Telemetry`];
//! * [`reading`]: `read_ring`, `Ring`, `Trailer` over
//!   [`nixl_telemetry::ring::RingReader`], with the results of `telemetry_reader --json`;
//!   [`event`]: `Event`, one event read; [`key_cache`]: what a ring's events
//!   share (names), by slot key;
//! * [`processing`]: `MetricProcessor` over [`nixl_telemetry_processor`], and the
//!   reference's helper functions for `nixl_telemetry.tao`;
//! * a forked child's inherited telemetry records nothing: objects remember the
//!   fork generation of [`nixl_telemetry::fork`] they were made in, as the C API's do.
//!
//! The Python side (`python/nixl_telemetry/`) adds `Category`, the `tao` drop-in and
//! the type stubs; `docs/python.md` describes the package.

#![forbid(unsafe_code)]

pub mod errors;
pub mod event;
pub mod key_cache;
pub mod processing;
pub mod reading;
pub mod recording;

#[cfg(feature = "bench-floor")]
#[path = "../bench/floor.rs"]
mod bench_floor;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    nixl_telemetry::fork::install();
    // The workspace's version (the wheel's) and the line `--version` prints.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__build__", env!("NIXL_TELEMETRY_VERSION_LINE"))?;
    m.add_class::<recording::Telemetry>()?;
    m.add_class::<recording::EventHandle>()?;
    m.add_class::<event::Event>()?;
    m.add_class::<reading::Ring>()?;
    m.add_class::<reading::Trailer>()?;
    m.add_class::<processing::MetricProcessor>()?;
    m.add_function(wrap_pyfunction!(reading::read_ring, m)?)?;
    #[cfg(feature = "bench-floor")]
    m.add_function(wrap_pyfunction!(bench_floor::_visit_records, m)?)?;
    m.add_function(wrap_pyfunction!(processing::extract_telemetry_data, m)?)?;
    m.add_function(wrap_pyfunction!(processing::sanitize_field_value, m)?)?;
    m.add_function(wrap_pyfunction!(processing::create_gpu_identifier, m)?)?;
    m.add_function(wrap_pyfunction!(processing::extract_gpu_type, m)?)?;
    m.add_function(wrap_pyfunction!(processing::extract_primary_gpu, m)?)?;
    m.add(
        "GPU_PRIORITY",
        pyo3::types::PyTuple::new(py, nixl_telemetry_processor::builders::GPU_PRIORITY)?,
    )?;
    m.add("TelemetryError", py.get_type::<errors::TelemetryError>())?;
    m.add("RingError", py.get_type::<errors::RingError>())?;
    m.add("ProcessingError", py.get_type::<errors::ProcessingError>())?;
    Ok(())
}
