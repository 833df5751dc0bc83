//! `Event`: one event read from a ring, as a Python object that is cheap to
//! make and to free (a `read_ring` of a full ring makes 65,535 of them).
//!
//! The type is built from a `PyType_Spec` rather than as a `#[pyclass]`: an
//! object is one 48-byte block from Python's object allocator with the
//! numbers stored natively (Python ints are made only when read) and one
//! reference, to the name (a `str` shared by every event of that name) or, for
//! events read from a directory, to a shared `(name, agent)` tuple. It is not
//! tracked by the garbage collector (it can hold no cycle) and cannot be
//! subclassed, so every instance has exactly this layout. Making one is an
//! allocation and five stores; freeing one, a decrement and a free.
//!
//! Freed objects' blocks are kept on a free list (as CPython keeps freed
//! floats and tuples) and made into the next `Event`s: a read that follows
//! another takes warm memory instead of fresh pages from the allocator, which
//! hands a whole empty arena back to the kernel when the previous read's
//! events are freed (`FreeBlocks`).
//!
//! All `unsafe` of the type is here, at the boundary: each slot function turns
//! its raw pointers into PyO3 handles and runs safe code ([`EventFields`]).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use crate::reading::{category_object, category_text};

/// The memory of one `Event`.
#[repr(C)]
struct RawEvent {
    ob_base: ffi::PyObject,
    /// Valid when `flags & HAS_TIMESTAMP`.
    timestamp_us: u64,
    value: u64,
    /// Owned: the name (`str`), or a `(name, agent)` tuple.
    source: *mut ffi::PyObject,
    /// Valid when `flags & HAS_CATEGORY`.
    category: i32,
    flags: u32,
}

const HAS_TIMESTAMP: u32 = 1;
const HAS_CATEGORY: u32 = 2;

static EVENT_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The `Event` type (made once per interpreter).
pub fn event_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    EVENT_TYPE
        .get_or_try_init(py, || make_type(py))
        .map(|t| t.bind(py))
}

/// An event's fields, read from the object.
pub struct EventFields<'py> {
    /// Microseconds since the Unix epoch, where the ring version has them.
    pub timestamp_us: Option<u64>,
    /// The category number, where the ring version has one.
    pub category: Option<i32>,
    /// The event's name.
    pub name: Bound<'py, PyString>,
    /// The reading.
    pub value: u64,
    /// The ring file's name, for events read from a directory.
    pub agent: Option<Bound<'py, PyString>>,
}

/// What an `Event` refers to for its name (and agent): made once per distinct
/// name (and agent), shared by every event that has it.
pub struct EventSource(Py<PyAny>);

impl EventSource {
    /// A source for events of `name`, with `agent` when read from a directory.
    pub fn new(
        py: Python<'_>,
        name: &Bound<'_, PyString>,
        agent: Option<&Bound<'_, PyString>>,
    ) -> PyResult<EventSource> {
        Ok(EventSource(match agent {
            None => name.clone().into_any().unbind(),
            Some(agent) => PyTuple::new(py, [name.as_any(), agent.as_any()])?
                .into_any()
                .unbind(),
        }))
    }
}

/// A list of events filled in place: made at its expected length, each item
/// stored once (no intermediate vector, no copy), cut to what was pushed at
/// the end. Only `Event`s may be pushed (see `with_capacity`).
pub struct EventList<'py> {
    list: Bound<'py, PyList>,
    capacity: usize,
    len: usize,
}

