//! The owner's side: on every scrape, read every store of the directory and
//! render each rank as its own series.
//!
//! Nothing in the directory is trusted. A file named like a store is opened
//! without following links and without blocking, and is skipped (with one
//! warning per file) unless it is a regular file of this user with the
//! store's exact size, magic, version and header. It is copied with `pread`
//! (never mapped: a file truncated under the reader cannot fault it), and
//! every field is read with bounds checks. What is published is one reading
//! per label set ([`label_sets`]: a restarted rank with
//! the same labels goes on from its predecessor's totals, a copy is not
//! published). A store whose writer has released it (its lock can be taken),
//! whose last update is older than the stale TTL and which no published
//! series needs any more is reaped; a file that is not a store of ours is
//! never removed.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nixl_telemetry_abi::Category;
use nixl_telemetry_metrics::{histogram, HistogramTotals, Series, Totals};
use nixl_telemetry_prometheus::external::BodySource;
use nixl_telemetry_prometheus::{AgentLabels, Format};

use crate::files;
use crate::label_sets::{self, Found, MAX_CONTINUED};
use crate::layout::{
    self, decode_text, entry, off, read_u32, read_u64, text_len, BUCKET_SLOTS, FILE_SIZE,
    FIXED_READINGS, MAX_BOUNDS, MAX_SERIES, SERIES_ENTRY,
};
use crate::store::now_ms;

/// Copies of a store taken while its writer published, before giving up.
const READ_ATTEMPTS: usize = 16;

/// One store as read.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreReading {
    /// The exporter's listen address.
    pub listen: String,
    /// The host name.
    pub hostname: String,
    /// The agent's name.
    pub agent_name: String,
    /// Last update, ms since the epoch.
    pub updated_ms: u64,
    /// Creation, ms since the epoch: with the labels, what tells an
    /// exporter's life (a copy of its store has the same).
    pub created_ms: u64,
    /// The publish sequence the copy was taken at (grows with every publish).
    pub seq: u64,
    /// The process id.
    pub pid: u32,
    /// The exporter's ordinal in its process.
    pub agent_instance: u32,
    /// The local rank, if set.
    pub local_rank: Option<String>,
    /// The rank's totals (the smallest and largest histogram values are not
    /// stored; events are not counted).
    pub totals: Totals,
}

impl StoreReading {
    /// The rank's labels, as its series carry them: `agent_name`,
    /// `hostname`, `pid`, `agent_instance`, then `local_rank` if set.
    pub fn labels(&self) -> AgentLabels {
        let pid = self.pid.to_string();
        let instance = self.agent_instance.to_string();
        let mut labels = vec![
            ("agent_name", self.agent_name.as_str()),
            ("hostname", self.hostname.as_str()),
            ("pid", pid.as_str()),
            ("agent_instance", instance.as_str()),
        ];
        if let Some(rank) = &self.local_rank {
            labels.push(("local_rank", rank));
        }
        AgentLabels::new(labels, self.totals.histogram(0).bounds())
    }
}

/// Why a file was not read as a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Not a regular file (a link, FIFO, directory, device...).
    NotRegular(&'static str),
    /// Owned by another user.
    ForeignOwner(u32),
    /// Not of a store's size.
    Size(u64),
    /// Not a store of this layout.
    Format(String),
    /// Still being published after every attempt.
    Busy,
    /// Could not be opened or read.
    Io(String),
    /// Removed between listing and opening (not worth a warning).
    Vanished,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::NotRegular(kind) => write!(f, "not a regular file ({kind})"),
            Skip::ForeignOwner(uid) => write!(f, "owned by another user (uid {uid})"),
            Skip::Size(n) => write!(f, "{n} bytes, a store has {FILE_SIZE}"),
            Skip::Format(why) => write!(f, "not a store of this layout: {why}"),
            Skip::Busy => write!(f, "its writer kept publishing during every read"),
            Skip::Io(e) => write!(f, "cannot be read: {e}"),
            Skip::Vanished => write!(f, "removed while being read"),
        }
    }
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Opens `path` as an untrusted store and checks its kind, owner and size.
pub fn open_store(path: &Path, uid: u32) -> Result<File, Skip> {
    let file = files::open_untrusted(path).map_err(|e| {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            Skip::NotRegular("a symbolic link")
        } else if e.kind() == io::ErrorKind::NotFound {
            Skip::Vanished
        } else {
            Skip::Io(e.to_string())
        }
    })?;
    let meta = file.metadata().map_err(|e| Skip::Io(e.to_string()))?;
    if !meta.is_file() {
        return Err(Skip::NotRegular(kind_of(&meta)));
    }
    if meta.uid() != uid {
        return Err(Skip::ForeignOwner(meta.uid()));
    }
    if meta.len() != FILE_SIZE as u64 {
        return Err(Skip::Size(meta.len()));
    }
    Ok(file)
}

