//! The transfer workload behind `nixl-telemetry demo`, reusable by benchmarks.
//!
//! A [`Workload`] holds agents (initiators and targets), each with its own
//! [`Telemetry`] and real registered memory ([`memory::Region`]s of touched
//! bytes). Worker threads ([`Worker`]) post transfers of mixed sizes from an
//! initiator to a target (WRITE) or back (READ): posting validates the
//! descriptors against the registered regions and is timed
//! (`agent_xfer_post_time`), then the bytes are copied and the whole transfer
//! is timed (`agent_xfer_time`, `agent_{tx|rx}_bytes`,
//! `agent_{tx|rx}_requests_num`). Now and then a transfer is aimed at memory
//! that was never registered (`NIXL_ERR_NOT_FOUND`) or past a region's end
//! (`NIXL_ERR_INVALID_PARAM`) on purpose, and the error is recorded. Targets
//! record a backend event for every transfer they take part in
//! (`memcpy_remote_bytes`, the bytes its memory gave or took).
//! [`Workload::shutdown`] deregisters everything.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use nixl_telemetry::Telemetry;
//! use nixl_telemetry_workload::{agent_roles, Workload, WorkloadConfig};
//!
//! let config = WorkloadConfig {
//!     region_size: 1 << 20,
//!     max_size: 64 << 10,
//!     ..WorkloadConfig::default()
//! };
//! let agents = agent_roles(2)
//!     .unwrap()
//!     .into_iter()
//!     .map(|(name, role)| {
//!         let telemetry = Telemetry::builder(&name).build().unwrap(); // collect only
//!         (name, role, telemetry)
//!     })
//!     .collect();
//! let workload = Workload::new(config, agents).unwrap();
//! let mut worker = workload.worker(0);
//! for _ in 0..100 {
//!     worker.step();
//! }
//! assert!(workload.agents()[0].counters().transfers > 0);
//! let telemetries = workload.shutdown();
//! assert_eq!(telemetries.len(), 2);
//! ```

#![forbid(unsafe_code)]

pub mod memory;
mod rng;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nixl_telemetry::{Category, Direction, EventHandle, Telemetry};

use memory::{Descriptor, Region, UNREGISTERED_REGION};
pub use rng::Rng;

/// The status recorded for a transfer to memory that is not registered.
pub const ERR_NOT_FOUND: &str = "NIXL_ERR_NOT_FOUND";
/// The status recorded for a transfer past the end of a registered region.
pub const ERR_INVALID_PARAM: &str = "NIXL_ERR_INVALID_PARAM";
/// The backend event a target records for each transfer it takes part in
/// (value: the bytes its memory gave or took).
pub const REMOTE_BYTES_EVENT: &str = "memcpy_remote_bytes";
/// The connection event an initiator records for each target at start.
pub const CONNECT_EVENT: &str = "memcpy_connect";
/// The connection event an initiator records for each target at shutdown.
pub const DISCONNECT_EVENT: &str = "memcpy_disconnect";

/// A setting the workload cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} = {value} is invalid; accepted: {accepted}")]
pub struct WorkloadError {
    /// The setting.
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// What is accepted.
    pub accepted: String,
}

fn invalid(what: &'static str, value: impl ToString, accepted: impl Into<String>) -> WorkloadError {
    WorkloadError {
        what,
        value: value.to_string(),
        accepted: accepted.into(),
    }
}

/// The shape of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Worker threads posting transfers.
    pub threads: usize,
    /// Smallest transfer, bytes.
    pub min_size: usize,
    /// Largest transfer, bytes.
    pub max_size: usize,
    /// Bytes of each registered region.
    pub region_size: usize,
    /// Regions each agent registers.
    pub regions_per_agent: usize,
    /// One transfer in this many fails on purpose (0: none).
    pub failure_one_in: u64,
    /// Seed of the workers' random choices.
    pub seed: u64,
}

impl Default for WorkloadConfig {
    /// 2 threads, 4 KiB to 4 MiB, two 16 MiB regions per agent, one failure in 500.
    fn default() -> Self {
        WorkloadConfig {
            threads: 2,
            min_size: 4 << 10,
            max_size: 4 << 20,
            region_size: 16 << 20,
            regions_per_agent: 2,
            failure_one_in: 500,
            seed: 0x5eed_cafe,
        }
    }
}