impl<'py> EventList<'py> {
    /// A list with room for `capacity` items.
    pub fn with_capacity(py: Python<'py>, capacity: usize) -> PyResult<EventList<'py>> {
        let size = ffi::Py_ssize_t::try_from(capacity)
            .map_err(|_| PyOverflowError::new_err("too many events for one list"))?;
        // SAFETY: the GIL is held; `PyList_New` returns a new list of `size` NULL
        // items (which every list operation, deallocation included, accepts as
        // holes until set), or NULL with an exception set.
        let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(size)) }?;
        // SAFETY: a new list is tracked by the garbage collector; untracking it
        // keeps it, with its NULL holes, out of reach of Python code (a `gc`
        // callback walking `gc.get_objects()`) until `finish` has filled or cut
        // them. Meanwhile it holds only `Event`s, which hold no cycles.
        unsafe { ffi::PyObject_GC_UnTrack(list.as_ptr().cast()) };
        Ok(EventList {
            list: list.cast_into::<PyList>()?,
            capacity,
            len: 0,
        })
    }

    /// Stores `item` (an `Event`) in the next place, or appends it once the
    /// list is full.
    #[inline]
    pub fn push(&mut self, item: Bound<'py, PyAny>) -> PyResult<()> {
        debug_assert!(EventFields::of(&item).is_some());
        if self.len == self.capacity {
            self.list.append(item)?;
        } else {
            // SAFETY: `len < capacity`: a place of the list (still NULL); the
            // list takes over the reference `into_ptr` gives up, and returns 0.
            unsafe {
                ffi::PyList_SetItem(
                    self.list.as_ptr(),
                    self.len as ffi::Py_ssize_t,
                    item.into_ptr(),
                );
            }
        }
        self.len += 1;
        Ok(())
    }

    /// The list, without the places nothing was pushed to.
    pub fn finish(self) -> PyResult<Bound<'py, PyList>> {
        if self.len < self.capacity {
            self.list.del_slice(self.len, self.capacity)?;
        }
        // SAFETY: the list has no holes left; it is tracked again (as every list
        // is) before Python code can see it. (A list never untracks itself.)
        unsafe {
            if ffi::PyObject_GC_IsTracked(self.list.as_ptr()) == 0 {
                ffi::PyObject_GC_Track(self.list.as_ptr().cast());
            }
        }
        Ok(self.list)
    }
}

/// Freed `Event` blocks kept for the next events, at most
/// [`FreeBlocks::KEPT_MAX`] (3 MiB): a linked list through the blocks' first
/// word. Only `new_event` and `dealloc` touch it, both with the GIL held,
/// which orders every access; the atomics (relaxed loads and stores, never a
/// read-modify-write) only give the statics interior mutability. On a
/// free-threaded interpreter (no GIL) nothing is kept.
struct FreeBlocks;

/// A block on the free list.
#[repr(C)]
struct FreeBlock {
    next: *mut FreeBlock,
}

static FREE_HEAD: AtomicPtr<FreeBlock> = AtomicPtr::new(ptr::null_mut());
static FREE_COUNT: AtomicUsize = AtomicUsize::new(0);

impl FreeBlocks {
    /// Blocks kept at most: a full 65,536-slot ring's events.
    const KEPT_MAX: usize = if cfg!(Py_GIL_DISABLED) { 0 } else { 65_536 };

