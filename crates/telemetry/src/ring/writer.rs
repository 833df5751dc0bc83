//! The producer side of a ring file, in any of the layouts NIXL shipped.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nixl_telemetry_abi::ring::{self as layout, trailer, EventKey, RingLayout};
use nixl_telemetry_abi::Event;

use super::error::RingError;
use super::mapping::{reserve_blocks, Mapping};
use crate::clock;

/// Running totals the producer keeps in the ring's trailer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrailerCounts {
    /// Events lost because a recording thread's staging buffer was full.
    pub dropped_staging_full: u64,
}

/// What became of one batch handed to [`RingWriter::push`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushOutcome {
    /// Events written into the ring.
    pub written: usize,
    /// Events dropped because the ring was full.
    pub dropped_full: usize,
    /// Events dropped because the ring's version has no event type for them.
    pub dropped_format: usize,
}

/// Writes events into a ring file that it created and holds, in one of the
/// layouts of [`nixl_telemetry_abi::ring`] (version 1 unless asked otherwise).
///
/// In layouts that store event types instead of names, an event whose name
/// has no type in the layout's table is dropped and counted
/// ([`PushOutcome::dropped_format`]), never written as something else.
///
/// Creating one never follows a symbolic link and refuses a file another live
/// producer holds (an advisory `flock` on the file marks it live for as long as
/// the writer exists). A file left by a producer that is gone is never
/// discarded with events in it: a ring of the same layout and capacity is
/// adopted (writing goes on after its `write_pos`, its trailer totals go on
/// counting), a ring of another layout with unread events is moved aside to
/// `<agent>.stale-<µs>` and marked stale ([`trailer::FLAG_STALE`]), and only an
/// empty ring or a file that is no ring at all is replaced.
pub struct RingWriter {
    path: PathBuf,
    map: Mapping,
    file: File,
    /// Bytes mapped: the whole file as created.
    mapped: u64,
    /// The file was found shorter than the mapping (truncated by someone
    /// else): nothing is written into the mapping any more.
    cut: bool,
    capacity: u64,
    mask: u64,
    layout: &'static RingLayout,
    trailer_at: usize,
    write_pos: u64,
    cached_read: u64,
    written: u64,
    dropped_ring_full: u64,
    dropped_format: u64,
    /// Staging drops counted in the trailer by the producers this ring had
    /// before it was adopted: added to this producer's own.
    inherited_staging_full: u64,
    /// Slots encoded for a layout other than version 1.
    encoded: Vec<u8>,
}

fn nofollow_open(path: &Path, create_new: bool) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if create_new {
        opts.create_new(true).mode(0o644);
    }
    opts.open(path)
}

fn try_lock(file: &File, path: &Path) -> Result<bool, RingError> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(RingError::io(path, "lock the ring file", e)),
    }
}

/// Waits between attempts of [`lock_existing`]: 31 ms in all, far longer than
/// a spawned child takes to reach `exec`, even on a loaded machine.
const LOCK_RETRY_WAITS_MS: [u64; 5] = [1, 2, 4, 8, 16];

/// [`try_lock`] on a ring file another producer may hold, tried again for a
/// short while before it counts as busy. The lock belongs to the open file
/// description, which a child forked by any thread of the process that last
/// held it shares until the child execs or exits. A producer that has just
/// shut down can therefore look alive for a moment, while another thread is
/// spawning a process. A second live producer is still reported; it just
/// takes the waits longer.
fn lock_existing(file: &File, path: &Path) -> Result<bool, RingError> {
    for wait in LOCK_RETRY_WAITS_MS {
        if try_lock(file, path)? {
            return Ok(true);
        }
        std::thread::sleep(std::time::Duration::from_millis(wait));
    }
    try_lock(file, path)
}

/// Whether `path` still names the file `file` is open on (same device and inode).
fn still_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Reads the producer pid from an existing file's trailer, if it has one.
fn trailer_pid(file: &File) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let at = trailer_offset(file)?;
    let mut b = [0u8; 4];
    file.read_exact_at(&mut b, at + trailer::PRODUCER_PID as u64)
        .ok()
        .map(|()| u32::from_le_bytes(b))
}