fn format_error(why: impl Into<String>) -> Skip {
    Skip::Format(why.into())
}

/// Reads a consistent copy of the store behind `file` (already checked by
/// [`open_store`]).
pub fn read_store(file: &File) -> Result<StoreReading, Skip> {
    let io = |e: io::Error| Skip::Io(e.to_string());
    let mut head = vec![0u8; off::SERIES];
    let read_seq = || -> Result<u64, Skip> {
        let mut seq = [0u8; 8];
        file.read_exact_at(&mut seq, off::SEQ as u64).map_err(io)?;
        Ok(u64::from_ne_bytes(seq))
    };
    for _ in 0..READ_ATTEMPTS {
        // The sequence number is read on its own, before the rest: within one
        // copy (one `pread`) the kernel may load the bytes in any order (x86's
        // fast string moves do), so a sequence number copied together with the
        // values could be newer than some of them.
        let seq = read_seq()?;
        if seq & 1 == 1 {
            std::thread::yield_now();
            continue;
        }
        fence(Ordering::Acquire);
        file.read_exact_at(&mut head, 0).map_err(io)?;
        if head[off::MAGIC..off::MAGIC + 8] != layout::MAGIC {
            return Err(format_error("wrong magic"));
        }
        let version = read_u32(&head, off::VERSION).unwrap_or(0);
        if version != layout::VERSION {
            return Err(format_error(format!(
                "layout version {version}, this reader reads {}",
                layout::VERSION
            )));
        }
        if read_u32(&head, off::HEADER_LEN) != Some(off::SERIES as u32)
            || read_u64(&head, off::FILE_SIZE) != Some(FILE_SIZE as u64)
        {
            return Err(format_error("wrong header length or file size field"));
        }
        let count = read_u32(&head, off::SERIES_COUNT).unwrap_or(u32::MAX) as usize;
        if count > MAX_SERIES {
            return Err(format_error(format!(
                "{count} series, at most {MAX_SERIES}"
            )));
        }
        let mut entries = vec![0u8; count * SERIES_ENTRY];
        file.read_exact_at(&mut entries, off::SERIES as u64)
            .map_err(io)?;
        fence(Ordering::Acquire);
        if read_seq()? != seq {
            std::thread::yield_now();
            continue;
        }
        return parse(&head, &entries, count, seq);
    }
    Err(Skip::Busy)
}

