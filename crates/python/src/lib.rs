//! `nixl_telemetry._native`: the Rust side of the `nixl_telemetry` Python package.
//!
//! * [`recording`]: `Telemetry` and `EventHandle` over [`nixl_telemetry::Telemetry`];
//! * [`event`]: `Event`, one event read from a ring (a type cheap to make);
//! * [`key_cache`]: what a ring's events share (names, sources), by slot key;
//! * [`reading`]: `read_ring`, `Ring`, `Trailer` over
//!   [`nixl_telemetry::ring::RingReader`], with the results of `telemetry_reader --json`;
//! * [`processing`]: `MetricProcessor` over [`nixl_telemetry_processor`], and the
//!   reference's helper functions for `nixl_telemetry.tao`;
//! * `borrowed_batch`: a `process_many` batch read without taking references, for
//!   input that runs no Python code while it is read;
//! * `dict_entries`: whether two dicts hold identical entries (the quick check of
//!   `process_many`'s kept copy);
//! * [`datetime_state`]: a plain naive `datetime` read in place (layout checked once);
//! * [`floor`]: `_visit_records`, the benchmark's floor for `process_many`;
//! * [`fork`]: a forked child's inherited telemetry records nothing.
//!
//! The Python side (`python/nixl_telemetry/`) adds `Category`, the `tao` drop-in and
//! the type stubs; `docs/python.md` describes the package.

mod borrowed_batch;
pub mod datetime_state;
mod dict_entries;
pub mod errors;
pub mod event;
pub mod floor;
pub mod fork;
pub mod key_cache;
pub mod processing;
pub mod reading;
pub mod recording;
pub mod text;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    fork::install();
    m.add_class::<recording::Telemetry>()?;
    m.add_class::<recording::EventHandle>()?;
    m.add("Event", event::event_type(py)?)?;
    m.add_class::<reading::Ring>()?;
    m.add_class::<reading::Trailer>()?;
    m.add_class::<processing::MetricProcessor>()?;
    m.add_function(wrap_pyfunction!(reading::read_ring, m)?)?;
    m.add_function(wrap_pyfunction!(floor::_visit_records, m)?)?;
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
