//! `top --plain` inside another command: the demo prints, while its agents
//! run, the table `nixl-telemetry top --plain DIR` prints, from the same
//! rings, the same metric model and the same code.

use std::path::Path;
use std::time::Duration;

use nixl_telemetry::ring::{ReadMode, ScanRules};

use super::{plain_refresh, Agents, Clock, HISTORY};
use crate::ring_files::RingSources;

/// The rings of one directory, read as `top --plain` reads them, with a
/// table every interval.
pub struct PlainView {
    agents: Agents,
    clock: Clock,
}

impl PlainView {
    /// Follows the rings of `dir` (peeking, or consuming as `top --consume`
    /// does), with a table every `interval`.
    pub fn open(dir: &Path, mode: ReadMode, interval: Duration) -> anyhow::Result<PlainView> {
        let sources =
            RingSources::new(&[dir.to_owned()], ScanRules::Confined).map_err(anyhow::Error::msg)?;
        let history_len = (HISTORY.as_secs_f64() / interval.as_secs_f64()).ceil() as usize;
        let mut agents = Agents::new(sources, mode, history_len);
        agents.scan();
        Ok(PlainView {
            agents,
            clock: Clock::new(interval),
        })
    }

    /// Scans and reads what is due; returns the table when a refresh is due.
    pub fn tick(&mut self) -> Option<String> {
        let (now, elapsed) = self.clock.tick(&mut self.agents)?;
        Some(plain_refresh(&mut self.agents, now, elapsed))
    }

    /// Time until the next thing to do.
    pub fn wait(&self) -> Duration {
        self.clock.wait()
    }
}
