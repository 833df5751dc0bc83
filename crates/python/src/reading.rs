//! Reading rings from Python: `read_ring`, `Ring`, `Event`, `Trailer`.
//!
//! Every ring version (1–4) is read through the core reader: batches of slot
//! bytes ([`RingReader::read_slot_bytes`]) whose fields [`SlotView`] reads in
//! place, each event made straight from its slot (the name or event type
//! looked up in a [`KeyCache`] per ring); a directory is scanned by the
//! core's [`RingDirectory`] under the readers' rules. The results are those of
//! `telemetry_reader --once --json`: the same events in the same order (a
//! directory's rings in the order Python sorts their names, each drained
//! oldest first), `None` for a timestamp or category the version lacks, event
//! types named by the version's table (`unknown_event_<n>` otherwise),
//! malformed slots (a name without NUL) skipped and counted, invalid UTF-8 in
//! names replaced by U+FFFD.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nixl_telemetry::ring::{
    agent_name, layout::RingLayout, python_sort_key, DirectoryError, FileIdentity, ReadMode,
    RingDirectory, RingError as RustRingError, RingReader, ScanRules, SlotView, TrailerInfo,
};
use nixl_telemetry_abi::Category;
use pyo3::exceptions::{PyFileNotFoundError, PyPermissionError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::errors::RingError;
use crate::event::Event;
use crate::key_cache::{KeyCache, NameStrings};

/// Slots taken from a ring file at a time: 2,048 keeps the bytes read (115 KB
/// of version-1 slots) in the L2 cache, reused from batch to batch, where
/// 8,192 fetched fresh pages on every call (a full ring: 3.06 ms against 3.70
/// ms with `Event`s, docs/PERFORMANCE.md).
const BATCH_EVENTS: usize = 2048;

static CATEGORY_MEMBERS: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();

/// The `Category` members, by number.
fn category_members(py: Python<'_>) -> PyResult<&Vec<Py<PyAny>>> {
    CATEGORY_MEMBERS.get_or_try_init(py, || {
        let enum_type = py.import("nixl_telemetry._category")?.getattr("Category")?;
        Category::ALL
            .iter()
            .map(|c| enum_type.call1((c.0,)).map(Bound::unbind))
            .collect()
    })
}

/// The category as a `Category` member, a plain int for an unknown number, or None.
pub fn category_object(py: Python<'_>, category: Option<i32>) -> PyResult<Py<PyAny>> {
    Ok(match category {
        None => py.None(),
        Some(n) => match usize::try_from(n)
            .ok()
            .and_then(|i| category_members(py).ok()?.get(i))
        {
            Some(member) => member.clone_ref(py),
            None => n.into_pyobject(py)?.into_any().unbind(),
        },
    })
}

/// The category as the readers print it.
pub fn category_text(category: i32) -> String {
    match Category(category).known_name() {
        Some(name) => name.to_owned(),
        None => format!("UNKNOWN_CATEGORY_{category}"),
    }
}

/// The loss counters and liveness a ring's trailer carries.
#[pyclass(frozen, get_all, module = "nixl_telemetry._native")]
pub struct Trailer {
    /// Trailer version.
    version: u32,
    /// The producer's pid.
    producer_pid: u32,
    /// Whether the producer shut down cleanly.
    closed: bool,
    /// Wall-clock µs when the file was created.
    created_us: u64,
    /// Events the producer wrote in total.
    events_written: u64,
    /// Events lost because a staging buffer was full.
    dropped_staging_full: u64,
    /// Events lost because the ring was full.
    dropped_ring_full: u64,
    /// Events lost because the ring's version has no event type for them
    /// (0 in a version-1 trailer, which has no such counter).
    dropped_format: u64,
    /// Wall-clock µs of the producer's latest flush.
    last_flush_us: u64,
    /// All events the producer lost (the exact sum of the counters).
    events_lost: u128,
}

impl From<TrailerInfo> for Trailer {
    fn from(t: TrailerInfo) -> Trailer {
        Trailer {
            version: t.version,
            producer_pid: t.producer_pid,
            closed: t.closed,
            created_us: t.created_us,
            events_written: t.events_written,
            dropped_staging_full: t.dropped_staging_full,
            dropped_ring_full: t.dropped_ring_full,
            dropped_format: t.dropped_format,
            last_flush_us: t.last_flush_us,
            events_lost: t.events_lost(),
        }
    }
}

#[pymethods]
impl Trailer {
    fn __repr__(&self) -> String {
        format!(
            "Trailer(producer_pid={}, closed={}, events_written={}, dropped_staging_full={}, \
             dropped_ring_full={}, dropped_format={})",
            self.producer_pid,
            if self.closed { "True" } else { "False" },
            self.events_written,
            self.dropped_staging_full,
            self.dropped_ring_full,
            self.dropped_format
        )
    }
}

/// A Python exception for a ring error: FileNotFoundError and PermissionError
/// for those causes, `RingError` otherwise; the message names the file.
fn ring_error(err: &RustRingError) -> PyErr {
    if let RustRingError::Io { source, .. } = err {
        match source.kind() {
            ErrorKind::NotFound => return PyFileNotFoundError::new_err(err.to_string()),
            ErrorKind::PermissionDenied => return PyPermissionError::new_err(err.to_string()),
            _ => {}
        }
    }
    RingError::new_err(err.to_string())
}

/// A Python exception for a directory that cannot be listed (as [`ring_error`]).
fn directory_error(err: &DirectoryError) -> PyErr {
    match err.source.kind() {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(err.to_string()),
        ErrorKind::PermissionDenied => PyPermissionError::new_err(err.to_string()),
        _ => RingError::new_err(err.to_string()),
    }
}

/// One open ring file.
struct OneRing {
    reader: Option<RingReader>,
    /// The file's name (in its directory).
    name: OsString,
    agent: String,
    identity: FileIdentity,
    retiring: bool,
    events_read: u64,
    malformed: u64,
    last_trailer: Option<TrailerInfo>,
    /// The file's layout (its ring version), detected at open.
    layout: &'static RingLayout,
}

impl OneRing {
    fn new(reader: RingReader, name: OsString, identity: FileIdentity) -> OneRing {
        OneRing {
            last_trailer: reader.trailer(),
            layout: reader.layout(),
            reader: Some(reader),
            agent: agent_name(&name),
            name,
            identity,
            retiring: false,
            events_read: 0,
            malformed: 0,
        }
    }

    /// A ring file named by the caller.
    fn open(path: &Path, mode: ReadMode) -> Result<OneRing, RustRingError> {
        // Look before opening: a FIFO or a device must not be opened at all.
        let meta = std::fs::metadata(path).map_err(|source| RustRingError::Io {
            path: path.to_owned(),
            op: "open",
            source,
        })?;
        if !meta.is_file() {
            return Err(RustRingError::NotRegularFile {
                path: path.to_owned(),
            });
        }
        let reader = RingReader::open(path, mode)?;
        let name = path.file_name().unwrap_or(path.as_os_str()).to_owned();
        let identity = FileIdentity {
            device: meta.dev(),
            inode: meta.ino(),
        };
        Ok(OneRing::new(reader, name, identity))
    }

    fn trailer(&mut self) -> Option<TrailerInfo> {
        if let Some(reader) = &self.reader {
            self.last_trailer = reader.trailer();
        }
        self.last_trailer
    }

    /// Events waiting now (none once the file was retired).
    fn pending(&mut self) -> Result<u64, RustRingError> {
        match self.reader.as_mut() {
            Some(reader) => reader.pending(),
            None => Ok(0),
        }
    }

    /// Reads up to `want` slots' bytes into `slots` (resized to them) and
    /// advances past them; returns the number of slots read.
    fn read_batch(&mut self, slots: &mut Vec<u8>, want: usize) -> Result<usize, RustRingError> {
        let Some(reader) = self.reader.as_mut() else {
            slots.clear();
            return Ok(0);
        };
        reader.read_slot_bytes(slots, want)
    }
}

struct RingState {
    /// Directory mode: the directory, scanned under the readers' rules.
    directory: Option<RingDirectory>,
    mode: ReadMode,
    rings: Vec<OneRing>,
    /// Directory mode: files that are not rings, with the reason.
    skipped: Vec<(String, String)>,
}

impl RingState {
    fn open(path: &Path, mode: ReadMode) -> Result<RingState, PyErr> {
        let meta = std::fs::metadata(path).map_err(|source| {
            ring_error(&RustRingError::Io {
                path: path.to_owned(),
                op: "open",
                source,
            })
        })?;
        let mut state = RingState {
            directory: None,
            mode,
            rings: Vec::new(),
            skipped: Vec::new(),
        };
        if meta.is_dir() {
            state.directory = Some(RingDirectory::new(path, ScanRules::Readers));
            state.scan()?;
            if state.rings.is_empty() {
                return Err(RingError::new_err(format!(
                    "{}: directory holds no ring files ({} other files skipped); accepted: a \
                     directory with at least one NIXL ring file (versions 1-4)",
                    path.display(),
                    state.skipped.len()
                )));
            }
        } else {
            let ring = OneRing::open(path, mode).map_err(|e| ring_error(&e))?;
            state.rings.push(ring);
        }
        Ok(state)
    }

    /// Directory mode: opens the rings of files that appeared (and tries again
    /// those that were not rings), marks the rings whose file was removed or
    /// replaced for retirement.
    fn scan(&mut self) -> PyResult<()> {
        let Some(directory) = self.directory.as_mut() else {
            return Ok(());
        };
        let scan = directory.scan().map_err(|e| directory_error(&e))?;
        for ring in &mut self.rings {
            if !scan
                .files
                .iter()
                .any(|f| f.name == ring.name && f.identity == ring.identity)
            {
                ring.retiring = true;
            }
        }
        self.skipped.clear();
        for file in &scan.files {
            if self
                .rings
                .iter()
                .any(|r| !r.retiring && r.name == file.name)
            {
                continue;
            }
            match directory.open_reader(file, self.mode) {
                Ok(reader) => {
                    self.rings
                        .push(OneRing::new(reader, file.name.clone(), file.identity))
                }
                Err(e) => self.skipped.push((file.agent(), e.to_string())),
            }
        }
        self.rings.sort_by_cached_key(|r| python_sort_key(&r.name));
        Ok(())
    }

    fn is_directory(&self) -> bool {
        self.directory.is_some()
    }

    /// Closes rings whose file was removed or replaced (after their last read).
    fn retire(&mut self) {
        for ring in self.rings.iter_mut().filter(|r| r.retiring) {
            ring.trailer();
            ring.reader = None;
        }
    }
}

/// A ring file, or a directory of ring files (one per agent), being read.
#[pyclass(frozen, module = "nixl_telemetry._native")]
pub struct Ring {
    state: Mutex<Option<RingState>>,
    path: String,
    directory: bool,
    peek: bool,
}

impl Ring {
    fn with_state<R>(&self, f: impl FnOnce(&mut RingState) -> PyResult<R>) -> PyResult<R> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Some(state) => f(state),
            None => Err(RingError::new_err(format!(
                "{}: the ring was closed; open it again to read",
                self.path
            ))),
        }
    }

    /// The rings to read (a directory is rescanned), the events each holds
    /// now and its layout.
    fn plan(&self, py: Python<'_>) -> PyResult<Vec<Planned>> {
        py.detach(|| {
            self.with_state(|state| {
                if state.is_directory() {
                    state.scan()?;
                }
                state
                    .rings
                    .iter_mut()
                    .map(|r| {
                        Ok(Planned {
                            agent: r.agent.clone(),
                            pending: r.pending().map_err(|e| ring_error(&e))?,
                            layout: r.layout,
                        })
                    })
                    .collect()
            })
        })
    }

    /// Reads the planned events, at most `max`, batch by batch: each batch of
    /// slots is read with the GIL released, then handed to `sink` with its
    /// ring's layout and the index of the ring in `plan`; `sink` returns how
    /// many of the slots were malformed (skipped). The lock is never waited for
    /// while holding the GIL. The rings' counts of events read and malformed
    /// slots are updated at the end, also when a batch failed.
    fn read_planned(
        &self,
        py: Python<'_>,
        plan: &[Planned],
        max: usize,
        mut sink: impl FnMut(&[u8], &'static RingLayout, usize) -> PyResult<u64>,
    ) -> PyResult<()> {
        let mut slots = Vec::new();
        // (well-formed events, malformed slots) read from each planned ring.
        let mut counts = vec![(0u64, 0u64); plan.len()];
        let mut read_all = || -> PyResult<()> {
            let mut left = max;
            for (index, planned) in plan.iter().enumerate() {
                let mut remaining = planned.pending;
                while remaining > 0 && left > 0 {
                    let want = remaining.min(BATCH_EVENTS as u64).min(left as u64) as usize;
                    let n = py.detach(|| {
                        self.with_state(|state| {
                            // Found by name: another thread may have rescanned meanwhile.
                            match state.rings.iter_mut().find(|r| r.agent == planned.agent) {
                                Some(ring) => ring
                                    .read_batch(&mut slots, want)
                                    .map_err(|e| ring_error(&e)),
                                None => Ok(0),
                            }
                        })
                    })?;
                    if n == 0 {
                        break;
                    }
                    remaining -= n as u64;
                    let malformed = sink(&slots, planned.layout, index)?;
                    let kept = n as u64 - malformed;
                    counts[index].0 += kept;
                    counts[index].1 += malformed;
                    left -= kept as usize;
                }
            }
            Ok(())
        };
        let read = read_all();
        let finished = py.detach(|| {
            self.with_state(|state| {
                for (planned, (kept, malformed)) in plan.iter().zip(&counts) {
                    if let Some(ring) = state.rings.iter_mut().find(|r| r.agent == planned.agent) {
                        ring.events_read += kept;
                        ring.malformed += malformed;
                    }
                }
                if read.is_ok() {
                    state.retire();
                }
                Ok(())
            })
        });
        read.and(finished)
    }

    /// Reads the planned events as [`Ring::read_planned`] does, handing `each`
    /// every well-formed slot with its name (one `str` shared by the events
    /// of that name) and the index of its ring in `plan`; malformed slots are
    /// skipped and counted.
    fn read_named(
        &self,
        py: Python<'_>,
        plan: &[Planned],
        max: usize,
        mut each: impl FnMut(&SlotView<'_>, &Py<PyString>, usize) -> PyResult<()>,
    ) -> PyResult<()> {
        let mut names = NameStrings::default();
        let mut caches: Vec<KeyCache<Py<PyString>>> =
            plan.iter().map(|_| KeyCache::default()).collect();
        self.read_planned(py, plan, max, |slots, layout, ring| {
            let cache = &mut caches[ring];
            let mut malformed = 0;
            for slot in SlotView::all(layout, slots) {
                match cache.get(layout, slot.key(), |field| Ok(names.get(py, field)))? {
                    Some(name) => each(&slot, name, ring)?,
                    None => malformed += 1,
                }
            }
            Ok(malformed)
        })
    }

    /// Reads into Python events.
    fn read_events<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyList>> {
        let plan = self.plan(py)?;
        let agents: Vec<Option<Py<PyString>>> = plan
            .iter()
            .map(|p| self.directory.then(|| PyString::new(py, &p.agent).unbind()))
            .collect();
        let mut events: Vec<Bound<'py, Event>> = Vec::with_capacity(expected_events(&plan, max));
        self.read_named(py, &plan, max, |slot, name, ring| {
            let event = Event::new(
                slot.timestamp_us(),
                slot.category(),
                name.clone_ref(py),
                slot.value(),
                agents[ring].as_ref().map(|a| a.clone_ref(py)),
            );
            events.push(Bound::new(py, event)?);
            Ok(())
        })?;
        PyList::new(py, events)
    }

    /// Reads into columns: `array.array`s of the numbers, lists of the names
    /// (and agents), one entry per event; a field no ring read carries is
    /// `None`, a field only some carry a list with `None` where it is missing.
    fn columns<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyDict>> {
        let plan = self.plan(py)?;
        let agents: Vec<Py<PyString>> = plan
            .iter()
            .map(|p| PyString::new(py, &p.agent).unbind())
            .collect();
        let expected = expected_events(&plan, max);
        let mut timestamps = OptionalColumn::<u64>::new(
            ColumnForm::of(&plan, |l| l.slot.timestamp.is_some()),
            expected,
        );
        let mut categories = OptionalColumn::<i32>::new(
            ColumnForm::of(&plan, |l| l.slot.category.is_some()),
            expected,
        );
        let mut values = Vec::with_capacity(expected * 8);
        let mut name_list = Vec::with_capacity(expected);
        let mut agent_list = Vec::new();
        let directory = self.directory;
        self.read_named(py, &plan, max, |slot, name, ring| {
            name_list.push(name.clone_ref(py));
            timestamps.push(slot.timestamp_us());
            categories.push(slot.category());
            values.extend_from_slice(&slot.value().to_ne_bytes());
            if directory {
                agent_list.push(agents[ring].clone_ref(py));
            }
            Ok(())
        })?;
        let array = py
            .import(intern!(py, "array"))?
            .getattr(intern!(py, "array"))?;
        let column = |code: &str, bytes: &[u8]| -> PyResult<Bound<'py, PyAny>> {
            let a = array.call1((code,))?;
            a.call_method1(intern!(py, "frombytes"), (PyBytes::new(py, bytes),))?;
            Ok(a)
        };
        let d = PyDict::new(py);
        d.set_item("timestamp_us", timestamps.into_python(py, &column, "Q")?)?;
        d.set_item("category", categories.into_python(py, &column, "i")?)?;
        d.set_item("name", PyList::new(py, name_list)?)?;
        d.set_item("value", column("Q", &values)?)?;
        if directory {
            d.set_item("agent", PyList::new(py, agent_list)?)?;
        }
        Ok(d)
    }
}