    /// A block for an `Event`: a kept one, or a new one from Python's object
    /// allocator (NULL with an exception set when that fails).
    #[inline]
    fn take(_py: Python<'_>) -> *mut RawEvent {
        let head = FREE_HEAD.load(Ordering::Relaxed);
        if head.is_null() {
            // SAFETY: the GIL is held (`_py`); `PyObject_Malloc` returns NULL
            // or a block of `size` bytes aligned for any object.
            return unsafe { ffi::PyObject_Malloc(std::mem::size_of::<RawEvent>()) }.cast();
        }
        // SAFETY: `head` is a block `give_back` put on the list (a dead
        // `Event`'s, from `PyObject_Malloc`), whose first word it set; the GIL
        // (held) keeps any other thread off the list meanwhile.
        let next = unsafe { (*head).next };
        FREE_HEAD.store(next, Ordering::Relaxed);
        FREE_COUNT.store(FREE_COUNT.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
        head.cast()
    }

    /// Keeps the block of a dead `Event`, or frees it when enough are kept.
    ///
    /// # Safety
    ///
    /// The GIL is held; `block` came from [`FreeBlocks::take`] and nothing
    /// refers to it any more.
    #[inline]
    unsafe fn give_back(block: *mut ffi::PyObject) {
        let count = FREE_COUNT.load(Ordering::Relaxed);
        if count < Self::KEPT_MAX {
            let block = block.cast::<FreeBlock>();
            // SAFETY: the block is at least a `RawEvent` (aligned for any
            // object) and unused (the caller's contract): its first word links it.
            unsafe {
                block.write(FreeBlock {
                    next: FREE_HEAD.load(Ordering::Relaxed),
                })
            };
            FREE_HEAD.store(block, Ordering::Relaxed);
            FREE_COUNT.store(count + 1, Ordering::Relaxed);
        } else {
            // SAFETY: a block from `PyObject_Malloc` (the caller's contract)
            // goes back to it, with the GIL held.
            unsafe { ffi::PyObject_Free(block.cast()) };
        }
    }
}

/// Makes an `Event`.
#[inline]
pub fn new_event<'py>(
    py: Python<'py>,
    kind: &Bound<'py, PyType>,
    source: &EventSource,
    timestamp_us: Option<u64>,
    category: Option<i32>,
    value: u64,
) -> PyResult<Bound<'py, PyAny>> {
    debug_assert!(event_type(py).is_ok_and(|t| t.is(kind)));
    let block = FreeBlocks::take(py);
    if block.is_null() {
        return Err(PyErr::fetch(py));
    }
    let flags = u32::from(timestamp_us.is_some()) * HAS_TIMESTAMP
        + u32::from(category.is_some()) * HAS_CATEGORY;
    let source = source.0.clone_ref(py).into_ptr();
    // SAFETY: `block` is an unused block of a `RawEvent`'s size; the fields are
    // written before `PyObject_Init` makes it an object of `kind` (whose
    // basic size is that size, `make_type`), which also takes a reference to
    // the (heap) type, released in `dealloc`. The object's one reference is
    // handed to the returned `Bound`.
    unsafe {
        ptr::addr_of_mut!((*block).timestamp_us).write(timestamp_us.unwrap_or(0));
        ptr::addr_of_mut!((*block).value).write(value);
        ptr::addr_of_mut!((*block).source).write(source);
        ptr::addr_of_mut!((*block).category).write(category.unwrap_or(0));
        ptr::addr_of_mut!((*block).flags).write(flags);
        let object = ffi::PyObject_Init(block.cast(), kind.as_type_ptr());
        Ok(Bound::from_owned_ptr(py, object))
    }
}

impl<'py> EventFields<'py> {
    /// The fields of `object` if it is an `Event`.
    pub fn of(object: &Bound<'py, PyAny>) -> Option<EventFields<'py>> {
        let py = object.py();
        let kind = event_type(py).ok()?;
        if !object.get_type().is(kind) {
            return None;
        }
        let raw = object.as_ptr().cast::<RawEvent>();
        // SAFETY: `object` is an `Event` (its exact type, which cannot be
        // subclassed), so its memory is a `RawEvent` made by `new_event`; the
        // fields never change after that, and `source` is a live reference.
        let (timestamp_us, value, source, category, flags) = unsafe {
            (
                (*raw).timestamp_us,
                (*raw).value,
                Bound::from_borrowed_ptr(py, (*raw).source),
                (*raw).category,
                (*raw).flags,
            )
        };
        let (name, agent) = match source.cast_into::<PyTuple>() {
            Ok(pair) => (pair.get_item(0).ok()?, Some(pair.get_item(1).ok()?)),
            Err(e) => (e.into_inner(), None),
        };
        Some(EventFields {
            timestamp_us: (flags & HAS_TIMESTAMP != 0).then_some(timestamp_us),
            category: (flags & HAS_CATEGORY != 0).then_some(category),
            name: name.cast_into().ok()?,
            value,
            agent: agent.and_then(|a| a.cast_into().ok()),
        })
    }

    /// The object `telemetry_reader --json` prints for this event.
    fn as_dict(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = PyDict::new(py);
        d.set_item("timestamp_us", self.timestamp_us)?;
        d.set_item("category", self.category.map(category_text))?;
        d.set_item("category_id", self.category)?;
        d.set_item("name", &self.name)?;
        d.set_item("value", self.value)?;
        if let Some(agent) = &self.agent {
            d.set_item("agent", agent)?;
        }
        Ok(d.into_any())
    }

    fn equals(&self, other: &EventFields<'py>) -> PyResult<bool> {
        let same_agent = match (&self.agent, &other.agent) {
            (None, None) => true,
            (Some(a), Some(b)) => a.as_any().eq(b)?,
            _ => false,
        };
        Ok(self.timestamp_us == other.timestamp_us
            && self.category == other.category
            && self.value == other.value
            && same_agent
            && self.name.as_any().eq(&other.name)?)
    }

    fn repr(&self) -> PyResult<String> {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "None".to_owned());
        let mut text = format!(
            "Event(timestamp_us={}, category={}, name={}, value={}",
            opt(self.timestamp_us.map(|t| t.to_string())),
            opt(self.category.map(category_text)),
            self.name.repr()?,
            self.value
        );
        if let Some(agent) = &self.agent {
            text.push_str(&format!(", agent={}", agent.repr()?));
        }
        text.push(')');
        Ok(text)
    }
}