fn parse(head: &[u8], entries: &[u8], count: usize, seq: u64) -> Result<StoreReading, Skip> {
    let bad = |what: &str| format_error(format!("bad {what}"));
    let text = |offset, size, what: &str| decode_text(head, offset, size).ok_or_else(|| bad(what));
    let listen = text(off::LISTEN, text_len::LISTEN, "listen address")?;
    let hostname = text(off::HOSTNAME, text_len::HOSTNAME, "host name")?;
    let agent_name = text(off::AGENT, text_len::AGENT, "agent name")?;
    let rank = text(off::RANK, text_len::RANK, "local rank")?;
    let has_rank = read_u32(head, off::HAS_RANK).ok_or_else(|| bad("rank flag"))? == 1;
    let local_rank = has_rank.then_some(rank);
    let pid = read_u32(head, off::PID).ok_or_else(|| bad("pid"))?;
    let agent_instance = read_u32(head, off::AGENT_INSTANCE).ok_or_else(|| bad("instance"))?;
    let updated_ms = read_u64(head, off::UPDATED_MS).ok_or_else(|| bad("update time"))?;
    let created_ms = read_u64(head, off::CREATED_MS).ok_or_else(|| bad("creation time"))?;
    let bound_count = read_u32(head, off::BOUND_COUNT).ok_or_else(|| bad("bound count"))? as usize;
    if bound_count == 0 || bound_count > MAX_BOUNDS {
        return Err(bad("bound count"));
    }
    let mut bounds = Vec::with_capacity(bound_count);
    for i in 0..bound_count {
        let b = f64::from_bits(read_u64(head, off::BOUNDS + 8 * i).ok_or_else(|| bad("bound"))?);
        if !b.is_finite() || b <= 0.0 || bounds.last().is_some_and(|&p| b <= p) {
            return Err(bad("bounds"));
        }
        bounds.push(b);
    }
    let mut fixed = [0u64; FIXED_READINGS];
    for (i, v) in fixed.iter_mut().enumerate() {
        *v = read_u64(head, layout::fixed(i)).ok_or_else(|| bad("reading"))?;
    }
    let bounds: Arc<[f64]> = bounds.into();
    debug_assert!(bound_count < BUCKET_SLOTS);
    let histograms = [0, 1].map(|h| {
        let counts = (0..=bound_count)
            .map(|b| read_u64(head, layout::bucket(h, b)).unwrap_or(0))
            .collect::<Vec<u64>>();
        let sum = fixed[nixl_telemetry_metrics::families::HISTOGRAMS[h].sum_slot];
        HistogramTotals::from_counts(Arc::clone(&bounds), counts, sum)
    });
    let mut series = Vec::with_capacity(count);
    let mut values = Vec::with_capacity(count);
    for i in 0..count {
        let at = SERIES_ENTRY * i;
        let value = read_u64(entries, at + entry::VALUE).ok_or_else(|| bad("series"))?;
        let category = read_u32(entries, at + entry::CATEGORY).ok_or_else(|| bad("series"))?;
        let kind = read_u32(entries, at + entry::KIND).ok_or_else(|| bad("series"))?;
        let name = decode_text(entries, at + entry::NAME, text_len::SERIES_NAME)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("series name"))?;
        series.push(match kind {
            layout::KIND_ERROR => Series::Error {
                status: name.into(),
            },
            layout::KIND_COUNTER if valid_metric_name(&name) => Series::Counter {
                sample: name.into(),
                category: Category(category as i32),
            },
            _ => return Err(bad("series kind or name")),
        });
        values.push(value);
    }
    const _: () = assert!(histogram::COUNT == 2);
    Ok(StoreReading {
        listen,
        hostname,
        agent_name,
        updated_ms,
        created_ms,
        seq,
        pid,
        agent_instance,
        local_rank,
        totals: Totals::from_parts(fixed, histograms, series.into(), values, 0),
    })
}

/// A counter name from a file must be a valid metric name: it goes into the
/// exposition unquoted.
fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a scan of the directory found.
#[derive(Debug, Default)]
pub struct ScanOutcome {
    /// What is published, one reading per label set (the stores of one
    /// label set merged: see [`label_sets`]), in the order
    /// they are rendered.
    pub stores: Vec<StoreReading>,
    /// Files skipped, with the reason.
    pub skipped: Vec<(PathBuf, Skip)>,
    /// Stores reaped.
    pub reaped: Vec<PathBuf>,
    /// Live stores of other addresses.
    pub other_runs: Vec<(PathBuf, String)>,
    /// Copies of another store of the same life (same labels and creation
    /// time): not published.
    pub copies: Vec<PathBuf>,
    /// Released stores kept past their TTL because a restarted rank with
    /// the same labels goes on from their totals.
    pub continued: Vec<PathBuf>,
    /// Live stores whose labels another live store has too (their sum is
    /// published).
    pub live_twins: Vec<PathBuf>,
    /// Released stores let go beyond [`MAX_CONTINUED`]
    /// restarts of one label set.
    pub over_limit: Vec<PathBuf>,
}

/// Reads the directory of one run for the owner of one address.
#[derive(Debug)]
pub struct Collector {
    dir: PathBuf,
    listen: String,
    uid: u32,
    stale_ttl: Duration,
    /// Files already warned about (each is reported once).
    warned: Mutex<HashSet<PathBuf>>,
    /// Whether failing to list the directory was reported (until it works again).
    warned_listing: AtomicBool,
    renders: AtomicU64,
    /// The published label sets' labels, escaped and laid out once: a label
    /// set and its bounds make the same lines on every scrape. Only those of
    /// the last rendering are kept.
    labels: Mutex<Vec<CachedLabels>>,
}