/// One ring to read: its agent, the events it holds now, its layout.
struct Planned {
    agent: String,
    pending: u64,
    layout: &'static RingLayout,
}

/// The events a read of `plan` returns at most.
fn expected_events(plan: &[Planned], max: usize) -> usize {
    plan.iter()
        .map(|p| usize::try_from(p.pending).unwrap_or(usize::MAX))
        .fold(0usize, usize::saturating_add)
        .min(max)
}

/// How a column of a field some ring versions lack is given to Python.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ColumnForm {
    /// Every ring read carries the field: an `array.array`.
    Array,
    /// No ring read carries it: `None` in place of the column.
    Absent,
    /// Some rings of a directory carry it: a list with `None` where missing.
    Mixed,
}

impl ColumnForm {
    /// The form for the rings of `plan`, by whether each `layout` has the field.
    fn of(plan: &[Planned], has: impl Fn(&RingLayout) -> bool) -> ColumnForm {
        let with = plan.iter().filter(|p| has(p.layout)).count();
        if with == plan.len() {
            ColumnForm::Array
        } else if with == 0 {
            ColumnForm::Absent
        } else {
            ColumnForm::Mixed
        }
    }
}

/// A number every ring version may or may not carry, as a column.
trait ColumnNumber: Copy + for<'py> IntoPyObject<'py> {
    /// The native-endian bytes `array.array.frombytes` takes.
    fn append_bytes(self, out: &mut Vec<u8>);
}

