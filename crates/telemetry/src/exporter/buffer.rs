//! The built-in `buffer` exporter: events go into the agent's shared-memory
//! ring file, and the collector's loss totals into its trailer.

use std::path::Path;

use nixl_telemetry_abi::ring::RingLayout;
use nixl_telemetry_abi::Event;

use super::{ExportOutcome, Exporter};
use crate::error::TelemetryError;
use crate::ring::{RingWriter, TrailerCounts};
use crate::stats::DropCounts;

/// The built-in exporter: a shared-memory ring file `<dir>/<agent>`.
#[must_use = "dropping it closes the ring file (marked closed in its trailer)"]
pub struct BufferExporter {
    ring: RingWriter,
}

impl BufferExporter {
    /// Creates the ring directory if needed and the agent's ring file in it,
    /// in `ring_layout` (`NIXL_TELEMETRY_RING_VERSION`).
    pub fn create(
        dir: &Path,
        agent: &str,
        capacity: usize,
        ring_layout: &'static RingLayout,
    ) -> Result<BufferExporter, TelemetryError> {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(TelemetryError::RingDirectory {
                    path: dir.to_owned(),
                    reason: "it exists and is not a directory".to_owned(),
                })
            }
            Err(_) => std::fs::create_dir_all(dir).map_err(|e| TelemetryError::RingDirectory {
                path: dir.to_owned(),
                reason: format!("cannot create it: {e}"),
            })?,
        }
        Ok(BufferExporter {
            ring: RingWriter::create_with_layout(dir, agent, capacity, ring_layout)?,
        })
    }

    /// The ring file's path.
    pub fn path(&self) -> &Path {
        self.ring.path()
    }
}

impl Exporter for BufferExporter {
    fn name(&self) -> &str {
        "buffer"
    }

    fn export(&mut self, events: &[Event]) -> ExportOutcome {
        let was_cut = self.ring.is_cut();
        let pushed = self.ring.push(events);
        if self.ring.is_cut() {
            if !was_cut {
                tracing::error!(
                    path = %self.ring.path().display(),
                    "the ring file was truncated by another process; its events are lost from now on"
                );
            }
            return ExportOutcome::failed(events.len());
        }
        ExportOutcome {
            delivered: pushed.written,
            dropped_full: pushed.dropped_full,
            failed: 0,
            dropped_format: pushed.dropped_format,
        }
    }

    fn report_drops(&mut self, totals: &DropCounts) {
        self.ring.update_trailer(&TrailerCounts {
            dropped_staging_full: totals.staging_full + totals.late,
        });
    }
}