/// A published label set's labels and what they were made from.
#[derive(Debug)]
struct CachedLabels {
    pid: u32,
    agent_instance: u32,
    agent_name: String,
    hostname: String,
    local_rank: Option<String>,
    bounds: Vec<f64>,
    labels: AgentLabels,
}

impl CachedLabels {
    fn of(store: &StoreReading) -> CachedLabels {
        CachedLabels {
            pid: store.pid,
            agent_instance: store.agent_instance,
            agent_name: store.agent_name.clone(),
            hostname: store.hostname.clone(),
            local_rank: store.local_rank.clone(),
            bounds: store.totals.histogram(0).bounds().to_vec(),
            labels: store.labels(),
        }
    }

    /// Whether these are `store`'s labels and bounds (the numbers first:
    /// the texts are compared only for the same pid and instance).
    fn matches(&self, store: &StoreReading) -> bool {
        self.pid == store.pid
            && self.agent_instance == store.agent_instance
            && self.agent_name == store.agent_name
            && self.hostname == store.hostname
            && self.local_rank == store.local_rank
            && self.bounds == store.totals.histogram(0).bounds()
    }
}

impl Collector {
    /// A collector of `dir` for the owner of `listen`, trusting files of `uid`.
    pub fn new(dir: PathBuf, listen: String, uid: u32, stale_ttl: Duration) -> Collector {
        Collector {
            dir,
            listen,
            uid,
            stale_ttl,
            warned: Mutex::new(HashSet::new()),
            warned_listing: AtomicBool::new(false),
            renders: AtomicU64::new(0),
            labels: Mutex::new(Vec::new()),
        }
    }

    /// Reads every store, selects what is published (one reading per label
    /// set) and reaps the released, stale stores nothing needs any more.
    pub fn scan(&self) -> io::Result<ScanOutcome> {
        let mut out = ScanOutcome::default();
        let now = now_ms();
        let ttl = self.stale_ttl.as_millis() as u64;
        let mut opened: Vec<(PathBuf, File)> = Vec::new();
        let mut found: Vec<Found> = Vec::new();
        for path in files::store_paths(&self.dir)? {
            let file = match open_store(&path, self.uid) {
                Ok(f) => f,
                Err(Skip::Vanished) => continue,
                Err(skip) => {
                    out.skipped.push((path, skip));
                    continue;
                }
            };
            let store = match read_store(&file) {
                Ok(s) => s,
                Err(skip) => {
                    out.skipped.push((path, skip));
                    continue;
                }
            };
            // Taking the lock of a released store keeps it until the scan
            // ends (the check before a removal); a probe that fails for
            // another reason counts as live, so nothing is removed on it.
            let live = file.try_lock().is_err();
            if store.listen != self.listen {
                // Another run's store, or a rank given another port: if its
                // writer is alive it is a misconfiguration; it is not ours to
                // publish or reap either way.
                if live {
                    out.other_runs.push((path, store.listen));
                }
                continue;
            }
            found.push(Found {
                reading: store,
                live,
            });
            opened.push((path, file));
        }
        let selection = label_sets::select(&found, now, ttl);
        for &i in &selection.reap {
            // Released and stale: reap it, if the name still is this file.
            let (path, file) = &opened[i];
            let same = std::fs::symlink_metadata(path)
                .ok()
                .zip(file.metadata().ok())
                .is_some_and(|(a, b)| a.ino() == b.ino() && a.dev() == b.dev());
            if same && std::fs::remove_file(path).is_ok() {
                out.reaped.push(path.clone());
            }
        }
        let paths = |indices: &[usize]| -> Vec<PathBuf> {
            indices.iter().map(|&i| opened[i].0.clone()).collect()
        };
        out.copies = paths(&selection.copies);
        out.continued = paths(&selection.continued);
        out.live_twins = paths(&selection.live_twins);
        out.over_limit = paths(&selection.over_limit);
        out.stores = selection.published;
        Ok(out)
    }

