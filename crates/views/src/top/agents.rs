//! Every agent `top` follows: its ring, its events folded into the one
//! metric model (`nixl-telemetry-metrics`), and the rows read off the model's
//! totals at each refresh (rates: two readings subtracted).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nixl_telemetry::ring::{FileIdentity, ReadMode, TrailerInfo};
use nixl_telemetry::Event;
use nixl_telemetry_metrics::{histogram, slot, AgentMetrics, Buckets, SeriesNaming, Totals};

use super::feed::{Feed, Missed};
use super::row::shown_text;
use super::row::{Flags, Rates, Row, Starting};
use crate::lost::events_lost;
use crate::ring_files::{Candidate, RingSources};

/// Gone agents kept on screen; beyond, the longest gone are forgotten.
const MAX_GONE: usize = 64;

/// One agent.
struct Agent {
    /// The agent's name (its ring's file name).
    name: String,
    path: PathBuf,
    /// `None` once the ring file is gone (or could not be read).
    feed: Option<Feed>,
    metrics: AgentMetrics,
    version: Option<i32>,
    trailer: Option<TrailerInfo>,
    /// The baseline of the rates: at the last refresh, or `None` until
    /// the feed has read what its ring held when it was opened (recorded
    /// before `top` looked: no rate is made of it).
    last: Option<Baseline>,
    /// What the feeds of this agent missed before the current one (a ring
    /// replaced by a restarted producer gets a new feed).
    missed_before: Missed,
    /// Why the ring could not be read, if so.
    problem: Option<String>,
    /// Refreshes since the agent went, for forgetting the longest gone.
    gone_for: u64,
    history: VecDeque<Option<u64>>,
}

impl Agent {
    fn missed(&self) -> Missed {
        let now = self.feed.as_ref().map(Feed::missed).unwrap_or_default();
        self.missed_before.plus(&now)
    }

    fn lost(&self) -> Option<u128> {
        let reported = u128::from(self.metrics.totals().fixed(slot::DROPPED));
        events_lost(
            self.trailer.map(|t| t.events_lost()),
            reported,
            self.version,
        )
    }
}

/// What an agent's rates are measured from.
struct Baseline {
    totals: Totals,
    missed: Missed,
    /// The trailer's count of events written.
    written: Option<u64>,
    at: Instant,
}

/// The agents of the rings named on the command line.
pub struct Agents {
    sources: RingSources,
    mode: ReadMode,
    buckets: Buckets,
    agents: Vec<Agent>,
    /// Where each agent is in `agents`, by its ring's path.
    by_path: HashMap<PathBuf, usize>,
    /// Files that are not readable rings, with the reason (kept while present).
    skipped: Vec<(PathBuf, String)>,
    events: Vec<Event>,
    history_len: usize,
}

impl Agents {
    /// Follows the rings `sources` names, `mode` peeking or consuming;
    /// each row keeps the throughput of its last `history_len` refreshes.
    pub fn new(sources: RingSources, mode: ReadMode, history_len: usize) -> Agents {
        Agents {
            sources,
            mode,
            buckets: Buckets::default(),
            agents: Vec::new(),
            by_path: HashMap::new(),
            skipped: Vec::new(),
            events: Vec::new(),
            history_len: history_len.max(1),
        }
    }

    /// Whether the rings are consumed.
    pub fn consuming(&self) -> bool {
        self.mode == ReadMode::Consume
    }

    /// Whether a scan now would list the same rings as the last one (see
    /// [`RingSources::unchanged_since_scan`]).
    pub fn sources_unchanged(&self) -> bool {
        self.sources.unchanged_since_scan()
    }

