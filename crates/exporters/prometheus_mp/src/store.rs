//! The writer side: one agent's totals, kept by the flush thread and
//! published lock-free into the agent's store.
//!
//! The store is created without a name (`O_TMPFILE`), locked, sized and
//! filled in, and only then linked into the directory, so no reader ever
//! sees a half-made store, and the lock (held for the process's life) is
//! what tells readers the writer is alive. Where the filesystem has no
//! `O_TMPFILE`, a hidden temporary name and a rename do the same.
//!
//! A publish is a sequence lock: the sequence is made odd, the numbers that
//! changed are stored, the sequence is made even again. Readers copy the
//! store and retry when the sequence moved.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use nixl_telemetry_abi::Event;
use nixl_telemetry_metrics::{AgentMetrics, Buckets, Series, SeriesNaming};

use crate::error::MpError;
use crate::files;
use crate::layout::{self, entry, off, text_len, FILE_SIZE, FIXED_READINGS, MAX_SERIES};
use crate::sys::StoreMapping;

/// Who a store speaks for: the labels of its series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreIdentity {
    /// The exporter's listen address, as text.
    pub listen: String,
    /// The host name.
    pub hostname: String,
    /// The agent's name.
    pub agent_name: String,
    /// The process id.
    pub pid: u32,
    /// The exporter's ordinal in its process.
    pub agent_instance: u32,
    /// The local rank, if known.
    pub local_rank: Option<String>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One agent's store and the model's totals behind it.
pub struct StoreWriter {
    map: StoreMapping,
    /// Holds the lock for the writer's life.
    file: File,
    path: PathBuf,
    metrics: AgentMetrics,
}

impl std::fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWriter")
            .field("path", &self.path)
            .field("series", &self.metrics.totals().series().len())
            .finish_non_exhaustive()
    }
}

fn text(what: &'static str, value: &str, size: usize) -> Result<Vec<u8>, MpError> {
    layout::encode_text(value, size).ok_or_else(|| MpError::TooLong {
        what,
        value: value.to_owned(),
        limit: size - 2,
    })
}

impl StoreWriter {
    /// Creates, locks, fills in and names the store of `identity` in `dir`.
    pub fn create(
        dir: &Path,
        identity: &StoreIdentity,
        buckets: &Buckets,
    ) -> Result<StoreWriter, MpError> {
        StoreWriter::create_in(dir, identity, buckets, true)
    }

