//! The package's exception types.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;

create_exception!(
    nixl_telemetry,
    TelemetryError,
    PyValueError,
    "A telemetry setting or environment variable is invalid, or telemetry could not start; the message names the variable or setting, the value and what is accepted."
);

create_exception!(
    nixl_telemetry,
    RingError,
    PyValueError,
    "A ring file or directory cannot be read; the message names the file and what is wrong."
);

create_exception!(
    nixl_telemetry,
    ProcessingError,
    PyValueError,
    "A record, a metric or a processor setting is invalid; the message names the key and the expected type. The metrics dict is left unchanged."
);