/// Where an existing file's trailer starts, if it has one.
fn trailer_offset(file: &File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let u32_at = |at: u64| {
        let mut b = [0u8; 4];
        file.read_exact_at(&mut b, at)
            .ok()
            .map(|()| u32::from_le_bytes(b))
    };
    let mut header = [0u8; layout::HEADER_SIZE];
    file.read_exact_at(&mut header, 0).ok()?;
    let field = |at: usize| header[at..at + 8].try_into().ok().map(u64::from_le_bytes);
    let capacity = field(layout::CAPACITY_OFFSET)?;
    let version = u32_at(layout::VERSION_OFFSET as u64)? as i32;
    let size = file.metadata().ok()?.len();
    let magic_at = |at: u64| {
        let mut magic = [0u8; 8];
        file.read_exact_at(&mut magic, at).is_ok() && magic == layout::TRAILER_MAGIC
    };
    let at = layout::detect(version, capacity, size, magic_at)
        .ok()?
        .data_size(capacity)?;
    magic_at(at).then_some(at)
}

/// A ring left by a producer that is gone, which a new producer can continue.
struct AdoptableRing {
    capacity: u64,
    write_pos: u64,
    read_pos: u64,
}

/// What to do with the file a producer that is gone left under the ring's name.
enum StaleRing {
    /// A ring in the layout and capacity asked for, written by this project
    /// (with a trailer), positions in range: continue it.
    Adoptable(AdoptableRing),
    /// A ring of another layout or capacity (or without a trailer) whose
    /// reader has not caught up: keep it, under another name.
    Unread,
    /// An empty ring, or a file that is no ring a reader could read: nothing
    /// would be lost by replacing it.
    Disposable,
}

/// Looks at the file left under the ring's name (its lock held).
fn inspect_stale(file: &File, capacity: u64, wanted: &'static RingLayout) -> StaleRing {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; layout::HEADER_SIZE];
    if file.read_exact_at(&mut header, 0).is_err() {
        return StaleRing::Disposable;
    }
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
    let i32_at = |at: usize| i32::from_le_bytes(header[at..at + 4].try_into().unwrap_or_default());
    let (write_pos, read_pos) = (
        u64_at(layout::WRITE_POS_OFFSET),
        u64_at(layout::READ_POS_OFFSET),
    );
    let found_capacity = u64_at(layout::CAPACITY_OFFSET);
    let Ok(size) = file.metadata().map(|m| m.len()) else {
        return StaleRing::Disposable;
    };
    let bytes_at = |at: u64, out: &mut [u8]| file.read_exact_at(out, at).is_ok();
    let magic_at = |at: u64| {
        let mut magic = [0u8; 8];
        bytes_at(at, &mut magic) && magic == layout::TRAILER_MAGIC
    };
    let is_ring = found_capacity.is_power_of_two()
        && found_capacity >= 2
        && u64_at(layout::MASK_OFFSET) == found_capacity - 1
        && write_pos < found_capacity
        && read_pos < found_capacity;
    let Some(found) = is_ring
        .then(|| {
            layout::detect(
                i32_at(layout::VERSION_OFFSET),
                found_capacity,
                size,
                magic_at,
            )
            .ok()
        })
        .flatten()
    else {
        return StaleRing::Disposable;
    };
    let trailer_at = found.data_size(found_capacity);
    let own_trailer = trailer_at.is_some_and(|at| {
        let mut fields = [0u8; 8];
        magic_at(at)
            && bytes_at(at + trailer::VERSION as u64, &mut fields)
            && u32::from_le_bytes(fields[..4].try_into().unwrap_or_default())
                == layout::TRAILER_VERSION
            && u32::from_le_bytes(fields[4..].try_into().unwrap_or_default()) as usize
                == layout::TRAILER_SIZE
    });
    if found == wanted
        && found_capacity == capacity
        && own_trailer
        && found.file_size_with_trailer(capacity) == Some(size)
        && i32_at(layout::EXPECTED_VERSION_OFFSET) == found.version
    {
        StaleRing::Adoptable(AdoptableRing {
            capacity,
            write_pos,
            read_pos,
        })
    } else if write_pos == read_pos {
        StaleRing::Disposable
    } else {
        StaleRing::Unread
    }
}