    /// [`StoreWriter::create`], with `O_TMPFILE` tried only if `unnamed`
    /// (otherwise the temporary name and rename, as where it is missing).
    fn create_in(
        dir: &Path,
        identity: &StoreIdentity,
        buckets: &Buckets,
        unnamed: bool,
    ) -> Result<StoreWriter, MpError> {
        let texts = [
            (
                off::LISTEN,
                text("listen address", &identity.listen, text_len::LISTEN)?,
            ),
            (
                off::HOSTNAME,
                text("host name", &identity.hostname, text_len::HOSTNAME)?,
            ),
            (
                off::AGENT,
                text("agent name", &identity.agent_name, text_len::AGENT)?,
            ),
            (
                off::RANK,
                text(
                    "local rank",
                    identity.local_rank.as_deref().unwrap_or(""),
                    text_len::RANK,
                )?,
            ),
        ];
        let bounds = buckets.bounds();
        assert!(bounds.len() <= layout::MAX_BOUNDS, "checked by MpSettings");
        let path = dir.join(files::store_name(identity.pid, identity.agent_instance));
        let file_error = |action: &'static str, path: &Path| {
            let path = path.to_owned();
            move |source| MpError::File {
                action,
                path,
                source,
            }
        };
        let unnamed = if unnamed {
            files::create_unnamed(dir).map_err(file_error("create a store in", dir))?
        } else {
            None
        };
        let (file, temporary) = match unnamed {
            Some(f) => (f, None),
            None => {
                let tmp = dir.join(format!(
                    ".{}.tmp",
                    path.file_name().unwrap_or_default().to_string_lossy()
                ));
                let f = files::create_new(&tmp).map_err(file_error("create the store", &tmp))?;
                (f, Some(tmp))
            }
        };
        let cleanup = |temporary: &Option<PathBuf>| {
            if let Some(tmp) = temporary {
                let _ = std::fs::remove_file(tmp);
            }
        };
        let result = (|| {
            file.try_lock().map_err(|e| MpError::File {
                action: "lock the new store",
                path: path.clone(),
                source: io::Error::from(e),
            })?;
            file.set_len(FILE_SIZE as u64)
                .map_err(file_error("size the store", &path))?;
            let map =
                StoreMapping::new(&file, FILE_SIZE).map_err(file_error("map the store", &path))?;
            for (offset, bytes) in &texts {
                map.write_bytes(*offset, bytes);
            }
            let now = now_ms();
            map.u32_at(off::VERSION)
                .store(layout::VERSION, Ordering::Relaxed);
            map.u32_at(off::HEADER_LEN)
                .store(off::SERIES as u32, Ordering::Relaxed);
            map.u64_at(off::FILE_SIZE)
                .store(FILE_SIZE as u64, Ordering::Relaxed);
            map.u64_at(off::UPDATED_MS).store(now, Ordering::Relaxed);
            map.u64_at(off::CREATED_MS).store(now, Ordering::Relaxed);
            map.u32_at(off::PID).store(identity.pid, Ordering::Relaxed);
            map.u32_at(off::HAS_RANK)
                .store(u32::from(identity.local_rank.is_some()), Ordering::Relaxed);
            map.u32_at(off::BOUND_COUNT)
                .store(bounds.len() as u32, Ordering::Relaxed);
            map.u32_at(off::AGENT_INSTANCE)
                .store(identity.agent_instance, Ordering::Relaxed);
            for (i, &b) in bounds.iter().enumerate() {
                map.u64_at(off::BOUNDS + 8 * i)
                    .store(b.to_bits(), Ordering::Relaxed);
            }
            fence(Ordering::Release);
            map.write_bytes(off::MAGIC, &layout::MAGIC);
            match &temporary {
                None => files::link_unnamed(&file, &path)
                    .map_err(file_error("name the store", &path))?,
                Some(tmp) => {
                    std::fs::rename(tmp, &path).map_err(file_error("name the store", &path))?
                }
            }
            Ok(map)
        })();
        let map = match result {
            Ok(map) => map,
            Err(e) => {
                cleanup(&temporary);
                return Err(e);
            }
        };
        let mut writer = StoreWriter {
            map,
            file,
            path,
            metrics: AgentMetrics::new(
                &identity.agent_name,
                buckets.clone(),
                SeriesNaming::Prometheus,
            ),
        };
        // The known error statuses, at 0.
        writer.publish();
        Ok(writer)
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user the store belongs to (this process's).
    pub fn uid(&self) -> io::Result<u32> {
        Ok(self.file.metadata()?.uid())
    }

    /// Records `events` in order, then publishes. The store's update time
    /// is set by [`StoreWriter::heartbeat`] (the plug-in's `flush`, after
    /// every pass), not here: one clock read per pass rather than per batch.
    pub fn record(&mut self, events: &[Event]) {
        self.metrics.record(events);
        self.publish();
    }

    /// Marks the store as updated at `now_ms` (the stale TTL counts from here).
    pub fn heartbeat(&self, now_ms: u64) {
        self.map
            .u64_at(off::UPDATED_MS)
            .store(now_ms, Ordering::Release);
    }

    /// Copies what changed into the store: new series entries first (each
    /// complete before the count that shows it), then the numbers under the
    /// sequence lock.
    fn publish(&mut self) {
        let changes = self.metrics.changes();
        let totals = self.metrics.totals();
        let map = &self.map;
        for index in changes.new_series() {
            write_entry(map, index, &totals.series_list()[index]);
        }
        if !changes.is_empty() {
            let seq = map.u64_at(off::SEQ);
            let s = seq.load(Ordering::Relaxed);
            seq.store(s.wrapping_add(1), Ordering::Relaxed);
            fence(Ordering::Release);
            for (dst, &v) in map
                .u64_slice(layout::fixed(0), FIXED_READINGS)
                .iter()
                .zip(totals.fixed_readings())
            {
                dst.store(v, Ordering::Relaxed);
            }
            for h in 0..nixl_telemetry_metrics::histogram::COUNT {
                if changes.histogram_changed(h) {
                    let counts = totals.histogram(h).counts();
                    let dst = map.u64_slice(layout::bucket(h, 0), counts.len());
                    for (d, &v) in dst.iter().zip(counts) {
                        d.store(v, Ordering::Relaxed);
                    }
                }
            }
            let values = totals.series_values();
            for i in changes.changed_values() {
                map.u64_at(layout::series(i) + entry::VALUE)
                    .store(values[i], Ordering::Relaxed);
            }
            seq.store(s.wrapping_add(2), Ordering::Release);
        }
        self.metrics.clear_changes();
    }
}

/// Writes series entry `index` (value 0) and makes it visible.
fn write_entry(map: &StoreMapping, index: usize, series: &Series) {
    assert!(index < MAX_SERIES, "bounded by the model's MAX_SERIES");
    let at = layout::series(index);
    let kind = match series {
        Series::Error { .. } => layout::KIND_ERROR,
        Series::Counter { .. } => layout::KIND_COUNTER,
    };
    let bytes = layout::encode_text(series.name(), text_len::SERIES_NAME)
        .expect("the model's series names fit the field (MAX_SERIES_NAME_LEN)");
    map.write_bytes(at + entry::NAME, &bytes);
    map.u64_at(at + entry::VALUE).store(0, Ordering::Relaxed);
    map.u32_at(at + entry::CATEGORY)
        .store(series.category().0 as u32, Ordering::Relaxed);
    map.u32_at(at + entry::KIND).store(kind, Ordering::Relaxed);
    // The entry is complete before the count that shows it.
    map.u32_at(off::SERIES_COUNT)
        .store(index as u32 + 1, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{open_store, read_store};

    fn identity() -> StoreIdentity {
        StoreIdentity {
            listen: "127.0.0.1:9".to_owned(),
            hostname: "h".to_owned(),
            agent_name: "a".to_owned(),
            pid: std::process::id(),
            agent_instance: 7,
            local_rank: Some("2".to_owned()),
        }
    }

    fn check(unnamed: bool) {
        let dir = tempfile::tempdir().unwrap();
        let buckets = Buckets::new(&[1.0, 2.0]).unwrap();
        let mut w = StoreWriter::create_in(dir.path(), &identity(), &buckets, unnamed).unwrap();
        w.record(&[Event::new(
            1,
            nixl_telemetry_abi::Category::PERFORMANCE,
            "agent_xfer_time",
            2,
        )]);
        // Exactly the store, under its final name: nothing temporary is left.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(files::is_store_name(&names[0]), "{names:?}");
        // Locked by its writer: another descriptor cannot take the lock.
        let file = open_store(w.path(), w.uid().unwrap()).unwrap();
        assert!(matches!(
            file.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        let read = read_store(&file).unwrap();
        assert_eq!(read.agent_instance, 7);
        assert_eq!(read.local_rank.as_deref(), Some("2"));
        assert_eq!(read.totals.histogram(0).counts(), [0, 1, 0]);
        drop(w);
        file.try_lock().unwrap();
    }

    #[test]
    fn an_unnamed_store_is_locked_named_and_readable() {
        check(true);
    }

    #[test]
    fn the_rename_fallback_leaves_the_same_store() {
        check(false);
    }
}
