//! Where events come from: one ring file, or a directory of them (one per
//! agent, picked up as they appear), and the messages for broken files.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nixl_telemetry::ring::error_message as describe;
use nixl_telemetry::ring::{
    agent_name, python_sort_key, FileIdentity, ReadMode, RefusalCause, RingDirectory, RingError,
    RingReader, ScanRules, TrailerInfo,
};

use super::format::Framing;
use super::Log;

/// A problem with the input: the message names the path, what is wrong and
/// what is accepted. The reader exits with status 2.
#[derive(Debug)]
pub struct InputError(pub String);

/// One open ring file and what was read from it.
pub struct Ring {
    /// The reader; `None` once the file was retired (removed or replaced).
    pub reader: Option<RingReader>,
    /// The path as given or found.
    pub path: PathBuf,
    /// The agent's display name.
    pub agent: String,
    /// The bytes around each of its events.
    pub framing: Framing,
    ident: FileIdentity,
    /// The slot the next batch starts at (used in warnings).
    pub cursor: u64,
    /// Well-formed events read.
    pub events_read: u64,
    /// Malformed slots skipped.
    pub malformed: u64,
    /// Malformed slots warned about.
    pub warned_slots: u32,
    retiring: bool,
    /// Closed to bound the open descriptors (directory mode with many
    /// rings); opened again for its next read.
    parked: bool,
    /// The version in the header.
    pub version: i32,
    /// The number of slots.
    pub capacity: u64,
    /// Unread events when the file was opened.
    pub unread_at_open: u64,
    last_trailer: Option<TrailerInfo>,
}

impl Ring {
    /// Opens and validates `path`.
    pub fn open(
        path: &Path,
        agent: String,
        mode: ReadMode,
        tagged: bool,
    ) -> Result<Ring, RingError> {
        // Look before opening: a FIFO or a device must not be opened at all.
        let meta = std::fs::metadata(path).map_err(|e| RingError::Open {
            path: path.to_owned(),
            source: e,
        })?;
        if !meta.is_file() {
            return Err(RingError::NotRegularFile {
                path: path.to_owned(),
            });
        }
        let reader = RingReader::open(path, mode)?;
        let header = reader.header()?;
        let framing = Framing::new(tagged.then_some(agent.as_str()));
        let capacity = reader.capacity();
        let last_trailer = reader.trailer();
        Ok(Ring {
            reader: Some(reader),
            path: path.to_owned(),
            agent,
            framing,
            ident: identity_of(&meta),
            cursor: header.read_pos & (capacity - 1),
            events_read: 0,
            malformed: 0,
            warned_slots: 0,
            retiring: false,
            parked: false,
            version: header.version,
            capacity,
            unread_at_open: header.write_pos.wrapping_sub(header.read_pos) & (capacity - 1),
            last_trailer,
        })
    }

    /// Closes the file to free its descriptor; [`Ring::unpark`] opens it
    /// again. The counters, the position and the last trailer stay.
    pub fn park(&mut self) {
        if self.reader.is_some() {
            self.trailer();
            self.reader = None;
            self.parked = true;
        }
    }

    /// Opens a parked ring's file again (peeking: at the slot where it
    /// stopped). If the path now names another file, or none, the ring is
    /// marked for retirement instead and stays closed (the next scan says so
    /// too). Any other failure is the input's: the ring was valid and no
    /// longer is.
    pub fn unpark(&mut self, mode: ReadMode) -> Result<(), String> {
        if !self.parked || self.retiring {
            return Ok(());
        }
        let same_file = std::fs::metadata(&self.path)
            .map(|m| identity_of(&m) == self.ident)
            .unwrap_or(false);
        if !same_file {
            self.retiring = true;
            return Ok(());
        }
        let mut reader = RingReader::open(&self.path, mode).map_err(|e| describe(&e, mode))?;
        if mode == ReadMode::Peek {
            reader
                .resume_peek_at(self.cursor)
                .map_err(|e| describe(&e, mode))?;
        }
        self.reader = Some(reader);
        self.parked = false;
        Ok(())
    }

    /// Closes a ring whose file was removed or replaced, after its last read,
    /// keeping its last trailer for the totals.
    fn finish(&mut self) {
        self.trailer();
        self.reader = None;
    }

    /// The trailer as it is now (or as it was when the file was retired).
    pub fn trailer(&mut self) -> Option<TrailerInfo> {
        if let Some(reader) = &self.reader {
            self.last_trailer = reader.trailer();
        }
        self.last_trailer
    }

    /// Logs the producer line from the trailer, when there is one (or a
    /// warning about a trailer that is ignored).
    pub fn log_trailer(&mut self, log: &Log, prefix: &str) {
        if let Some(problem) = self.reader.as_ref().and_then(|r| r.trailer_problem()) {
            log.warn(format_args!(
                "{}: unrecognised trailer ignored ({problem})",
                self.path.display()
            ));
        }
        if let Some(t) = self.trailer() {
            log.info(format_args!(
                "{prefix}Producer: pid {}, {}, {} events written, {} lost",
                t.producer_pid,
                t.state(),
                t.events_written,
                t.events_lost()
            ));
        }
    }
}