impl WorkloadConfig {
    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if !(1..=256).contains(&self.threads) {
            return Err(invalid("threads", self.threads, "1 to 256"));
        }
        if self.min_size == 0 {
            return Err(invalid("min_size", self.min_size, "at least 1 byte"));
        }
        if self.max_size < self.min_size {
            return Err(invalid(
                "max_size",
                self.max_size,
                format!("at least min_size ({})", self.min_size),
            ));
        }
        if self.region_size < self.max_size {
            return Err(invalid(
                "region_size",
                self.region_size,
                format!("at least max_size ({})", self.max_size),
            ));
        }
        if !(1..=64).contains(&self.regions_per_agent) {
            return Err(invalid(
                "regions_per_agent",
                self.regions_per_agent,
                "1 to 64",
            ));
        }
        Ok(())
    }
}

/// What an agent does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Posts transfers.
    Initiator,
    /// Is the remote side of transfers.
    Target,
}

/// Names and roles for `count` agents (at least 2): half initiators (rounded
/// up), half targets. One of a role is called `initiator` / `target`; more are
/// numbered `initiator-0`, `initiator-1`, ….
pub fn agent_roles(count: usize) -> Result<Vec<(String, Role)>, WorkloadError> {
    if !(2..=64).contains(&count) {
        return Err(invalid("agents", count, "2 to 64"));
    }
    let initiators = count.div_ceil(2);
    let targets = count - initiators;
    let names = |base: &str, n: usize, role: Role| -> Vec<(String, Role)> {
        if n == 1 {
            vec![(base.to_owned(), role)]
        } else {
            (0..n).map(|i| (format!("{base}-{i}"), role)).collect()
        }
    };
    let mut out = names("initiator", initiators, Role::Initiator);
    out.extend(names("target", targets, Role::Target));
    Ok(out)
}

/// Running totals of one agent (as initiator: its transfers; as target: the
/// transfers it took part in).
#[derive(Debug, Default)]
struct Counters {
    transfers: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

/// A snapshot of an agent's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCounters {
    /// Completed transfers.
    pub transfers: u64,
    /// Bytes copied by completed transfers.
    pub bytes: u64,
    /// Transfers that failed.
    pub errors: u64,
}

/// One agent: its telemetry and its registered memory.
pub struct Agent {
    name: String,
    role: Role,
    telemetry: Telemetry,
    remote_bytes: EventHandle,
    regions: Vec<Region>,
    counters: Counters,
}

impl Agent {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its telemetry.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// Its registered regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Its totals so far.
    pub fn counters(&self) -> AgentCounters {
        AgentCounters {
            transfers: self.counters.transfers.load(Ordering::Relaxed),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
            errors: self.counters.errors.load(Ordering::Relaxed),
        }
    }

    fn region(&self, id: u64) -> Option<&Region> {
        self.regions.iter().find(|r| r.id() == id)
    }
}

/// Agents with registered memory, ready for worker threads.
pub struct Workload {
    config: WorkloadConfig,
    agents: Vec<Agent>,
    initiators: Vec<usize>,
    targets: Vec<usize>,
}

/// What one transfer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Completed: bytes copied, in this direction.
    Completed {
        /// Bytes copied.
        bytes: usize,
        /// WRITE (initiator → target) or READ (target → initiator).
        direction: Direction,
    },
    /// Failed with this status (recorded as an ERROR event).
    Failed(&'static str),
}

/// Totals of [`Workload::run`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTotals {
    /// Completed transfers.
    pub transfers: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Failed transfers.
    pub failures: u64,
}

