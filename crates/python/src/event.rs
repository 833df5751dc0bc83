//! `Event`: one event read from a ring.
//!
//! A frozen `#[pyclass]`: immutable, not subclassable, unhashable (it defines
//! `__eq__` only), not tracked by the garbage collector (it can hold no
//! cycle). The numbers are stored natively and made into Python ints when
//! read; the name (and, from a directory, the agent) is a reference to a
//! `str` shared by every event of that name. Freed events' memory is kept on
//! a free list for the next ones (`freelist`), so a read that follows another
//! reuses warm memory.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::reading::{category_object, category_text};

/// One event read from a ring (see `docs/python.md`). The free list keeps
/// the memory of at most 65,536 freed events (a full ring's).
#[pyclass(frozen, freelist = 65_536, module = "nixl_telemetry._native")]
pub struct Event {
    timestamp_us: Option<u64>,
    category: Option<i32>,
    name: Py<PyString>,
    value: u64,
    agent: Option<Py<PyString>>,
}

impl Event {
    fn same_fields(&self, other: &Event, py: Python<'_>) -> PyResult<bool> {
        let same_agent = match (&self.agent, &other.agent) {
            (None, None) => true,
            (Some(a), Some(b)) => a.bind(py).as_any().eq(b.bind(py))?,
            _ => false,
        };
        Ok(self.timestamp_us == other.timestamp_us
            && self.category == other.category
            && self.value == other.value
            && same_agent
            && self.name.bind(py).as_any().eq(other.name.bind(py))?)
    }
}

#[pymethods]
impl Event {
    /// An event of `name` (and `agent`, read from a directory).
    #[new]
    #[pyo3(signature = (timestamp_us, category, name, value, agent=None))]
    pub fn new(
        timestamp_us: Option<u64>,
        category: Option<i32>,
        name: Py<PyString>,
        value: u64,
        agent: Option<Py<PyString>>,
    ) -> Event {
        Event {
            timestamp_us,
            category,
            name,
            value,
            agent,
        }
    }

    /// Microseconds since the Unix epoch, or None where the ring version has none.
    #[getter]
    fn timestamp_us(&self) -> Option<u64> {
        self.timestamp_us
    }

    /// A `Category` member, an int for an unknown number, or None where the
    /// ring version has none.
    #[getter]
    fn category(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        category_object(py, self.category)
    }

    /// The category as the readers print it (`TRANSFER`, `UNKNOWN_CATEGORY_9`), or None.
    #[getter]
    fn category_name(&self) -> Option<String> {
        self.category.map(category_text)
    }

    /// The event's name.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyString> {
        self.name.clone_ref(py)
    }

    /// The per-operation reading.
    #[getter]
    fn value(&self) -> u64 {
        self.value
    }

    /// The agent (the ring file's name) when read from a directory, else None.
    #[getter]
    fn agent(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.agent.as_ref().map(|a| a.clone_ref(py))
    }

    /// The object `telemetry_reader --json` prints for this event.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("timestamp_us", self.timestamp_us)?;
        d.set_item("category", self.category.map(category_text))?;
        d.set_item("category_id", self.category)?;
        d.set_item("name", self.name.bind(py))?;
        d.set_item("value", self.value)?;
        if let Some(agent) = &self.agent {
            d.set_item("agent", agent.bind(py))?;
        }
        Ok(d)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        match other.cast::<Event>() {
            Ok(other) => self.same_fields(other.get(), other.py()),
            Err(_) => Ok(false),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "None".to_owned());
        let mut text = format!(
            "Event(timestamp_us={}, category={}, name={}, value={}",
            opt(self.timestamp_us.map(|t| t.to_string())),
            opt(self.category.map(category_text)),
            self.name.bind(py).repr()?,
            self.value
        );
        if let Some(agent) = &self.agent {
            text.push_str(&format!(", agent={}", agent.bind(py).repr()?));
        }
        text.push(')');
        Ok(text)
    }
}