/// The identity of the file `meta` describes.
fn identity_of(meta: &std::fs::Metadata) -> FileIdentity {
    FileIdentity {
        device: meta.dev(),
        inode: meta.ino(),
    }
}

/// The rings being read: one file, or every ring of a directory.
pub enum Source {
    /// One ring file.
    File(Box<FileSource>),
    /// A directory of ring files.
    Dir(DirSource),
}

/// One ring file, followed across its replacement: a producer that starts
/// again under the same agent name and cannot adopt the ring it finds (another
/// layout or capacity) puts a new file in its place, and the reader moves on
/// to it after finishing the old one.
pub struct FileSource {
    path: PathBuf,
    mode: ReadMode,
    ring: Ring,
    /// Rings of files that were replaced, read to their end.
    done: Vec<Ring>,
    /// Why the file now under the path could not be opened (warned once per reason).
    rejected: Option<String>,
}

impl FileSource {
    /// Marks the ring for retirement when the path now names another file;
    /// warns (once per reason) when it names something that is no ring file
    /// at all (a FIFO, a device, a link to one), and keeps reading the old one.
    fn check_replaced(&mut self, log: &Log) {
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return;
        };
        if identity_of(&meta) == self.ring.ident {
            return;
        }
        if meta.is_file() {
            self.ring.retiring = true;
            return;
        }
        let reason = describe(
            &RingError::NotRegularFile {
                path: self.path.clone(),
            },
            self.mode,
        );
        if self.rejected.as_deref() != Some(reason.as_str()) {
            log.warn(format_args!(
                "cannot follow the replaced ring file: {reason}"
            ));
            self.rejected = Some(reason);
        }
    }

    /// After the old file's last read: opens the new one and reads on there.
    fn retire(&mut self, log: &Log) {
        if !self.ring.retiring {
            return;
        }
        let agent = self.ring.agent.clone();
        match Ring::open(&self.path, agent, self.mode, false).map_err(|e| describe(&e, self.mode)) {
            Ok(new) => {
                self.rejected = None;
                let mut old = std::mem::replace(&mut self.ring, new);
                old.finish();
                self.done.push(old);
                let ring = &mut self.ring;
                log.info(format_args!(
                    "{}: ring file replaced; finished reading the old one, now reading the new one \
                     (version {}, capacity {} events, {} events unread)",
                    self.path.display(),
                    ring.version,
                    ring.capacity,
                    ring.unread_at_open
                ));
                ring.log_trailer(log, "");
            }
            Err(reason) => {
                // Keep reading the old file; try again at the next poll.
                self.ring.retiring = false;
                if self.rejected.as_deref() != Some(reason.as_str()) {
                    log.warn(format_args!(
                        "cannot follow the replaced ring file: {reason}"
                    ));
                    self.rejected = Some(reason);
                }
            }
        }
    }
}

impl Source {
    /// Opens `path`: a directory is read in directory mode, anything else as a ring file.
    pub fn open(path: &Path, mode: ReadMode, log: &Log) -> Result<Source, InputError> {
        if path.is_dir() {
            return DirSource::open(path, mode, log).map(Source::Dir);
        }
        let agent = agent_name(path.file_name().unwrap_or(path.as_os_str()));
        let mut ring =
            Ring::open(path, agent, mode, false).map_err(|e| InputError(describe(&e, mode)))?;
        log.info(format_args!("Telemetry path: {}", path.display()));
        log.info(format_args!("Ring version: {}", ring.version));
        log.info(format_args!("Buffer capacity: {} events", ring.capacity));
        log.info(format_args!(
            "Current events in buffer: {}",
            ring.unread_at_open
        ));
        ring.log_trailer(log, "");
        Ok(Source::File(Box::new(FileSource {
            path: path.to_owned(),
            mode,
            ring,
            done: Vec::new(),
            rejected: None,
        })))
    }