/// `Event(timestamp_us, category, name, value, agent=None)`.
fn construct<'py>(
    py: Python<'py>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    const NAMES: [&str; 5] = ["timestamp_us", "category", "name", "value", "agent"];
    if args.len() > NAMES.len() {
        return Err(PyTypeError::new_err(format!(
            "Event() takes at most 5 arguments ({} given)",
            args.len()
        )));
    }
    let mut given: [Option<Bound<'py, PyAny>>; 5] = Default::default();
    for (i, arg) in args.iter().enumerate() {
        given[i] = Some(arg);
    }
    if let Some(kwargs) = kwargs {
        for (k, v) in kwargs.iter() {
            let key: String = k.extract()?;
            let Some(i) = NAMES.iter().position(|n| *n == key) else {
                return Err(PyTypeError::new_err(format!(
                    "Event() got an unexpected keyword argument '{key}'; accepted: {}",
                    NAMES.join(", ")
                )));
            };
            if given[i].is_some() {
                return Err(PyTypeError::new_err(format!(
                    "Event() got multiple values for argument '{key}'"
                )));
            }
            given[i] = Some(v);
        }
    }
    let [timestamp_us, category, name, value, agent] = given;
    let required = |v: Option<Bound<'py, PyAny>>, what: &str| {
        v.ok_or_else(|| PyTypeError::new_err(format!("Event() missing required argument '{what}'")))
    };
    let or_none = |v: Bound<'py, PyAny>| (!v.is_none()).then_some(v);
    let timestamp_us: Option<u64> = or_none(required(timestamp_us, "timestamp_us")?)
        .map(|v| v.extract())
        .transpose()?;
    let category: Option<i32> = or_none(required(category, "category")?)
        .map(|v| v.extract())
        .transpose()?;
    let name = required(name, "name")?.cast_into::<PyString>()?;
    let value: u64 = required(value, "value")?.extract()?;
    let agent = agent
        .and_then(or_none)
        .map(|a| a.cast_into::<PyString>())
        .transpose()?;
    let source = EventSource::new(py, &name, agent.as_ref())?;
    new_event(py, event_type(py)?, &source, timestamp_us, category, value)
}

/// Runs a slot's safe body: an error is raised (NULL returned), a panic becomes
/// a `RuntimeError` instead of unwinding into the interpreter. The interpreter
/// calls slots with the thread attached; `Python::try_attach` tells PyO3 so (it
/// then releases references at once instead of deferring them). It declines
/// only while the interpreter finalizes (a `repr` from a late `__del__`): the
/// body then runs on the thread's existing attachment all the same.
fn slot_call(body: impl FnOnce(Python<'_>) -> PyResult<*mut ffi::PyObject>) -> *mut ffi::PyObject {
    let run = |py: Python<'_>| {
        let result = catch_unwind(AssertUnwindSafe(|| body(py))).unwrap_or_else(|_| {
            Err(PyRuntimeError::new_err(
                "nixl_telemetry: internal error (a panic) in Event; please report it",
            ))
        });
        match result {
            Ok(object) => object,
            Err(e) => {
                e.restore(py);
                ptr::null_mut()
            }
        }
    };
    let mut run = Some(run);
    let attached = Python::try_attach(|py| run.take().map(|run| run(py)));
    match (attached.flatten(), run) {
        (Some(object), _) => object,
        // SAFETY: slot functions are called by the interpreter on a thread
        // that holds the GIL; PyO3 declined to record that only because the
        // interpreter is finalizing.
        (None, Some(run)) => run(unsafe { Python::assume_attached() }),
        (None, None) => ptr::null_mut(),
    }
}

