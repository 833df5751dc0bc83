//! The sidecar's loop: scan the directory when it changed, read every ring
//! (again at once when one was more than half full), export, flush, drop
//! the series of agents gone for longer than the grace time; at a stop,
//! drain and flush.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nixl_telemetry::clock;
use nixl_telemetry::ring::{
    FileIdentity, FileStamp, ReadMode, RefusalCause, RingDirectory, RingError, RingFile,
    RingReader, ScanRules,
};
use nixl_telemetry::{Event, Exporter};

use super::agent::Agent;
use super::own_series::{self, OwnSeries};
use super::ring::FollowedRing;
use super::schedule::{next_delay, RingLoad};
use super::settings::Settings;
use super::watch::{DirectoryWatch, OpenedEarly, MAX_WAITING, SAFETY_RESCAN};
use nixl_telemetry::ring::error_message as describe;

/// How often the sidecar's own figures are reported.
pub const OWN_REPORT_EVERY: Duration = Duration::from_secs(1);
/// The most events read from one ring in one pass (the others are read
/// before it is read again: one flooding agent cannot hold them up).
pub const RING_QUOTA: u64 = 65_536;
/// How long the final drain may take at a stop.
pub const FINAL_DRAIN: Duration = Duration::from_secs(5);

/// The refusal cause of an agent whose exporter could not be created.
const EXPORTER_CAUSE: &str = "exporter";

/// Creates the exporters: one per agent, all of the same plug-in.
pub struct Sink {
    settings: Settings,
}

impl Sink {
    /// The sink `settings` describe.
    pub fn new(settings: Settings) -> Sink {
        Sink { settings }
    }

    /// An exporter for `agent` (loaded as a host loads it).
    pub fn create(&self, agent: &str) -> anyhow::Result<Box<dyn Exporter>> {
        let config = self.settings.config_for(agent);
        nixl_telemetry::exporter::create(&config, agent)?.ok_or_else(|| {
            anyhow::anyhow!("the configuration selects no exporter for agent {agent:?}")
        })
    }
}

/// Totals for the final line.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    /// Events read from the rings and handed to the agents' exporters.
    pub events: u64,
    /// Of those, events an exporter refused (its export call failed).
    pub refused: u64,
    /// Agents seen.
    pub agents: u64,
}

/// The sidecar.
pub struct Sidecar {
    settings: Settings,
    directory: RingDirectory,
    sink: Sink,
    agents: BTreeMap<String, Agent>,
    self_exporter: Option<Box<dyn Exporter>>,
    own: OwnSeries,
    events: Vec<Event>,
    scratch: Vec<Event>,
    loads: Vec<RingLoad>,
    last_scan: Option<Instant>,
    last_housekeeping: Instant,
    last_own_report: Instant,
    directory_problem: Option<String>,
    last_watch_attempt: Option<Instant>,
    /// A file being created was seen: list the directory again next interval.
    settling: bool,
    /// Files refused, as they were then: not looked at again until they change.
    refused_as: HashMap<OsString, (FileIdentity, FileStamp)>,
    /// Files opened as soon as they appeared that are no valid ring yet (a
    /// producer creating its ring in place): looked at again each pass, for
    /// [`SETTLE`] at most, [`MAX_WAITING`] at most.
    early: Vec<OpenedEarly>,
    totals: Totals,
    /// What a stop would abandon if it ended now ([`Sidecar::stopping`]).
    stopping: Arc<Mutex<String>>,
}

impl Sidecar {
    /// A sidecar for `settings`: its own agent's exporter is created now
    /// (so a plug-in that cannot load is an error at start).
    pub fn new(settings: Settings) -> anyhow::Result<Sidecar> {
        let sink = Sink::new(settings.clone());
        let self_exporter = sink.create(&settings.self_name)?;
        let now = Instant::now();
        Ok(Sidecar {
            directory: RingDirectory::new(&settings.dir, ScanRules::Confined),
            settings,
            sink,
            agents: BTreeMap::new(),
            self_exporter: Some(self_exporter),
            own: OwnSeries::default(),
            events: Vec::new(),
            scratch: Vec::new(),
            loads: Vec::new(),
            last_scan: None,
            last_housekeeping: now,
            last_own_report: now,
            directory_problem: None,
            last_watch_attempt: None,
            settling: false,
            refused_as: HashMap::new(),
            early: Vec::new(),
            totals: Totals::default(),
            stopping: Arc::new(Mutex::new(
                "a read of the rings under way, before the final flush".to_owned(),
            )),
        })
    }

