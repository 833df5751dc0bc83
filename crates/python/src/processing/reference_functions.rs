//! The reference's helper functions, for `nixl_telemetry.tao`.

use nixl_telemetry_processor::{
    extract_gpu_type as rust_gpu_type, extract_primary_gpu as rust_primary_gpu, sanitize_str,
    AttributeRegistry,
};
use pyo3::prelude::*;

use super::convert::{processing_error, read_record};
use super::json_to_python;

/// Normalises a raw record against the built-in registry (the reference's
/// `extract_telemetry_data`; values that do not fit their type are an error).
#[pyfunction]
pub fn extract_telemetry_data(py: Python<'_>, raw_data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let record = read_record(raw_data)?;
    let record = record.record()?;
    let registry = AttributeRegistry::default();
    let data = nixl_telemetry_processor::extract_telemetry_data(&registry, &record)
        .map_err(|e| processing_error(e.to_string()))?;
    json_to_python(py, &data.to_json())
}

/// `str(value)`, each code point not an ASCII letter or digit replaced by `_`,
/// then lower (or upper) case.
#[pyfunction]
#[pyo3(signature = (value, uppercase=false))]
pub fn sanitize_field_value(value: &Bound<'_, PyAny>, uppercase: bool) -> PyResult<String> {
    let text = value.str()?;
    Ok(sanitize_str(&text.to_cow()?, uppercase).into_owned())
}

/// `<count>_<NAME>_<n>_…`: the number of GPUs, then each distinct upper-case
/// sanitised name with its count, in code-point order.
#[pyfunction]
pub fn create_gpu_identifier(gpu_list: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut names = Vec::new();
    for item in gpu_list.try_iter()? {
        names.push(item?.str()?.to_cow()?.into_owned());
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