/// Runs `body` over the fields of `slf`, an `Event` (slot functions of the type
/// are called only with its instances).
fn with_fields(
    slf: *mut ffi::PyObject,
    body: impl for<'py> FnOnce(Python<'py>, EventFields<'py>) -> PyResult<Bound<'py, PyAny>>,
) -> *mut ffi::PyObject {
    slot_call(|py| {
        // SAFETY: `slf` is a live object the interpreter lends for this call.
        let object = unsafe { Bound::from_borrowed_ptr(py, slf) };
        let fields = EventFields::of(&object)
            .ok_or_else(|| PyTypeError::new_err("expected an nixl_telemetry.Event"))?;
        body(py, fields).map(Bound::into_ptr)
    })
}

unsafe extern "C" fn dealloc(slf: *mut ffi::PyObject) {
    // SAFETY: the interpreter calls this once, when the last reference to an
    // `Event` (a `RawEvent` from `new_event`) goes; its `source` reference and
    // the reference to its heap type taken by `PyObject_Init` are released,
    // and the block is kept for another `Event` or freed (`FreeBlocks`); the
    // GIL is held, as for every slot function.
    unsafe {
        let kind = ffi::Py_TYPE(slf);
        ffi::Py_DECREF((*slf.cast::<RawEvent>()).source);
        FreeBlocks::give_back(slf);
        ffi::Py_DECREF(kind.cast());
    }
}

unsafe extern "C" fn tp_new(
    _kind: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    slot_call(|py| {
        // SAFETY: the interpreter passes a tuple of arguments and NULL or a
        // dict of keyword arguments, both alive for this call.
        let (args, kwargs) = unsafe {
            (
                Bound::from_borrowed_ptr(py, args).cast_into::<PyTuple>()?,
                (!kwargs.is_null())
                    .then(|| Bound::from_borrowed_ptr(py, kwargs).cast_into::<PyDict>())
                    .transpose()?,
            )
        };
        construct(py, &args, kwargs.as_ref()).map(Bound::into_ptr)
    })
}

unsafe extern "C" fn get_timestamp_us(
    slf: *mut ffi::PyObject,
    _: *mut c_void,
) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| {
        Ok(e.timestamp_us.into_pyobject(py)?.into_any())
    })
}

unsafe extern "C" fn get_category(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| {
        Ok(category_object(py, e.category)?.into_bound(py))
    })
}

unsafe extern "C" fn get_category_name(
    slf: *mut ffi::PyObject,
    _: *mut c_void,
) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| {
        Ok(e.category.map(category_text).into_pyobject(py)?.into_any())
    })
}

unsafe extern "C" fn get_name(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    with_fields(slf, |_, e| Ok(e.name.into_any()))
}

unsafe extern "C" fn get_value(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| Ok(e.value.into_pyobject(py)?.into_any()))
}

unsafe extern "C" fn get_agent(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| Ok(e.agent.into_pyobject(py)?.into_any()))
}

unsafe extern "C" fn method_as_dict(
    slf: *mut ffi::PyObject,
    _: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| e.as_dict(py))
}

unsafe extern "C" fn repr(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| Ok(PyString::new(py, &e.repr()?).into_any()))
}