    /// Files that are not readable rings, with the reason.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
    }

    /// Looks for rings that appeared, went or were replaced: a ring that
    /// went is read to its end, a new one read for the first time. A
    /// directory that cannot be listed is reported among the skipped files,
    /// and its agents count as gone until it can be listed again.
    pub fn scan(&mut self) {
        let scan = self.sources.scan();
        let files = &scan.files;
        let now = Instant::now();
        let now_us = nixl_telemetry::clock::system_now_us();
        // Rings that went or were replaced: read to their end, then closed
        // (a replaced one is opened again below, as the same agent).
        // Looked up by path: a scan of many rings costs one pass over them,
        // not one per agent.
        let present: HashMap<&Path, FileIdentity> =
            files.iter().map(|f| (f.path(), f.file.identity)).collect();
        for agent in &mut self.agents {
            let Some(feed) = &agent.feed else { continue };
            let still = present.get(agent.path.as_path()) == Some(&feed.identity());
            if !still {
                read_feed(agent, now, now_us, &mut self.events);
                agent.missed_before = agent.missed();
                agent.feed = None;
            }
        }
        // Refusals are shown while the scan reports them; files that are no
        // ring, while they are there.
        self.skipped
            .retain(|(path, _)| files.iter().any(|f| f.path() == path));
        for (path, message) in scan.refused.into_iter().chain(scan.unlisted) {
            if !self.skipped.iter().any(|(p, _)| p == &path) {
                self.skipped.push((path, message));
            }
        }
        for file in files {
            let known = self.by_path.get(file.path()).copied();
            if known.is_some_and(|at| self.agents[at].feed.is_some()) {
                continue;
            }
            match Feed::open(file, &self.sources, self.mode, now) {
                Ok(feed) => {
                    self.skipped.retain(|(path, _)| path != file.path());
                    let at = match known {
                        Some(at) => at,
                        None => {
                            self.agents.push(self.new_agent(file));
                            let at = self.agents.len() - 1;
                            self.by_path.insert(file.path().to_owned(), at);
                            at
                        }
                    };
                    let agent = &mut self.agents[at];
                    agent.version = Some(feed.version());
                    agent.problem = None;
                    agent.gone_for = 0;
                    agent.feed = Some(feed);
                    read_feed(agent, now, now_us, &mut self.events);
                }
                Err(reason) => match self.skipped.iter_mut().find(|(p, _)| p == file.path()) {
                    Some((_, known_reason)) => *known_reason = reason,
                    None => self.skipped.push((file.path().to_owned(), reason)),
                },
            }
        }
    }

    /// Reads the rings whose look is due `now` (every ring when `all`), and
    /// returns when the next look is due (at the latest `until`).
    pub fn look(&mut self, now: Instant, all: bool, until: Instant) -> Instant {
        let now_us = nixl_telemetry::clock::system_now_us();
        let mut next = until;
        for agent in &mut self.agents {
            let Some(feed) = &agent.feed else { continue };
            if all || feed.next_look() <= now {
                read_feed(agent, now, now_us, &mut self.events);
            }
            if let Some(feed) = &agent.feed {
                next = next.min(feed.next_look());
            }
        }
        next
    }

    fn new_agent(&self, file: &Candidate) -> Agent {
        let name = file.agent();
        Agent {
            metrics: AgentMetrics::new(&name, self.buckets.clone(), SeriesNaming::Prometheus),
            name,
            path: file.path().to_owned(),
            feed: None,
            version: None,
            trailer: None,
            last: None,
            missed_before: Missed::default(),
            problem: None,
            gone_for: 0,
            history: VecDeque::new(),
        }
    }

    /// The rows at a refresh `now`, `elapsed` after the previous one:
    /// rates are the model's totals now less those at the previous refresh
    /// (or, for an agent first seen since, when it had read what its ring
    /// held: over the time since then, when that is half the interval or
    /// more).
    pub fn refresh(&mut self, now: Instant, elapsed: Duration) -> Vec<Row> {
        for agent in &mut self.agents {
            if agent.feed.is_none() {
                agent.gone_for += 1;
            }
        }
        let mut gone: Vec<(u64, usize)> = self
            .agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.feed.is_none())
            .map(|(i, a)| (a.gone_for, i))
            .collect();
        if gone.len() > MAX_GONE {
            gone.sort_unstable_by(|a, b| b.cmp(a));
            let mut forget: Vec<usize> = gone[..gone.len() - MAX_GONE]
                .iter()
                .map(|&(_, i)| i)
                .collect();
            forget.sort_unstable();
            for i in forget.into_iter().rev() {
                self.agents.remove(i);
            }
            self.by_path = self
                .agents
                .iter()
                .enumerate()
                .map(|(at, a)| (a.path.clone(), at))
                .collect();
        }
        // A name shared by rings of two directories is shown as its path.
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        let shown: Vec<String> = self
            .agents
            .iter()
            .map(|a| {
                let twice = names.iter().filter(|&&n| n == a.name).count() > 1;
                let text = if twice {
                    a.path.to_string_lossy().into_owned()
                } else {
                    a.name.clone()
                };
                shown_text(&text).into_owned()
            })
            .collect();
        let history_len = self.history_len;
        self.agents
            .iter_mut()
            .zip(shown)
            .map(|(agent, shown)| row(agent, shown, now, elapsed, history_len))
            .collect()
    }
}