    /// The totals so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Runs until `stop()` is true, then drains, flushes and closes.
    pub fn run(&mut self, watch: &mut DirectoryWatch, stop: impl Fn() -> bool) {
        loop {
            let now = Instant::now();
            // Polled: listed once an interval. Watched: listed when it
            // changed (at most once an interval), and every SAFETY_RESCAN.
            let since = self.last_scan.map(|last| now.duration_since(last));
            let due = since.is_none_or(|since| {
                since
                    >= if watch.is_watching() && !self.settling {
                        SAFETY_RESCAN
                    } else {
                        self.settings.interval
                    }
            });
            let rescan = watch.is_watching() && watch.take_rescan();
            let changed = watch.is_watching()
                && since.is_none_or(|since| since >= self.settings.interval)
                && watch.take_change();
            if due || changed || rescan {
                self.scan();
                if due
                    && !watch.is_watching()
                    && !self.settings.poll
                    && self.directory_problem.is_none()
                {
                    let last = self.last_watch_attempt.get_or_insert(now);
                    if now.duration_since(*last) >= SAFETY_RESCAN {
                        *last = now;
                        if watch.try_again(&self.settings.dir) {
                            tracing::info!(
                                "{}: watched with inotify from now on",
                                self.settings.dir.display()
                            );
                        }
                    }
                }
            }
            // Rings seen to appear are followed at once, before a listing
            // (a short-lived one may be gone by then).
            let opened = watch.take_opened();
            self.follow_early(opened);
            self.pass();
            self.housekeeping(false);
            if stop() {
                break;
            }
            let delay = next_delay(self.loads.iter().copied(), self.settings.interval);
            if !delay.is_zero() {
                watch.wait_until(Instant::now() + delay, &stop);
            }
        }
        self.shutdown();
    }