unsafe extern "C" fn richcompare(
    slf: *mut ffi::PyObject,
    other: *mut ffi::PyObject,
    op: c_int,
) -> *mut ffi::PyObject {
    with_fields(slf, |py, e| {
        // SAFETY: `other` is a live object the interpreter lends for this call.
        let other = unsafe { Bound::from_borrowed_ptr(py, other) };
        let equal = match (op, EventFields::of(&other)) {
            (ffi::Py_EQ | ffi::Py_NE, Some(o)) => e.equals(&o)?,
            (ffi::Py_EQ | ffi::Py_NE, None) => false,
            _ => return Ok(py.NotImplemented().into_bound(py)),
        };
        Ok(pyo3::types::PyBool::new(py, equal == (op == ffi::Py_EQ))
            .to_owned()
            .into_any())
    })
}

/// Builds the type from its spec (the tables live for the program: the type
/// keeps pointers into them).
fn make_type(py: Python<'_>) -> PyResult<Py<PyType>> {
    fn getter(name: &'static CStr, doc: &'static CStr, get: ffi::getter) -> ffi::PyGetSetDef {
        ffi::PyGetSetDef {
            name: name.as_ptr(),
            get: Some(get),
            set: None,
            doc: doc.as_ptr(),
            closure: ptr::null_mut(),
        }
    }
    let getset: &'static mut [ffi::PyGetSetDef] = Box::leak(Box::new([
        getter(
            c"timestamp_us",
            c"Microseconds since the Unix epoch, or None where the ring version has none.",
            get_timestamp_us,
        ),
        getter(
            c"category",
            c"A Category member, an int for an unknown number, or None where the ring version has none.",
            get_category,
        ),
        getter(
            c"category_name",
            c"The category as the readers print it (TRANSFER, UNKNOWN_CATEGORY_9), or None.",
            get_category_name,
        ),
        getter(c"name", c"The event's name.", get_name),
        getter(c"value", c"The per-operation reading.", get_value),
        getter(
            c"agent",
            c"The agent (the ring file's name) when read from a directory, else None.",
            get_agent,
        ),
        ffi::PyGetSetDef::default(),
    ]));
    let methods: &'static mut [ffi::PyMethodDef] = Box::leak(Box::new([
        ffi::PyMethodDef {
            ml_name: c"as_dict".as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                PyCFunction: method_as_dict,
            },
            ml_flags: ffi::METH_NOARGS,
            ml_doc: c"The object `telemetry_reader --json` prints for this event.".as_ptr(),
        },
        ffi::PyMethodDef::zeroed(),
    ]));
    let slot = |slot: c_int, pfunc: *mut c_void| ffi::PyType_Slot { slot, pfunc };
    let slots: &'static mut [ffi::PyType_Slot] = Box::leak(Box::new([
        slot(ffi::Py_tp_dealloc, dealloc as *mut c_void),
        slot(ffi::Py_tp_new, tp_new as *mut c_void),
        slot(ffi::Py_tp_repr, repr as *mut c_void),
        slot(ffi::Py_tp_richcompare, richcompare as *mut c_void),
        slot(
            ffi::Py_tp_hash,
            ffi::PyObject_HashNotImplemented as *mut c_void,
        ),
        slot(ffi::Py_tp_getset, getset.as_mut_ptr().cast()),
        slot(ffi::Py_tp_methods, methods.as_mut_ptr().cast()),
        slot(
            ffi::Py_tp_doc,
            c"Event(timestamp_us, category, name, value, agent=None): one event read from a ring."
                .as_ptr() as *mut c_void,
        ),
        slot(0, ptr::null_mut()),
    ]));
    const NAME: &CStr = c"nixl_telemetry._native.Event";
    let spec: &'static mut ffi::PyType_Spec = Box::leak(Box::new(ffi::PyType_Spec {
        name: NAME.as_ptr() as *const c_char,
        basicsize: std::mem::size_of::<RawEvent>() as c_int,
        itemsize: 0,
        flags: ffi::Py_TPFLAGS_DEFAULT as _,
        slots: slots.as_mut_ptr(),
    }));
    // SAFETY: the spec and its tables are valid and live forever (leaked
    // above, once per interpreter); the GIL is held. The result is a new
    // reference to a type, or NULL with an exception set.
    let kind = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpec(spec)) }?;
    Ok(kind.cast_into::<PyType>()?.unbind())
}