impl ColumnNumber for u64 {
    #[inline]
    fn append_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_ne_bytes());
    }
}

impl ColumnNumber for i32 {
    #[inline]
    fn append_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_ne_bytes());
    }
}

/// A column of an optional field, filled in its [`ColumnForm`].
struct OptionalColumn<T> {
    form: ColumnForm,
    /// `Array`: the numbers' bytes.
    bytes: Vec<u8>,
    /// `Mixed`: the values, `None` where missing.
    mixed: Vec<Option<T>>,
}

impl<T: ColumnNumber> OptionalColumn<T> {
    fn new(form: ColumnForm, expected: usize) -> Self {
        OptionalColumn {
            form,
            bytes: Vec::with_capacity(if form == ColumnForm::Array {
                expected * std::mem::size_of::<T>()
            } else {
                0
            }),
            mixed: Vec::with_capacity(if form == ColumnForm::Mixed {
                expected
            } else {
                0
            }),
        }
    }

    #[inline]
    fn push(&mut self, value: Option<T>) {
        match self.form {
            // Every ring of an `Array` column carries the field.
            ColumnForm::Array => {
                if let Some(v) = value {
                    v.append_bytes(&mut self.bytes)
                }
            }
            ColumnForm::Absent => {}
            ColumnForm::Mixed => self.mixed.push(value),
        }
    }