    /// How many rings may be open at once: a quarter of the soft limit on
    /// open files (`/proc/self/limits`) per two descriptors a ring may hold
    /// (the Python reader's mapping keeps one), at most 256, at least 1.
    pub fn ring_budget() -> usize {
        let soft = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("Max open files"))
                    .and_then(|l| l.split_whitespace().nth(3))
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .unwrap_or(1024);
        (soft / 8).clamp(1, 256) as usize
    }

    /// Whether events carry their agent's name (directory mode).
    pub fn tagged(&self) -> bool {
        matches!(self, Source::Dir(_))
    }

    /// Picks up new rings (directory mode) and returns the open ones in order.
    pub fn rings(&mut self, log: &Log) -> Result<&mut [Ring], InputError> {
        match self {
            Source::File(file) => {
                file.check_replaced(log);
                Ok(std::slice::from_mut(&mut file.ring))
            }
            Source::Dir(dir) => {
                dir.scan(log, true)?;
                Ok(&mut dir.open)
            }
        }
    }

    /// Closes rings whose file was removed or replaced, after their last read
    /// (one file: and opens the file that replaced it).
    pub fn retire(&mut self, log: &Log) {
        match self {
            Source::File(file) => file.retire(log),
            Source::Dir(dir) => dir.retire(log),
        }
    }

    /// Every ring ever opened: retired ones first, then the open ones in order.
    pub fn all_rings(&mut self) -> Vec<&mut Ring> {
        match self {
            Source::File(file) => file.done.iter_mut().chain([&mut file.ring]).collect(),
            Source::Dir(dir) => dir.done.iter_mut().chain(dir.open.iter_mut()).collect(),
        }
    }
}

/// Directory mode: every regular file in the directory is an agent's ring.
///
/// At most [`Source::ring_budget`] rings are open at a time: with more, each
/// ring is closed after it was read and opened again for its next read, so
/// any number of agents is read within the limit on open files.
pub struct DirSource {
    directory: RingDirectory,
    mode: ReadMode,
    budget: usize,
    open: Vec<Ring>,
    done: Vec<Ring>,
}

impl DirSource {
    fn open(path: &Path, mode: ReadMode, log: &Log) -> Result<DirSource, InputError> {
        let mut dir = DirSource {
            directory: RingDirectory::new(path, ScanRules::Readers),
            mode,
            budget: Source::ring_budget(),
            open: Vec::new(),
            done: Vec::new(),
        };
        dir.scan(log, false)?;
        if dir.open.is_empty() {
            return Err(InputError(format!(
                "{}: directory holds no ring files ({} other files skipped); accepted: a \
                 directory with at least one NIXL ring file",
                path.display(),
                dir.directory.refusals().count()
            )));
        }
        log.info(format_args!("Telemetry directory: {}", path.display()));
        for ring in &mut dir.open {
            announce(ring, log);
        }
        Ok(dir)
    }

    fn scan(&mut self, log: &Log, announce_new: bool) -> Result<(), InputError> {
        let scan = self.directory.scan().map_err(|e| {
            let path = self.directory.path().display();
            InputError(if e.source.kind() == ErrorKind::NotFound {
                format!("{path}: directory no longer exists; expected a directory of ring files")
            } else {
                format!(
                    "{path}: cannot list the directory ({}); expected a readable directory of \
                     ring files",
                    e.source
                )
            })
        })?;
        let present = &scan.files;
        for ring in &mut self.open {
            let name = ring.path.file_name().unwrap_or_default();
            let still = present
                .iter()
                .any(|f| f.name == name && f.identity == ring.ident);
            if !still {
                ring.retiring = true;
            }
        }
        for file in present {
            if self
                .open
                .iter()
                .any(|r| r.path.file_name() == Some(file.name.as_os_str()))
            {
                continue;
            }
            // Validating a new ring takes a descriptor: free one first.
            if self.open.iter().filter(|r| r.reader.is_some()).count() >= self.budget {
                if let Some(ring) = self.open.iter_mut().find(|r| r.reader.is_some()) {
                    ring.park();
                }
            }
            match Ring::open(&file.path, file.agent(), self.mode, true) {
                Ok(mut ring) => {
                    self.directory.accept(&file.name);
                    if announce_new {
                        announce(&mut ring, log);
                    }
                    self.open.push(ring);
                }
                Err(err) => {
                    let reason = describe(&err, self.mode);
                    if self
                        .directory
                        .refuse(&file.name, RefusalCause::of(&err), reason.clone())
                    {
                        log.warn(format_args!("skipping {reason}"));
                    }
                }
            }
        }
        self.open
            .sort_by_cached_key(|r| python_sort_key(r.path.file_name().unwrap_or_default()));
        Ok(())
    }

    fn retire(&mut self, log: &Log) {
        let mut index = 0;
        while index < self.open.len() {
            if self.open[index].retiring {
                let mut ring = self.open.remove(index);
                ring.finish();
                log.info(format_args!(
                    "Agent {}: ring file removed or replaced; finished reading it",
                    ring.agent
                ));
                self.done.push(ring);
            } else {
                index += 1;
            }
        }
    }
}

fn announce(ring: &mut Ring, log: &Log) {
    log.info(format_args!(
        "Agent {}: ring opened (version {}, capacity {} events, {} events unread)",
        ring.agent, ring.version, ring.capacity, ring.unread_at_open
    ));
    let prefix = format!("Agent {}: ", ring.agent);
    ring.log_trailer(log, &prefix);
}