impl Workload {
    /// Registers every agent's memory (recording `agent_memory_registered` per
    /// region) and connects each initiator to each target.
    pub fn new(
        config: WorkloadConfig,
        agents: Vec<(String, Role, Telemetry)>,
    ) -> Result<Workload, WorkloadError> {
        config.validate()?;
        let block_size = config.max_size.next_power_of_two().min(config.region_size);
        let mut next_id = 0u64;
        let agents: Vec<Agent> = agents
            .into_iter()
            .map(|(name, role, telemetry)| {
                let regions = (0..config.regions_per_agent)
                    .map(|_| {
                        next_id += 1;
                        let region = Region::allocate(next_id, config.region_size, block_size);
                        telemetry.memory_registered(region.size() as u64);
                        region
                    })
                    .collect();
                tracing::debug!(agent = %name, regions = config.regions_per_agent, bytes = config.region_size, "registered memory");
                Agent {
                    remote_bytes: telemetry.handle(Category::BACKEND, REMOTE_BYTES_EVENT),
                    name,
                    role,
                    telemetry,
                    regions,
                    counters: Counters::default(),
                }
            })
            .collect();
        let of = |role| -> Vec<usize> {
            (0..agents.len())
                .filter(|&i| agents[i].role == role)
                .collect()
        };
        let (initiators, targets) = (of(Role::Initiator), of(Role::Target));
        if initiators.is_empty() || targets.is_empty() {
            return Err(invalid(
                "agents",
                agents.len(),
                "at least one initiator and one target",
            ));
        }
        for &i in &initiators {
            for _ in &targets {
                agents[i].telemetry.connection_event(CONNECT_EVENT, 1);
            }
        }
        Ok(Workload {
            config,
            agents,
            initiators,
            targets,
        })
    }

    /// The settings.
    pub fn config(&self) -> &WorkloadConfig {
        &self.config
    }

    /// The agents, in the order given.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// Worker `index`: it posts transfers for initiator `index % initiators`.
    pub fn worker(&self, index: usize) -> Worker<'_> {
        Worker {
            workload: self,
            initiator: self.initiators[index % self.initiators.len()],
            rng: Rng::new(self.config.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
    }

    /// Runs `config.threads` workers until `stop` is set or `duration` has passed.
    pub fn run(&self, stop: &AtomicBool, duration: Option<Duration>) -> RunTotals {
        let deadline = duration.map(|d| Instant::now() + d);
        let totals: Vec<RunTotals> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.config.threads)
                .map(|index| {
                    std::thread::Builder::new()
                        .name(format!("xfer-worker-{index}"))
                        .spawn_scoped(scope, move || {
                            let mut worker = self.worker(index);
                            let mut totals = RunTotals::default();
                            while !stop.load(Ordering::Relaxed)
                                && deadline.is_none_or(|d| Instant::now() < d)
                            {
                                match worker.step() {
                                    Outcome::Completed { bytes, .. } => {
                                        totals.transfers += 1;
                                        totals.bytes += bytes as u64;
                                    }
                                    Outcome::Failed(_) => totals.failures += 1,
                                }
                            }
                            totals
                        })
                        .expect("spawn a worker thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        totals
            .into_iter()
            .fold(RunTotals::default(), |a, b| RunTotals {
                transfers: a.transfers + b.transfers,
                bytes: a.bytes + b.bytes,
                failures: a.failures + b.failures,
            })
    }

    /// Disconnects, deregisters every region (recording
    /// `agent_memory_deregistered` per region, memory freed) and hands back the
    /// agents' names and telemetry, so the caller decides when they flush and close.
    pub fn shutdown(self) -> Vec<(String, Telemetry)> {
        for &i in &self.initiators {
            for _ in &self.targets {
                self.agents[i]
                    .telemetry
                    .connection_event(DISCONNECT_EVENT, 1);
            }
        }
        self.agents
            .into_iter()
            .map(|agent| {
                for region in agent.regions {
                    let size = region.size() as u64;
                    drop(region);
                    agent.telemetry.memory_deregistered(size);
                }
                tracing::debug!(agent = %agent.name, "deregistered memory");
                (agent.name, agent.telemetry)
            })
            .collect()
    }

    fn validate(&self, desc: &Descriptor) -> Result<&Region, &'static str> {
        let region = self.agents[desc.agent]
            .region(desc.region)
            .ok_or(ERR_NOT_FOUND)?;
        if desc.len == 0 || !region.contains(desc.offset, desc.len) {
            return Err(ERR_INVALID_PARAM);
        }
        Ok(region)
    }
}

/// Posts transfers for one initiator, one at a time.
pub struct Worker<'a> {
    workload: &'a Workload,
    initiator: usize,
    rng: Rng,
}

impl Worker<'_> {
    fn size(&mut self) -> usize {
        let c = &self.workload.config;
        if c.max_size == c.min_size {
            return c.min_size;
        }
        // Log-uniform: as many small transfers per octave as large ones.
        let (lo, hi) = ((c.min_size as f64).ln(), (c.max_size as f64).ln());
        let size = (lo + self.rng.unit() * (hi - lo)).exp() as usize;
        size.clamp(c.min_size, c.max_size)
    }