    /// Scans and reports what is worth reporting (each file once).
    pub fn collect(&self) -> Vec<StoreReading> {
        let outcome = match self.scan() {
            Ok(o) => o,
            Err(e) => {
                if !self.warned_listing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "prometheus_mp cannot list its directory; scrapes show no rank until it can (reported once)");
                }
                return Vec::new();
            }
        };
        self.warned_listing.store(false, Ordering::Relaxed);
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        for (path, skip) in &outcome.skipped {
            if warned.insert(path.clone()) {
                tracing::warn!(file = %path.display(), reason = %skip, "prometheus_mp skips a file of its directory (reported once)");
            }
        }
        for (path, other) in &outcome.other_runs {
            if warned.insert(path.clone()) {
                tracing::warn!(
                    file = %path.display(),
                    its_address = %other,
                    our_address = %self.listen,
                    "a live process exports to another address from this prometheus_mp directory: two runs share one NIXL_TELEMETRY_MULTIPROC_DIR; give each run its own"
                );
            }
        }
        for path in &outcome.copies {
            if warned.insert(path.clone()) {
                tracing::warn!(file = %path.display(), "prometheus_mp does not publish a copy of a store (the same labels and creation time as another); it is removed once released and stale (reported once)");
            }
        }
        for path in &outcome.live_twins {
            if warned.insert(path.clone()) {
                tracing::warn!(
                    file = %path.display(),
                    "two live processes export with the same labels (agent_name, hostname, pid, agent_instance, local_rank), as ranks in PID namespaces of their own with one host name, agent name and rank would; prometheus_mp publishes their sum as one series; give each rank its own agent name or rank (reported once)"
                );
            }
        }
        for path in &outcome.continued {
            if warned.insert(path.clone()) {
                tracing::info!(file = %path.display(), "prometheus_mp: a rank restarted with the same labels goes on from this released store's totals, kept while the rank lives");
            }
        }
        for path in &outcome.over_limit {
            if warned.insert(path.clone()) {
                tracing::warn!(
                    file = %path.display(),
                    limit = MAX_CONTINUED,
                    "a rank restarted with the same labels more often than prometheus_mp keeps stores for, each time within the stale TTL; its oldest store is let go and its series drops by that store's totals (reported once)"
                );
            }
        }
        for path in &outcome.reaped {
            warned.remove(path);
            tracing::info!(file = %path.display(), "prometheus_mp reaped a released, stale store");
        }
        outcome.stores
    }
}

impl BodySource for Collector {
    fn key(&self) -> (u64, u64) {
        // Stores change without telling: every scrape reads them again.
        (self.renders.fetch_add(1, Ordering::Relaxed), 0)
    }

    fn render(&self, format: Format) -> Vec<u8> {
        let stores = self.collect();
        let mut cache = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        // The label sets published now, in order, each found in (or added
        // to) the cache: one scan of it per label set (tens to hundreds).
        let mut kept = Vec::with_capacity(stores.len());
        for store in &stores {
            let labels = match cache.iter().position(|c| c.matches(store)) {
                Some(i) => cache.swap_remove(i),
                None => CachedLabels::of(store),
            };
            kept.push(labels);
        }
        *cache = kept;
        let agents: Vec<(&AgentLabels, &Totals)> = cache
            .iter()
            .zip(&stores)
            .map(|(c, s)| (&c.labels, &s.totals))
            .collect();
        nixl_telemetry_prometheus::render(&agents, format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StoreIdentity, StoreWriter};
    use nixl_telemetry_abi::Event;
    use nixl_telemetry_metrics::{slot, Buckets};

    const LISTEN: &str = "127.0.0.1:9";
    const TTL: Duration = Duration::from_millis(300);

    /// Rank 0 as pid 1 of a PID namespace of its own.
    fn rank_zero(dir: &Path) -> StoreWriter {
        let identity = StoreIdentity {
            listen: LISTEN.to_owned(),
            hostname: "node".to_owned(),
            agent_name: "rank-0".to_owned(),
            pid: 1,
            agent_instance: 0,
            local_rank: Some("0".to_owned()),
        };
        // Two lives of a rank start at least a millisecond apart.
        std::thread::sleep(Duration::from_millis(3));
        StoreWriter::create(dir, &identity, &Buckets::new(&[10.0, 100.0]).unwrap()).unwrap()
    }

    fn tx(bytes: u64) -> [Event; 2] {
        [
            Event::new(1, Category::TRANSFER, "agent_tx_bytes", bytes),
            Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 5),
        ]
    }