/// Moves the stale ring at `path` (its lock held through `file`) to
/// `<agent>.stale-<µs>` in `dir`, where directory readers still read it, after
/// marking its trailer (when it has one) stale. Never replaces another file.
fn move_aside(file: &File, path: &Path, dir: &Path, agent: &str) -> Result<(), RingError> {
    use std::os::unix::fs::FileExt;
    if let Some(at) = trailer_flags_offset(file) {
        let mut flags = [0u8; 4];
        if file.read_exact_at(&mut flags, at).is_ok() {
            let marked = u32::from_le_bytes(flags) | trailer::FLAG_STALE;
            file.write_all_at(&marked.to_le_bytes(), at)
                .map_err(|e| RingError::io(path, "mark the stale ring file", e))?;
        }
    }
    for attempt in 0..100u64 {
        let suffix = format!(".stale-{}", clock::system_now_us() + attempt);
        // A file name has at most 255 bytes: shorten the agent's part if needed.
        let mut keep = agent.len().min(255 - suffix.len());
        while !agent.is_char_boundary(keep) {
            keep -= 1;
        }
        let aside = dir.join(format!("{}{suffix}", &agent[..keep]));
        match std::fs::hard_link(path, &aside) {
            Ok(()) => {
                std::fs::remove_file(path)
                    .map_err(|e| RingError::io(path, "move the stale ring file aside", e))?;
                tracing::warn!(
                    path = %path.display(),
                    moved_to = %aside.display(),
                    "the ring left by a producer that is gone has unread events but another \
                     layout or capacity: moved aside (readers of the directory still read it) \
                     and a new ring created"
                );
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(RingError::io(&aside, "move the stale ring file aside", e)),
        }
    }
    Err(RingError::io(
        path,
        "move the stale ring file aside",
        std::io::Error::new(ErrorKind::AlreadyExists, "every name tried is taken"),
    ))
}

/// Where the flags of an existing file's trailer are, if it has one.
fn trailer_flags_offset(file: &File) -> Option<u64> {
    trailer_offset(file).map(|at| at + trailer::FLAGS as u64)
}

impl RingWriter {
    /// Creates the version-1 ring `<dir>/<agent>` with room for `capacity`
    /// slots (a power of two ≥ 2; the ring holds at most `capacity − 1` events).
    pub fn create(dir: &Path, agent: &str, capacity: usize) -> Result<RingWriter, RingError> {
        Self::create_with_layout(dir, agent, capacity, &layout::V1)
    }

    /// Creates `<dir>/<agent>` in `ring_layout` (one of
    /// [`layout::LAYOUTS`]), as [`RingWriter::create`] does.
    pub fn create_with_layout(
        dir: &Path,
        agent: &str,
        capacity: usize,
        ring_layout: &'static RingLayout,
    ) -> Result<RingWriter, RingError> {
        assert!(
            capacity.is_power_of_two() && capacity >= 2,
            "capacity must be a power of two >= 2"
        );
        let path = dir.join(agent);
        // A few rounds: a competing creator can slip in between our check and
        // our link, or replace the stale file we are locking; the next round
        // then sees its file and reports it.
        for _ in 0..3 {
            let stale = match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(RingError::Symlink { path })
                }
                Ok(meta) if !meta.file_type().is_file() => {
                    return Err(RingError::NotRegularFile { path })
                }
                Ok(_) => {
                    let old = nofollow_open(&path, false)
                        .map_err(|e| RingError::io(&path, "open the existing ring file", e))?;
                    if !lock_existing(&old, &path)? {
                        return Err(RingError::InUse {
                            pid: trailer_pid(&old),
                            path,
                        });
                    }
                    // The lock is ours, but is the file still the ring's? A
                    // creator that locked it first may have replaced it and
                    // let go of it since: look again.
                    if !still_named(&old, &path) {
                        continue;
                    }
                    match inspect_stale(&old, capacity as u64, ring_layout) {
                        StaleRing::Adoptable(found) => {
                            return Self::adopt(path, old, found, ring_layout);
                        }
                        StaleRing::Unread => {
                            move_aside(&old, &path, dir, agent)?;
                            // The path is free now; the next round creates.
                            drop(old);
                            continue;
                        }
                        StaleRing::Disposable => Some(old),
                    }
                }
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(RingError::io(&path, "inspect the ring path", e)),
            };
            // Short, whatever the agent's name (which may take all 255 bytes
            // a file name has), and unique within the process and over time.
            static TEMPORARIES: AtomicU64 = AtomicU64::new(0);
            let tmp = dir.join(format!(
                ".nixl-ring.{}.{}.{}.tmp",
                std::process::id(),
                clock::system_now_us(),
                TEMPORARIES.fetch_add(1, Ordering::Relaxed)
            ));
            let file = nofollow_open(&tmp, true)
                .map_err(|e| RingError::io(&tmp, "create the ring file", e))?;
            let result = Self::initialise(&tmp, file, capacity, ring_layout).and_then(|writer| {
                let placed = if stale.is_some() {
                    // We hold the dead producer's lock: replace its file atomically.
                    std::fs::rename(&tmp, &path)
                } else {
                    // Fails with AlreadyExists if someone created the path meanwhile.
                    std::fs::hard_link(&tmp, &path)
                };
                placed.map(|()| writer).map_err(RingErrorOrIo::Io)
            });
            match result {
                Ok(mut writer) => {
                    let _ = std::fs::remove_file(&tmp);
                    writer.path = path;
                    return Ok(writer);
                }
                Err(RingErrorOrIo::Io(e)) if e.kind() == ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_file(&tmp);
                    continue;
                }
                Err(RingErrorOrIo::Io(e)) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(RingError::io(&path, "place the ring file", e));
                }
                Err(RingErrorOrIo::Ring(e)) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e);
                }
            }
        }
        Err(RingError::InUse { path, pid: None })
    }

    fn initialise(
        tmp: &Path,
        file: File,
        capacity: usize,
        ring_layout: &'static RingLayout,
    ) -> Result<RingWriter, RingErrorOrIo> {
        if !try_lock(&file, tmp)? {
            return Err(RingError::InUse {
                path: tmp.to_owned(),
                pid: None,
            }
            .into());
        }
        let cap = capacity as u64;
        let size = ring_layout
            .file_size_with_trailer(cap)
            .expect("capacity bounded by config");
        file.set_len(size)
            .map_err(|e| RingError::io(tmp, "size the ring file", e))?;
        reserve_blocks(&file, size)
            .map_err(|e| RingError::io(tmp, "reserve disk space for the ring file", e))?;
        let map = Mapping::read_write(&file, size as usize)
            .map_err(|e| RingError::io(tmp, "map the ring file", e))?;
        let trailer_at = ring_layout.data_size(cap).expect("checked above") as usize;
        // The file is new and zero-filled; only non-zero fields need writing.
        map.i32_at(layout::VERSION_OFFSET)
            .store(ring_layout.version, Ordering::Relaxed);
        map.i32_at(layout::EXPECTED_VERSION_OFFSET)
            .store(ring_layout.version, Ordering::Relaxed);
        map.u64_at(layout::CAPACITY_OFFSET)
            .store(cap, Ordering::Relaxed);
        map.u64_at(layout::MASK_OFFSET)
            .store(cap - 1, Ordering::Relaxed);
        map.write_bytes(trailer_at + trailer::MAGIC, &layout::TRAILER_MAGIC);
        map.u32_at(trailer_at + trailer::VERSION)
            .store(layout::TRAILER_VERSION, Ordering::Relaxed);
        map.u32_at(trailer_at + trailer::SIZE)
            .store(layout::TRAILER_SIZE as u32, Ordering::Relaxed);
        map.u32_at(trailer_at + trailer::PRODUCER_PID)
            .store(std::process::id(), Ordering::Relaxed);
        map.u64_at(trailer_at + trailer::CREATED_US)
            .store(clock::system_now_us(), Ordering::Relaxed);
        // Publish the header before the file becomes visible under its name.
        map.u64_at(layout::WRITE_POS_OFFSET)
            .store(0, Ordering::Release);
        Ok(RingWriter {
            path: tmp.to_owned(),
            map,
            file,
            mapped: size,
            cut: false,
            capacity: cap,
            mask: cap - 1,
            layout: ring_layout,
            trailer_at,
            write_pos: 0,
            cached_read: 0,
            written: 0,
            dropped_ring_full: 0,
            dropped_format: 0,
            inherited_staging_full: 0,
            encoded: Vec::new(),
        })
    }

    /// Takes over the ring a producer that is gone left at `path` (its
    /// lock is held through `file`), in the layout and capacity asked for:
    /// what it wrote and no reader consumed stays readable, writing goes on
    /// after its `write_pos`, and its trailer totals go on counting.
    fn adopt(
        path: PathBuf,
        file: File,
        found: AdoptableRing,
        ring_layout: &'static RingLayout,
    ) -> Result<RingWriter, RingError> {
        let size = ring_layout
            .file_size_with_trailer(found.capacity)
            .expect("checked when inspected");
        let map = Mapping::read_write(&file, size as usize)
            .map_err(|e| RingError::io(&path, "map the ring file", e))?;
        let trailer_at = ring_layout
            .data_size(found.capacity)
            .expect("checked when inspected") as usize;
        let total = |field: usize| map.u64_at(trailer_at + field).load(Ordering::Relaxed);
        let (written, dropped_ring_full, dropped_format, inherited_staging_full) = (
            total(trailer::EVENTS_WRITTEN),
            total(trailer::DROPPED_RING_FULL),
            total(trailer::DROPPED_FORMAT),
            total(trailer::DROPPED_STAGING_FULL),
        );
        map.u32_at(trailer_at + trailer::PRODUCER_PID)
            .store(std::process::id(), Ordering::Relaxed);
        map.u32_at(trailer_at + trailer::FLAGS).fetch_and(
            !(trailer::FLAG_CLOSED | trailer::FLAG_STALE),
            Ordering::Release,
        );
        tracing::info!(
            path = %path.display(),
            unread = found.write_pos.wrapping_sub(found.read_pos) & (found.capacity - 1),
            "adopted the ring of a producer that is gone: its unread events are kept"
        );
        Ok(RingWriter {
            path,
            map,
            file,
            mapped: size,
            cut: false,
            capacity: found.capacity,
            mask: found.capacity - 1,
            layout: ring_layout,
            trailer_at,
            write_pos: found.write_pos,
            cached_read: found.read_pos,
            written,
            dropped_ring_full,
            dropped_format,
            inherited_staging_full,
            encoded: Vec::new(),
        })
    }

    /// The ring file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Events written since creation.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Events dropped because the ring was full, since creation.
    pub fn dropped_ring_full(&self) -> u64 {
        self.dropped_ring_full
    }

    /// Events dropped because the layout has no event type for them, since creation.
    pub fn dropped_format(&self) -> u64 {
        self.dropped_format
    }

    /// The file's layout.
    pub fn layout(&self) -> &'static RingLayout {
        self.layout
    }

    fn free_slots(&self) -> u64 {
        // Full when (write + 1) & mask == read: capacity − 1 usable slots.
        self.cached_read
            .wrapping_sub(self.write_pos)
            .wrapping_sub(1)
            & self.mask
    }

    /// Whether the file was found truncated by someone else: the writer then
    /// writes nothing more (a write into the mapping past the file's end
    /// would be a SIGBUS that ends the host).
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// Checks (one `fstat`) that the file still holds everything mapped;
    /// remembers when it does not.
    fn still_whole(&mut self) -> bool {
        if !self.cut {
            let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
            self.cut = size < self.mapped;
        }
        !self.cut
    }

    /// Writes as many of `events` as fit, in order, then publishes `write_pos`
    /// once with release ordering. Events that do not fit are dropped and
    /// counted. Returns how many were written: none if the file was
    /// truncated under the writer ([`RingWriter::is_cut`]). See
    /// [`RingWriter::push`] for the drop causes.
    pub fn push_batch(&mut self, events: &[Event]) -> usize {
        self.push(events).written
    }

    /// Writes `events` as [`RingWriter::push_batch`] does and says what became
    /// of each: written, dropped because the ring was full, or dropped because
    /// the layout has no event type for it (checked first, so such an event
    /// never takes a slot). Nothing is written, and nothing counted, when
    /// the file was truncated under the writer.
    pub fn push(&mut self, events: &[Event]) -> PushOutcome {
        if !self.still_whole() {
            return PushOutcome::default();
        }
        let (slots, dropped_format) = if self.layout == &layout::V1 {
            (events.len(), 0)
        } else {
            let slots = self.encode(events);
            (slots, events.len() - slots)
        };
        if (self.free_slots() as usize) < slots {
            // A reader may have advanced: re-read its position (masked, so a
            // hostile value can never move us outside the slots).
            self.cached_read = self
                .map
                .u64_at(layout::READ_POS_OFFSET)
                .load(Ordering::Acquire)
                & self.mask;
        }
        let n = slots.min(self.free_slots() as usize);
        let start = self.write_pos as usize;
        let first = n.min(self.capacity as usize - start);
        let first_at = self.layout.slot_offset(start as u64) as usize;
        if self.layout == &layout::V1 {
            self.map.write_events(first_at, &events[..first]);
            self.map
                .write_events(layout::HEADER_SIZE, &events[first..n]);
        } else {
            let size = self.layout.slot.size;
            self.map
                .write_bytes(first_at, &self.encoded[..first * size]);
            self.map
                .write_bytes(layout::HEADER_SIZE, &self.encoded[first * size..n * size]);
        }
        self.write_pos = (self.write_pos + n as u64) & self.mask;
        self.map
            .u64_at(layout::WRITE_POS_OFFSET)
            .store(self.write_pos, Ordering::Release);
        self.written += n as u64;
        let dropped_full = slots - n;
        self.dropped_ring_full += dropped_full as u64;
        self.dropped_format += dropped_format as u64;
        PushOutcome {
            written: n,
            dropped_full,
            dropped_format,
        }
    }

    /// Encodes the events the layout has a type (or a name) for into
    /// `encoded`, in order; returns how many.
    fn encode(&mut self, events: &[Event]) -> usize {
        let slot = self.layout.slot;
        self.encoded.clear();
        let mut count = 0;
        for event in events {
            let key = match slot.key {
                EventKey::Name(_) => None,
                EventKey::Type(_) => match self.layout.event_type_of(event.name_bytes()) {
                    Some(t) => Some(t),
                    None => continue,
                },
            };
            let at = self.encoded.len();
            self.encoded.resize(at + slot.size, 0);
            let out = &mut self.encoded[at..at + slot.size];
            if let Some(ts) = slot.timestamp {
                out[ts..ts + 8].copy_from_slice(&event.timestamp_us.to_le_bytes());
            }
            if let Some(c) = slot.category {
                out[c..c + 4].copy_from_slice(&event.category.to_le_bytes());
            }
            match slot.key {
                EventKey::Name(n) => {
                    out[n..n + event.event_name.len()].copy_from_slice(&event.event_name)
                }
                EventKey::Type(t) => {
                    let number = key.unwrap_or_default(); // Some: others were skipped
                    out[t..t + 4].copy_from_slice(&number.to_le_bytes())
                }
            }
            out[slot.value..slot.value + 8].copy_from_slice(&event.value.to_le_bytes());
            count += 1;
        }
        count
    }

    /// Stores the writer's own running totals in the trailer.
    fn store_totals(&self) {
        let t = self.trailer_at;
        self.map
            .u64_at(t + trailer::EVENTS_WRITTEN)
            .store(self.written, Ordering::Relaxed);
        self.map
            .u64_at(t + trailer::DROPPED_RING_FULL)
            .store(self.dropped_ring_full, Ordering::Relaxed);
        self.map
            .u64_at(t + trailer::DROPPED_FORMAT)
            .store(self.dropped_format, Ordering::Relaxed);
    }

    /// Stores the running totals and a heartbeat in the trailer.
    pub fn update_trailer(&mut self, counts: &TrailerCounts) {
        if !self.still_whole() {
            return;
        }
        let t = self.trailer_at;
        self.store_totals();
        self.map.u64_at(t + trailer::DROPPED_STAGING_FULL).store(
            self.inherited_staging_full
                .wrapping_add(counts.dropped_staging_full),
            Ordering::Relaxed,
        );
        self.map
            .u64_at(t + trailer::LAST_FLUSH_US)
            .store(clock::now_us(), Ordering::Release);
    }
}

impl Drop for RingWriter {
    fn drop(&mut self) {
        if !self.still_whole() {
            return;
        }
        self.store_totals();
        self.map
            .u32_at(self.trailer_at + trailer::FLAGS)
            .fetch_or(trailer::FLAG_CLOSED, Ordering::Release);
    }
}

enum RingErrorOrIo {
    Ring(RingError),
    Io(std::io::Error),
}

impl From<RingError> for RingErrorOrIo {
    fn from(e: RingError) -> Self {
        RingErrorOrIo::Ring(e)
    }
}

impl From<std::io::Error> for RingErrorOrIo {
    fn from(e: std::io::Error) -> Self {
        RingErrorOrIo::Io(e)
    }
}