    fn into_python<'py>(
        self,
        py: Python<'py>,
        array: &impl Fn(&str, &[u8]) -> PyResult<Bound<'py, PyAny>>,
        code: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.form {
            ColumnForm::Array => array(code, &self.bytes),
            ColumnForm::Absent => Ok(py.None().into_bound(py)),
            ColumnForm::Mixed => Ok(PyList::new(py, self.mixed)?.into_any()),
        }
    }
}

#[pymethods]
impl Ring {
    #[new]
    #[pyo3(signature = (path, peek=false))]
    fn new(py: Python<'_>, path: PathBuf, peek: bool) -> PyResult<Ring> {
        let mode = if peek {
            ReadMode::Peek
        } else {
            ReadMode::Consume
        };
        let state = py.detach(|| RingState::open(&path, mode))?;
        Ok(Ring {
            directory: state.is_directory(),
            state: Mutex::new(Some(state)),
            path: path.display().to_string(),
            peek,
        })
    }

    /// Reads the events there are now (at most `max_events`), oldest first; a
    /// consuming ring advances `read_pos` past them.
    #[pyo3(signature = (max_events=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        max_events: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.read_events(py, max_events.unwrap_or(usize::MAX))
    }

    /// Like `read`, as columns: a dict of `array.array`s (`timestamp_us` and
    /// `value`: 'Q', `category`: 'i') and lists (`name`, and `agent` for a
    /// directory), one entry per event, in the same order. `timestamp_us` and
    /// `category` are None when no ring read carries them (versions 2–4 and
    /// 3–4), lists with None for the events without them when only some rings
    /// of a directory do.
    #[pyo3(signature = (max_events=None))]
    fn read_columns<'py>(
        &self,
        py: Python<'py>,
        max_events: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.columns(py, max_events.unwrap_or(usize::MAX))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.read_events(py, usize::MAX)?.try_iter()?.into_any())
    }

    /// Events waiting in every ring.
    #[getter]
    fn pending(&self) -> PyResult<u64> {
        self.with_state(|state| {
            let mut total = 0u64;
            for ring in &mut state.rings {
                if let Some(reader) = ring.reader.as_mut() {
                    total += reader.pending().map_err(|e| ring_error(&e))?;
                }
            }
            Ok(total)
        })
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    fn is_directory(&self) -> bool {
        self.directory
    }

    #[getter]
    fn peek(&self) -> bool {
        self.peek
    }

    /// The agents (ring file names), in reading order.
    #[getter]
    fn agents(&self) -> PyResult<Vec<String>> {
        self.with_state(|state| Ok(state.rings.iter().map(|r| r.agent.clone()).collect()))
    }

    /// The layout of a single ring file (`v1`, `v2-named`, `v2-typed`, `v3`,
    /// `v4`); None for a directory (see `layouts`).
    #[getter]
    fn layout(&self) -> PyResult<Option<&'static str>> {
        self.with_state(|state| Ok((!state.is_directory()).then(|| state.rings[0].layout.name)))
    }

    /// Every ring's layout, by agent, in reading order.
    #[getter]
    fn layouts(&self) -> PyResult<Vec<(String, &'static str)>> {
        self.with_state(|state| {
            Ok(state
                .rings
                .iter()
                .map(|r| (r.agent.clone(), r.layout.name))
                .collect())
        })
    }

    /// Directory mode: files that are not rings, as (name, reason).
    #[getter]
    fn skipped(&self) -> PyResult<Vec<(String, String)>> {
        self.with_state(|state| Ok(state.skipped.clone()))
    }

    /// The trailer of a single ring file (None when it has none); for a directory,
    /// see `trailers`.
    #[getter]
    fn trailer(&self) -> PyResult<Option<Trailer>> {
        self.with_state(|state| {
            Ok(if state.is_directory() {
                None
            } else {
                state.rings[0].trailer().map(Trailer::from)
            })
        })
    }

    /// Every ring's trailer, by agent.
    #[getter]
    fn trailers(&self) -> PyResult<Vec<(String, Option<Trailer>)>> {
        self.with_state(|state| {
            Ok(state
                .rings
                .iter_mut()
                .map(|r| (r.agent.clone(), r.trailer().map(Trailer::from)))
                .collect())
        })
    }

    /// Events lost because a staging buffer was full, over every trailer.
    #[getter]
    fn dropped_staging_full(&self) -> PyResult<u128> {
        self.sum_trailers(|t| u128::from(t.dropped_staging_full))
    }

    /// Events lost because the ring was full, over every trailer.
    #[getter]
    fn dropped_ring_full(&self) -> PyResult<u128> {
        self.sum_trailers(|t| u128::from(t.dropped_ring_full))
    }

    /// Events lost because the ring's version has no event type for them,
    /// over every trailer.
    #[getter]
    fn dropped_format(&self) -> PyResult<u128> {
        self.sum_trailers(|t| u128::from(t.dropped_format))
    }

    /// Every event the producers lost, over every trailer.
    #[getter]
    fn events_lost(&self) -> PyResult<u128> {
        self.sum_trailers(|t| t.events_lost())
    }

    /// Well-formed events read so far.
    #[getter]
    fn events_read(&self) -> PyResult<u64> {
        self.with_state(|state| Ok(state.rings.iter().map(|r| r.events_read).sum()))
    }

    /// Malformed slots (a name without NUL) skipped so far.
    #[getter]
    fn malformed(&self) -> PyResult<u64> {
        self.with_state(|state| Ok(state.rings.iter().map(|r| r.malformed).sum()))
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "Ring({:?}, peek={})",
            self.path,
            if self.peek { "True" } else { "False" }
        )
    }
}

impl Ring {
    fn sum_trailers(&self, field: impl Fn(&TrailerInfo) -> u128) -> PyResult<u128> {
        self.with_state(|state| {
            Ok(state
                .rings
                .iter_mut()
                .filter_map(|r| r.trailer())
                .map(|t| field(&t))
                .sum())
        })
    }
}

/// Reads every event a ring file (or a directory of them) holds now: a list of
/// `Event`s, or with `columns=True` the dict of columns `Ring.read_columns` gives.
#[pyfunction]
#[pyo3(signature = (path, peek=false, columns=false))]
pub fn read_ring<'py>(
    py: Python<'py>,
    path: PathBuf,
    peek: bool,
    columns: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let ring = Ring::new(py, path, peek)?;
    let events = if columns {
        ring.columns(py, usize::MAX)?.into_any()
    } else {
        ring.read_events(py, usize::MAX)?.into_any()
    };
    ring.close();
    Ok(events)
}