    fn collector(writer: &StoreWriter, dir: &Path) -> Collector {
        Collector::new(
            dir.to_owned(),
            LISTEN.to_owned(),
            writer.uid().unwrap(),
            TTL,
        )
    }

    /// The one published reading's bytes sent and last bytes sent.
    fn only_tx(outcome: &ScanOutcome) -> (u64, u64) {
        let rows: Vec<(u64, u64)> = outcome
            .stores
            .iter()
            .map(|s| {
                (
                    s.totals.fixed(slot::TX_BYTES),
                    s.totals.fixed(slot::TX_LAST),
                )
            })
            .collect();
        assert_eq!(rows.len(), 1, "one sample per label set: {rows:?}");
        rows[0]
    }

    fn stores_in(dir: &Path) -> usize {
        files::store_paths(dir).unwrap().len()
    }

    #[test]
    fn ranks_sharing_pid_and_instance_each_render_with_their_own_labels() {
        // Ranks in PID namespaces of their own: all pid 1, instance 0; the
        // labels kept between scrapes must never be swapped.
        let dir = tempfile::tempdir().unwrap();
        let mut writers: Vec<StoreWriter> = (0..3)
            .map(|rank| {
                let identity = StoreIdentity {
                    listen: LISTEN.to_owned(),
                    hostname: "node".to_owned(),
                    agent_name: format!("rank-{rank}"),
                    pid: 1,
                    agent_instance: 0,
                    local_rank: Some(rank.to_string()),
                };
                StoreWriter::create(dir.path(), &identity, &Buckets::new(&[10.0]).unwrap()).unwrap()
            })
            .collect();
        for (rank, w) in writers.iter_mut().enumerate() {
            w.record(&tx(1000 + rank as u64));
        }
        let collector = collector(&writers[0], dir.path());
        for _ in 0..3 {
            let text = String::from_utf8(collector.render(Format::Text)).unwrap();
            for rank in 0..3 {
                let line = format!(
                    "agent_tx_bytes_total{{agent_name=\"rank-{rank}\",hostname=\"node\",pid=\"1\",agent_instance=\"0\",local_rank=\"{rank}\"}} {}\n",
                    1000 + rank
                );
                assert!(text.contains(&line), "{line} missing in:\n{text}");
            }
        }
    }

    #[test]
    fn a_rank_restarted_as_the_same_pid_is_one_series_past_its_predecessors_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = rank_zero(dir.path());
        first.record(&tx(4096));
        drop(first);
        let mut second = rank_zero(dir.path());
        second.record(&tx(8192));
        let collector = collector(&second, dir.path());
        let outcome = collector.scan().unwrap();
        assert_eq!(only_tx(&outcome), (4096 + 8192, 8192));
        // Past the predecessor's TTL: still counted, still there.
        std::thread::sleep(TTL + Duration::from_millis(100));
        second.heartbeat(now_ms());
        let outcome = collector.scan().unwrap();
        assert_eq!(only_tx(&outcome), (4096 + 8192, 8192));
        assert!(outcome.reaped.is_empty());
        assert_eq!(stores_in(dir.path()), 2);
        // Both go together once the rank has ended and its TTL has run out.
        drop(second);
        std::thread::sleep(TTL + Duration::from_millis(100));
        let outcome = collector.scan().unwrap();
        assert!(outcome.stores.is_empty());
        assert_eq!(outcome.reaped.len(), 2);
        assert_eq!(stores_in(dir.path()), 0);
    }

    #[test]
    fn a_copy_beside_its_live_store_is_not_published_and_goes_once_stale() {
        let dir = tempfile::tempdir().unwrap();
        let mut live = rank_zero(dir.path());
        live.record(&tx(4096));
        let copy = dir.path().join("nixl-mp.1.0.0.store");
        std::fs::copy(live.path(), &copy).unwrap();
        live.record(&tx(8192));
        let collector = collector(&live, dir.path());
        let outcome = collector.scan().unwrap();
        assert_eq!(only_tx(&outcome), (4096 + 8192, 8192));
        assert!(outcome.reaped.is_empty());
        std::thread::sleep(TTL + Duration::from_millis(100));
        live.heartbeat(now_ms());
        let outcome = collector.scan().unwrap();
        assert_eq!(only_tx(&outcome), (4096 + 8192, 8192));
        assert_eq!(outcome.reaped, [copy]);
        assert!(live.path().exists());
    }
}