    /// Lists the directory and follows what changed.
    pub fn scan(&mut self) {
        self.last_scan = Some(Instant::now());
        self.settling = false;
        let scan = match self.directory.scan() {
            Ok(scan) => {
                if self.directory_problem.take().is_some() {
                    tracing::info!("{}: directory readable again", self.settings.dir.display());
                }
                scan
            }
            Err(e) => {
                let message = if e.source.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "{}: no such directory (yet); waiting for it (expected the directory \
                         NIXL's agents write their rings to)",
                        self.settings.dir.display()
                    )
                } else {
                    format!("{e}; retrying")
                };
                if self.directory_problem.as_deref() != Some(message.as_str()) {
                    tracing::warn!("{message}");
                    self.directory_problem = Some(message);
                }
                return;
            }
        };
        for refusal in scan.refused.iter().filter(|r| r.new) {
            self.note_refusal(refusal.cause.as_str(), &refusal.message, refusal.cause);
        }
        let gone: Vec<&RingFile> = scan
            .removed
            .iter()
            .chain(scan.replaced.iter().map(|(old, _)| old))
            .collect();
        for agent in self.agents.values_mut() {
            for ring in &mut agent.rings {
                if gone
                    .iter()
                    .any(|g| g.name == ring.file.name && g.identity == ring.file.identity)
                {
                    ring.retiring = true;
                }
            }
        }
        self.refused_as
            .retain(|name, _| scan.files.iter().any(|f| f.name == *name));
        for file in &scan.files {
            if self.refused_as.get(&file.name) == Some(&(file.identity, file.stamp)) {
                continue;
            }
            self.follow(file);
        }
    }

    /// Follows the files the watch opened as they appeared (and those
    /// waiting to become valid rings); a file already followed, or no ring
    /// once [`SETTLE`] has passed, is let go (a listing warns about it if it
    /// is still there).
    fn follow_early(&mut self, opened: Vec<OpenedEarly>) {
        if opened.is_empty() && self.early.is_empty() {
            return;
        }
        let mut waiting = std::mem::take(&mut self.early);
        waiting.extend(opened);
        for early in waiting {
            let Ok(identity) = FileIdentity::of_file(&early.file) else {
                continue;
            };
            let followed = self
                .agents
                .values()
                .any(|a| a.rings.iter().any(|r| r.file.identity == identity));
            if followed {
                continue;
            }
            let path = self.settings.dir.join(&early.name);
            let mode = if early.writable {
                ReadMode::Consume
            } else {
                ReadMode::Peek
            };
            let reader = early
                .file
                .try_clone()
                .map_err(|source| RingError::Io {
                    path: path.clone(),
                    op: "duplicate the descriptor",
                    source,
                })
                .and_then(|file| RingReader::from_file(file, &path, mode));
            let reader = match reader {
                Ok(reader) => reader,
                Err(err) => {
                    let content = matches!(
                        RefusalCause::of(&err),
                        RefusalCause::TooShort
                            | RefusalCause::UnknownVersion
                            | RefusalCause::BadHeader
                    );
                    // Bounded, as descriptors are: beyond, the listing
                    // finds the file if it is still there.
                    if content && early.seen.elapsed() < SETTLE && self.early.len() < MAX_WAITING {
                        self.early.push(early);
                    } else {
                        tracing::debug!("{err}: not followed from its creation");
                    }
                    continue;
                }
            };
            let stamp = rustix::fs::fstat(&early.file)
                .map(|s| FileStamp {
                    size: s.st_size as u64,
                    modified_ns: i128::from(s.st_mtime) * 1_000_000_000
                        + i128::from(s.st_mtime_nsec),
                })
                .unwrap_or_default();
            let file = RingFile {
                name: early.name,
                path,
                identity,
                via_link: false,
                stamp,
            };
            if !self.may_follow(&file) {
                continue;
            }
            let ring = FollowedRing::from_reader(&file, reader);
            let read_only = ring.read_only;
            self.start_following(&file, ring, read_only);
        }
    }

    /// Whether `file`, not followed yet, may be followed: not already
    /// followed (under another name: a ring moved aside by a restarted
    /// producer, renamed), not the sidecar's own name, within `--max-rings`.
    fn may_follow(&mut self, file: &RingFile) -> bool {
        // Already followed under this name, or under another one (renamed
        // while followed: a ring moved aside by a restarted producer).
        for agent in self.agents.values_mut() {
            if let Some(ring) = agent
                .rings
                .iter_mut()
                .find(|r| r.file.identity == file.identity)
            {
                if ring.file.name != file.name {
                    ring.file = file.clone();
                    ring.retiring = false;
                }
                return false;
            }
        }
        let name = file.agent();
        if name == self.settings.self_name {
            let message = format!(
                "{}: its name is the sidecar's own agent name (--self-name {}); not followed \
                 (rename the agent or give the sidecar another --self-name)",
                file.path.display(),
                self.settings.self_name
            );
            if self
                .directory
                .refuse(&file.name, RefusalCause::Unreadable, message.clone())
            {
                self.note_refusal(EXPORTER_CAUSE, &message, RefusalCause::Unreadable);
            }
            return false;
        }
        let followed: usize = self.agents.values().map(|a| a.rings.len()).sum();
        if followed >= self.settings.max_rings {
            let message = format!(
                "{}: not followed: the sidecar already follows {followed} rings (--max-rings {})",
                file.path.display(),
                self.settings.max_rings
            );
            if self
                .directory
                .refuse(&file.name, RefusalCause::Limit, message.clone())
            {
                self.note_refusal(RefusalCause::Limit.as_str(), &message, RefusalCause::Limit);
            }
            return false;
        }
        true
    }

    /// Follows `file` if it is not followed yet.
    fn follow(&mut self, file: &RingFile) {
        if !self.may_follow(file) {
            return;
        }
        let (ring, read_only) = match FollowedRing::open(&self.directory, file) {
            Ok(opened) => opened,
            // Replaced since the scan: the next scan looks again.
            Err(RingError::Changed { .. }) => return,
            Err(err) => {
                let cause = RefusalCause::of(&err);
                // NIXL creates its ring in place: for a moment the file is
                // empty, or sized with a zero header. A young file is looked
                // at again at the next interval before it is called broken.
                let content = matches!(
                    cause,
                    RefusalCause::TooShort | RefusalCause::UnknownVersion | RefusalCause::BadHeader
                );
                if content && is_young(file) {
                    self.settling = true;
                    return;
                }
                let mode = if matches!(cause, RefusalCause::Permission) {
                    nixl_telemetry::ring::ReadMode::Peek
                } else {
                    nixl_telemetry::ring::ReadMode::Consume
                };
                let message = describe(&err, mode);
                if self.directory.refuse(&file.name, cause, message.clone()) {
                    self.note_refusal(cause.as_str(), &message, cause);
                }
                self.refused_as
                    .insert(file.name.clone(), (file.identity, file.stamp));
                return;
            }
        };
        self.start_following(file, ring, read_only);
    }

    /// Follows `ring`, opened on `file`: under its agent, whose exporter is
    /// created if it has none yet.
    fn start_following(&mut self, file: &RingFile, ring: FollowedRing, read_only: bool) {
        let name = file.agent();
        self.directory.accept(&file.name);
        self.refused_as.remove(&file.name);
        if read_only {
            tracing::warn!(
                "{}: the sidecar may read this ring but not write it: exported without consuming \
                 (the producer's ring fills up and drops its newest events); give the sidecar \
                 write access to consume it as NIXL's reader does",
                file.path.display()
            );
        }
        // A ring a restarted producer moved aside (`<agent>.stale-<µs>`)
        // belongs to that agent.
        let agent_key = if ring.stale {
            stale_agent(&name).unwrap_or(name)
        } else {
            name
        };
        let header = ring.reader().header().ok();
        tracing::info!(
            "Agent {agent_key}: following {} ({}, capacity {} events, {} events unread)",
            file.path.display(),
            ring.reader().layout().name,
            ring.reader().capacity(),
            header.map_or(0, |h| h.write_pos.wrapping_sub(h.read_pos)
                & (ring.reader().capacity() - 1))
        );
        if !self.agents.contains_key(&agent_key) {
            match self.sink.create(&agent_key) {
                Ok(exporter) => {
                    self.totals.agents += 1;
                    self.agents
                        .insert(agent_key.clone(), Agent::new(agent_key.clone(), exporter));
                }
                Err(e) => {
                    let message = format!(
                        "{}: not followed: no exporter for agent {agent_key:?}: {e:#}",
                        file.path.display()
                    );
                    if self
                        .directory
                        .refuse(&file.name, RefusalCause::Unreadable, message.clone())
                    {
                        self.note_refusal(EXPORTER_CAUSE, &message, RefusalCause::Unreadable);
                    }
                    return;
                }
            }
        }
        let agent = self.agents.get_mut(&agent_key).expect("inserted above");
        agent.own.add(own_series::RINGS_OPENED, 1);
        self.own.add(own_series::RINGS_OPENED, 1);
        agent.gone_since = None;
        // A moved-aside ring is read before the agent's current one.
        if ring.stale {
            agent.rings.insert(0, ring);
        } else {
            agent.rings.push(ring);
        }
    }

    fn note_refusal(&mut self, cause: &str, message: &str, kind: RefusalCause) {
        self.own
            .add(&format!("{}{cause}", own_series::REFUSED_PREFIX), 1);
        if kind == RefusalCause::Duplicate {
            // Read once under its other name: nothing is lost.
            tracing::info!("{message}");
        } else {
            tracing::warn!("skipping {message}");
        }
    }

    /// Reads every ring once (each up to [`RING_QUOTA`] events).
    pub fn pass(&mut self) {
        self.loads.clear();
        self.wake_dormant_agents();
        let now_us = clock::system_now_us();
        let batch = self.settings.config.buffer_size;
        let mut read_total = 0;
        let mut rewritten = Vec::new();
        for agent in self.agents.values_mut() {
            // An agent without exporter (its series dropped) is not read:
            // its events wait for the exporter it gets when they come.
            if agent.exporter.is_none() {
                let before = agent.rings.len();
                agent.rings.retain(|r| !r.retiring);
                let closed = (before - agent.rings.len()) as u64;
                self.own.add(own_series::RINGS_CLOSED, closed);
                continue;
            }
            let mut fills = Vec::new();
            let Agent {
                exporter,
                rings,
                own,
                unflushed,
                gone_since,
                ..
            } = agent;
            let mut index = 0;
            while index < rings.len() {
                let ring = &mut rings[index];
                let refused = &mut self.totals.refused;
                let result = ring.read(
                    RING_QUOTA,
                    batch,
                    now_us,
                    &mut self.events,
                    |events| *refused += Agent::export(exporter, unflushed, events),
                    |warning| tracing::warn!("{warning}"),
                );
                let close = match result {
                    Ok(report) => {
                        own.add(own_series::EVENTS_READ, report.events);
                        own.add(own_series::MALFORMED, report.malformed);
                        read_total += report.events;
                        if let Some(load) = report.load {
                            fills.push((load.pending, load.room));
                            self.loads.push(load);
                        }
                        if report.events > 0 {
                            *gone_since = None;
                        }
                        ring.retiring && matches!(ring.pending(), Ok(0) | Err(_))
                    }
                    // Rewritten in place by a new producer: what was read
                    // is exported; the file is followed afresh, in its new
                    // layout, as a replaced file is.
                    Err(err @ RingError::LayoutChanged { .. }) => {
                        tracing::warn!("{err}: a new producer; following the ring afresh");
                        rewritten.push(ring.file.clone());
                        true
                    }
                    Err(err) => {
                        let cause = RefusalCause::of(&err);
                        let message = describe(&err, nixl_telemetry::ring::ReadMode::Consume);
                        if self
                            .directory
                            .refuse(&ring.file.name, cause, message.clone())
                        {
                            self.own
                                .add(&format!("{}{}", own_series::REFUSED_PREFIX, cause), 1);
                            tracing::warn!("stopped following a ring: {message}");
                        }
                        // Not opened again until the file changes once more.
                        if let Some(stamp) = FileStamp::of_path(&ring.file.path) {
                            self.refused_as
                                .insert(ring.file.name.clone(), (ring.file.identity, stamp));
                        }
                        true
                    }
                };
                if close {
                    rings.remove(index);
                    own.add(own_series::RINGS_CLOSED, 1);
                    self.own.add(own_series::RINGS_CLOSED, 1);
                } else {
                    index += 1;
                }
            }
            for (pending, room) in fills {
                agent.note_fill(pending, room);
            }
            agent.own.add(own_series::READ_PASSES, 1);
        }
        for mut file in rewritten {
            file.stamp = FileStamp::of_path(&file.path).unwrap_or(file.stamp);
            self.follow(&file);
        }
        self.totals.events += read_total;
        self.own.add(own_series::EVENTS_READ, read_total);
        self.own.add(own_series::READ_PASSES, 1);
    }

    /// Agents whose series were dropped while a ring of theirs stayed (an
    /// exited producer's file) get an exporter again when events arrive: a
    /// new producer took the ring over. Their counters start over, as the
    /// restarted producer's own would.
    fn wake_dormant_agents(&mut self) {
        let waking: Vec<String> = self
            .agents
            .iter_mut()
            .filter(|(_, a)| a.exporter.is_none())
            .filter_map(|(name, a)| {
                a.rings
                    .iter_mut()
                    .any(|r| r.pending().is_ok_and(|n| n > 0))
                    .then(|| name.clone())
            })
            .collect();
        for name in waking {
            match self.sink.create(&name) {
                Ok(exporter) => {
                    let agent = self.agents.get_mut(&name).expect("listed above");
                    agent.exporter = Some(exporter);
                    agent.gone_since = None;
                    tracing::info!("Agent {name}: events again in its ring: exported again");
                }
                Err(e) => tracing::warn!("Agent {name}: no exporter: {e:#}; its events wait"),
            }
        }
    }

    /// Once an interval: producers asked whether they are still there, gone
    /// agents dropped after the grace time, the sidecar's own figures
    /// reported (once a second), exporters flushed. `all` forces everything
    /// (at the end).
    pub fn housekeeping(&mut self, all: bool) {
        let now = Instant::now();
        if !all && now.duration_since(self.last_housekeeping) < self.settings.interval {
            return;
        }
        self.last_housekeeping = now;
        let now_us = clock::system_now_us();
        for agent in self.agents.values_mut() {
            // Removed: read to its end and let go, without waiting for a
            // listing of the directory (which may need a descriptor). The
            // rings of an agent with an exporter were read (their file
            // checked) in the pass just before.
            let read_each_pass = agent.exporter.is_some();
            for ring in &mut agent.rings {
                let removed = if read_each_pass {
                    ring.reader().removed_at_last_check()
                } else {
                    ring.reader().is_removed()
                };
                if !ring.retiring && removed {
                    ring.retiring = true;
                }
            }
            agent.check_liveness(now);
        }
        let grace = self.settings.grace;
        let mut dropped = Vec::new();
        for (name, agent) in &mut self.agents {
            if agent.grace_over(now, grace) {
                agent.drop_series(now_us, &mut self.scratch);
                self.own.add(own_series::AGENTS_DROPPED, 1);
                tracing::info!(
                    "Agent {name}: gone for {:.1} s: its series are dropped",
                    grace.as_secs_f64()
                );
            }
            if agent.exporter.is_none() && agent.rings.is_empty() {
                dropped.push(name.clone());
            }
        }
        for name in dropped {
            self.agents.remove(&name);
        }
        if all || now.duration_since(self.last_own_report) >= OWN_REPORT_EVERY {
            self.last_own_report = now;
            for agent in self.agents.values_mut() {
                agent.report_own(now_us, &mut self.scratch);
            }
            self.scratch.clear();
            self.own.report(now_us, &mut self.scratch);
            if let Some(exporter) = &mut self.self_exporter {
                if !self.scratch.is_empty() {
                    exporter.export(&self.scratch);
                }
                exporter.flush();
            }
        }
        for agent in self.agents.values_mut() {
            agent.flush();
        }
    }

    /// What a stop ended now would abandon, in words: kept up to date by
    /// [`Sidecar::shutdown`] for a watchdog that bounds it, and for a second
    /// signal.
    pub fn stopping(&self) -> Arc<Mutex<String>> {
        Arc::clone(&self.stopping)
    }

    fn set_stopping(&self, what: String) {
        *self.stopping.lock().unwrap_or_else(|e| e.into_inner()) = what;
    }

    /// Drains what is readable (for at most [`FINAL_DRAIN`] and half the
    /// shutdown bound), reports, flushes and destroys every exporter (the
    /// agents' first, the sidecar's own last).
    pub fn shutdown(&mut self) {
        let start = Instant::now();
        let drain_for = FINAL_DRAIN.min(self.settings.shutdown_timeout / 2);
        self.set_stopping(format!(
            "the final read of {} rings, and the final flush of {} agents and of the sidecar's \
             own series",
            self.rings_followed(),
            self.agents.len()
        ));
        self.scan();
        loop {
            self.pass();
            let pending: u64 = self.loads.iter().map(|l| l.pending).sum();
            if pending == 0 || start.elapsed() >= drain_for {
                break;
            }
        }
        let names: Vec<String> = self.agents.keys().cloned().collect();
        self.set_stopping(format!(
            "the final flush of agents {} and of the sidecar's own series",
            listed(&names)
        ));
        self.housekeeping(true);
        for (index, agent) in self.agents.values_mut().enumerate() {
            *self.stopping.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "the final flush of agents {} and of the sidecar's own series",
                listed(&names[index..])
            );
            agent.unflushed = true;
            agent.flush();
            agent.exporter = None;
        }
        self.agents.clear();
        self.set_stopping("the final flush of the sidecar's own series".to_owned());
        if let Some(mut exporter) = self.self_exporter.take() {
            exporter.flush();
        }
        self.set_stopping("nothing".to_owned());
    }

    /// The names of the agents exported now.
    pub fn agent_names(&self) -> Vec<&str> {
        self.agents
            .iter()
            .filter(|(_, a)| a.exporter.is_some())
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Rings followed now.
    pub fn rings_followed(&self) -> usize {
        self.agents.values().map(|a| a.rings.len()).sum()
    }
}