/// Reads what the agent's ring holds and folds it into the model.
fn read_feed(agent: &mut Agent, now: Instant, now_us: u64, events: &mut Vec<Event>) {
    let Some(feed) = agent.feed.as_mut() else {
        return;
    };
    events.clear();
    match feed.poll(now, now_us, events) {
        Ok(()) => {
            agent.metrics.record(events);
            agent.trailer = feed.trailer().or(agent.trailer);
        }
        Err(problem) => {
            agent.problem = Some(problem);
            agent.missed_before = agent.missed();
            agent.feed = None;
        }
    }
    // The rates start once what the ring held at open is read.
    if agent.last.is_none() && agent.feed.as_ref().is_none_or(Feed::caught_up) {
        agent.last = Some(Baseline {
            totals: agent.metrics.totals().clone(),
            missed: agent.missed(),
            written: agent.trailer.map(|t| t.events_written),
            at: now,
        });
    }
}

/// The agent's row at a refresh `now`, `elapsed` after the previous one:
/// its rates over the time since its baseline.
fn row(
    agent: &mut Agent,
    shown: String,
    now: Instant,
    elapsed: Duration,
    history_len: usize,
) -> Row {
    let totals = agent.metrics.totals();
    let missed = agent.missed();
    let written = agent.trailer.map(|t| t.events_written);
    let full = agent.feed.as_ref().is_some_and(Feed::is_full);
    // A baseline taken late in the interval (an agent first seen, or whose
    // ring's old events were read, shortly before) makes no rate yet: it is
    // kept for the next refresh.
    let since = agent
        .last
        .as_ref()
        .map(|b| now.saturating_duration_since(b.at));
    let too_short = agent.feed.is_some() && since.is_some_and(|s| s < elapsed / 2);
    let starting = if agent.feed.is_none() {
        None
    } else if agent.last.is_none() {
        Some(Starting::ReadingWhatTheRingHeld)
    } else if too_short {
        Some(Starting::LateInTheInterval)
    } else {
        None
    };
    let (rates, written_per_s, interval_missed) = match (&agent.last, since) {
        (Some(before), Some(since)) if agent.feed.is_some() && !too_short => {
            let seconds = since.as_secs_f64().max(1e-3);
            let interval_missed = missed.since(&before.missed);
            let diff = totals.since(&before.totals);
            let per_s = |v: u64| v as f64 / seconds;
            let xfer = diff.histogram(histogram::XFER_TIME);
            let rates = Rates {
                events_per_s: per_s(diff.events()),
                tx_bytes_per_s: per_s(diff.fixed(slot::TX_BYTES)),
                rx_bytes_per_s: per_s(diff.fixed(slot::RX_BYTES)),
                requests_per_s: per_s(
                    diff.fixed(slot::TX_REQUESTS)
                        .saturating_add(diff.fixed(slot::RX_REQUESTS)),
                ),
                p50_us: xfer.quantile(0.5),
                p99_us: xfer.quantile(0.99),
            };
            let written_per_s = match (written, before.written) {
                (Some(now), Some(before)) => Some(per_s(now.saturating_sub(before))),
                _ => None,
            };
            let shown_rates = (!interval_missed.any()).then_some(rates);
            (shown_rates, written_per_s, interval_missed)
        }
        _ => (None, None, Missed::default()),
    };
    let bytes_per_s = rates.map(|r| r.bytes_per_s().round() as u64);
    agent.history.push_back(bytes_per_s);
    while agent.history.len() > history_len {
        agent.history.pop_front();
    }
    let mut errors_by_status: Vec<(String, u64)> = totals
        .errors()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| (shown_text(s).into_owned(), n))
        .collect();
    errors_by_status.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let row = Row {
        agent: shown,
        path: shown_text(&agent.path.to_string_lossy()).into_owned(),
        version: agent.version,
        gone: agent.feed.is_none(),
        rates,
        written_per_s,
        flags: Flags {
            missed: interval_missed,
            full,
            problem: agent.problem.clone(),
            starting,
        },
        errors: errors_by_status.iter().map(|(_, n)| n).sum(),
        errors_by_status,
        memory_registered: totals.registered_now(),
        lost: agent.lost(),
        history: agent.history.iter().copied().collect(),
    };
    // No baseline is made here before the feed has read what its ring held.
    if starting.is_none() {
        agent.last = Some(Baseline {
            totals: totals.clone(),
            missed,
            written,
            at: now,
        });
    }
    row
}