    fn place(&mut self, agent: usize, len: usize) -> Descriptor {
        let regions = self.workload.agents[agent].regions();
        let region = &regions[self.rng.below(regions.len() as u64) as usize];
        let block = region.block_size();
        let blocks = region.size() / block;
        let offset = if blocks > 0 && len <= block {
            // Inside one block, 64-byte aligned.
            let within = (block - len) as u64;
            self.rng.below(blocks as u64) as usize * block
                + (self.rng.below(within + 1) as usize & !63)
        } else {
            self.rng.below((region.size() - len) as u64 + 1) as usize
        };
        Descriptor {
            agent,
            region: region.id(),
            offset,
            len,
        }
    }

    /// Posts one transfer and waits for it: picks a target, a direction, a
    /// size and places on both sides, validates and times the post, copies the
    /// bytes and records everything in the initiator's (and target's) telemetry.
    pub fn step(&mut self) -> Outcome {
        let w = self.workload;
        let target = w.targets[self.rng.below(w.targets.len() as u64) as usize];
        let len = self.size();
        let direction = if self.rng.below(2) == 0 {
            Direction::Write
        } else {
            Direction::Read
        };
        let local = self.place(self.initiator, len);
        let mut remote = self.place(target, len);
        if w.config.failure_one_in > 0 && self.rng.below(w.config.failure_one_in) == 0 {
            if self.rng.below(2) == 0 {
                remote.region = UNREGISTERED_REGION;
            } else {
                let size = w.agents[target].regions()[0].size();
                remote.region = w.agents[target].regions()[0].id();
                remote.offset = size - len / 2;
            }
        }
        let (src, dst) = match direction {
            Direction::Write => (local, remote),
            Direction::Read => (remote, local),
        };
        let initiator = &w.agents[self.initiator];
        // Timed with telemetry's own clock (µs since the epoch, a TSC read), so
        // the readings double as the events' timestamps: recording reads no
        // clock of its own.
        let posted = Telemetry::now_us();
        let regions = w.validate(&src).and_then(|s| Ok((s, w.validate(&dst)?)));
        let (src_region, dst_region) = match regions {
            Ok(pair) => pair,
            Err(status) => {
                initiator.telemetry.error(status);
                initiator.counters.errors.fetch_add(1, Ordering::Relaxed);
                return Outcome::Failed(status);
            }
        };
        let post_done = Telemetry::now_us();
        initiator
            .telemetry
            .post_time_at(post_done, post_done.saturating_sub(posted));
        memory::copy(
            (src.agent, src_region, src.offset),
            (dst.agent, dst_region, dst.offset),
            len,
        );
        let done = Telemetry::now_us();
        initiator.telemetry.transfer_completed_at(
            done,
            done.saturating_sub(posted),
            direction,
            len as u64,
        );
        for agent in [initiator, &w.agents[target]] {
            agent.counters.transfers.fetch_add(1, Ordering::Relaxed);
            agent
                .counters
                .bytes
                .fetch_add(len as u64, Ordering::Relaxed);
        }
        w.agents[target].remote_bytes.record_at(done, len as u64);
        Outcome::Completed {
            bytes: len,
            direction,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> WorkloadConfig {
        WorkloadConfig {
            threads: 2,
            min_size: 4096,
            max_size: 64 << 10,
            region_size: 1 << 20,
            regions_per_agent: 2,
            failure_one_in: 10,
            seed: 7,
        }
    }

    fn collecting(count: usize) -> Vec<(String, Role, Telemetry)> {
        agent_roles(count)
            .unwrap()
            .into_iter()
            .map(|(name, role)| {
                let t = Telemetry::builder(&name)
                    .buffer_size(1 << 16)
                    .unwrap()
                    .build()
                    .unwrap();
                (name, role, t)
            })
            .collect()
    }

    #[test]
    fn roles_and_names() {
        let two = agent_roles(2).unwrap();
        assert_eq!(two[0], ("initiator".to_owned(), Role::Initiator));
        assert_eq!(two[1], ("target".to_owned(), Role::Target));
        let five: Vec<String> = agent_roles(5).unwrap().into_iter().map(|a| a.0).collect();
        assert_eq!(
            five,
            [
                "initiator-0",
                "initiator-1",
                "initiator-2",
                "target-0",
                "target-1"
            ]
        );
        assert!(agent_roles(1).is_err());
    }

    #[test]
    fn invalid_settings_are_named() {
        let mut c = small();
        c.max_size = c.region_size * 2;
        let err = c.validate().unwrap_err().to_string();
        assert!(
            err.contains("region_size") && err.contains("accepted"),
            "{err}"
        );
        c = small();
        c.min_size = 0;
        assert!(c.validate().is_err());
    }

    #[test]
    fn steps_copy_bytes_and_record_every_event() {
        let workload = Workload::new(small(), collecting(2)).unwrap();
        let mut worker = workload.worker(0);
        let (mut ok, mut failed, mut bytes) = (0u64, 0u64, 0u64);
        for _ in 0..400 {
            match worker.step() {
                Outcome::Completed { bytes: b, .. } => {
                    ok += 1;
                    bytes += b as u64;
                    assert!((4096..=64 << 10).contains(&b));
                }
                Outcome::Failed(status) => {
                    failed += 1;
                    assert!(status == ERR_NOT_FOUND || status == ERR_INVALID_PARAM);
                }
            }
        }
        assert!(failed > 0 && ok > 300, "{ok} ok, {failed} failed");
        let c = workload.agents()[0].counters();
        assert_eq!((c.transfers, c.bytes, c.errors), (ok, bytes, failed));
        let telemetries = workload.shutdown();
        let mut events = Vec::new();
        telemetries[0].1.drain(&mut events);
        let count = |name: &str| events.iter().filter(|e| e.name() == name).count() as u64;
        assert_eq!(count("agent_memory_registered"), 2);
        assert_eq!(count("agent_memory_deregistered"), 2);
        assert_eq!(count("agent_xfer_time"), ok);
        assert_eq!(count("agent_xfer_post_time"), ok);
        assert_eq!(
            count("agent_tx_requests_num") + count("agent_rx_requests_num"),
            ok
        );
        assert_eq!(count(ERR_NOT_FOUND) + count(ERR_INVALID_PARAM), failed);
        let moved: u64 = events
            .iter()
            .filter(|e| e.name() == "agent_tx_bytes" || e.name() == "agent_rx_bytes")
            .map(|e| e.value)
            .sum();
        assert_eq!(moved, bytes);
        let mut target_events = Vec::new();
        telemetries[1].1.drain(&mut target_events);
        let served: Vec<u64> = target_events
            .iter()
            .filter(|e| e.name() == REMOTE_BYTES_EVENT)
            .map(|e| e.value)
            .collect();
        assert_eq!(served.len() as u64, ok);
        assert_eq!(served.iter().sum::<u64>(), bytes);
    }

    #[test]
    fn threads_run_until_the_deadline() {
        let workload = Workload::new(small(), collecting(3)).unwrap();
        let stop = AtomicBool::new(false);
        let totals = workload.run(&stop, Some(Duration::from_millis(200)));
        assert!(totals.transfers > 0);
        let sum: u64 = workload
            .agents()
            .iter()
            .filter(|a| a.role() == Role::Initiator)
            .map(|a| a.counters().transfers)
            .sum();
        assert_eq!(sum, totals.transfers);
    }
}