/// Names for a message: the first ten, then how many more.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// How long a file that is not a valid ring yet is given to become one (a
/// producer creating it in place) before it is refused.
pub const SETTLE: Duration = Duration::from_secs(2);

/// Whether `file` was modified less than [`SETTLE`] ago.
fn is_young(file: &RingFile) -> bool {
    let now_ns = i128::from(clock::system_now_us()) * 1000;
    now_ns - file.stamp.modified_ns < SETTLE.as_nanos() as i128
}

/// The agent of a ring moved aside: `<agent>.stale-<digits>` → `<agent>`.
fn stale_agent(file_name: &str) -> Option<String> {
    let (agent, stamp) = file_name.rsplit_once(".stale-")?;
    (!agent.is_empty() && !stamp.is_empty() && stamp.bytes().all(|b| b.is_ascii_digit()))
        .then(|| agent.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExportArgs;
    use clap::Parser;
    use nixl_telemetry::ring::{layout, RingWriter};
    use nixl_telemetry::Category;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ExportArgs,
    }

    /// The events of one short-lived ring.
    const EVENTS_PER_RING: usize = 10;

    fn events() -> Vec<Event> {
        (0..EVENTS_PER_RING)
            .map(|i| Event::new(i as u64, Category::TRANSFER, "agent_tx_bytes", 1))
            .collect()
    }

    #[test]
    fn rings_that_live_a_few_milliseconds_are_all_read() {
        let dir = tempfile::tempdir().unwrap();
        let cli = Cli::try_parse_from([
            "export",
            "--dir",
            dir.path().to_str().unwrap(),
            "--exporter",
            "nop",
        ])
        .unwrap();
        let settings = Settings::resolve(&cli.args, |_| None).unwrap();
        assert_eq!(settings.interval, Duration::from_millis(100));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sidecar = {
            let stop = Arc::clone(&stop);
            let dir = dir.path().to_owned();
            std::thread::spawn(move || {
                let mut sidecar = Sidecar::new(settings).unwrap();
                let (mut watch, unwatched) = DirectoryWatch::new(&dir);
                ready_tx.send(unwatched).unwrap();
                sidecar.run(&mut watch, || stop.load(Ordering::Relaxed));
                sidecar.totals()
            })
        };
        let unwatched = ready_rx.recv().unwrap();
        assert_eq!(unwatched, None, "inotify is needed for this test");
        // Rings living 15 ms, well under the 100 ms between two listings:
        // half made by this project's writer (created aside, renamed into
        // place), half as NIXL makes them (created in place, written,
        // removed without the sidecar ever finding them in a listing).
        const RINGS: usize = 100;
        let nixl = nixl_telemetry_testsupport::nixl_ring::ring_bytes(&layout::V4, 64, &events());
        for i in 0..RINGS {
            let path = dir.path().join(format!("short-{i}"));
            if i % 2 == 0 {
                let mut writer = RingWriter::create(dir.path(), &format!("short-{i}"), 64).unwrap();
                writer.push_batch(&events());
                std::thread::sleep(Duration::from_millis(15));
                drop(writer);
            } else {
                std::fs::write(&path, &nixl).unwrap();
                std::thread::sleep(Duration::from_millis(15));
            }
            std::fs::remove_file(&path).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        let totals = sidecar.join().unwrap();
        // One race remains: a ring removed before the watcher's thread has
        // opened it (that thread held up for 15 ms on a loaded machine) is
        // never seen. Every other is read whole.
        let read = totals.events as f64 / EVENTS_PER_RING as f64;
        assert!(
            read >= RINGS as f64 * 0.99,
            "{read} of {RINGS} rings' events read"
        );
        assert!(totals.agents as f64 >= RINGS as f64 * 0.99, "{totals:?}");
    }

    #[test]
    fn rings_moved_aside_belong_to_their_agent() {
        assert_eq!(
            stale_agent("initiator.stale-1795512630982111").as_deref(),
            Some("initiator")
        );
        assert_eq!(stale_agent("a.b.stale-1").as_deref(), Some("a.b"));
        assert_eq!(stale_agent("initiator"), None);
        assert_eq!(stale_agent(".stale-1"), None);
        assert_eq!(stale_agent("x.stale-"), None);
        assert_eq!(stale_agent("x.stale-12a"), None);
    }
}
