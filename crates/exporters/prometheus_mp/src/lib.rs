//! The multi-process Prometheus exporter, without plug-in entry points: the
//! plug-in `libtelemetry_exporter_prometheus_mp.so` (selected with
//! `NIXL_TELEMETRY_EXPORTER=prometheus_mp`) is `crates/plugins/prometheus_mp`,
//! an `export_plugin!` around [`MultiProcessExporter`].
//!
//! Every process of a run (one agent per GPU process, say) writes its totals
//! into its own memory-mapped store in the run's directory
//! (`NIXL_TELEMETRY_MULTIPROC_DIR`); exactly one of them, elected by an
//! `flock` on the lock file named after the address, binds the address and,
//! on each scrape, reads every store and publishes every rank as its own
//! series, labelled `hostname`, `agent_name`, `pid`, `agent_instance` and
//! `local_rank`. When the owner dies, a writer takes over at the end of its
//! next flush pass.
//! Names, types, help texts and buckets are those of the single-process
//! `prometheus` plug-in, whose rendering and HTTP server this crate reuses.
//! See `docs/prometheus-mp.md`.
//!
//! The parts: [`settings`] (environment), `layout` (the store's bytes),
//! `sys` (the only unsafe code: the mapping; denied everywhere else),
//! [`store`] (the writer),
//! [`scan`] (the owner's reading of the directory), `election` (who serves),
//! `files` (the directory and its names).

#![deny(unsafe_code)]

mod election;
pub mod error;
pub mod files;
pub mod label_sets;
pub mod layout;
pub mod scan;
pub mod settings;
pub mod store;
mod sys;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use nixl_telemetry_abi::rust_plugin::{full_message, RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;
use nixl_telemetry_prometheus::external::BodySource;
use nixl_telemetry_prometheus::Format;

pub use election::TAKEOVER_INTERVAL;
pub use error::MpError;
pub use settings::MpSettings;

use election::Election;
use scan::Collector;
use store::{StoreIdentity, StoreWriter};

/// Exporters created in this process so far: the next one's `agent_instance`.
static INSTANCES: AtomicU32 = AtomicU32::new(0);

/// The exporter of one agent of one process.
#[derive(Debug)]
pub struct MultiProcessExporter {
    // The endpoint (if owner) closes before the store is released.
    election: Election,
    store: StoreWriter,
    collector: Arc<Collector>,
}

impl MultiProcessExporter {
    /// Creates the exporter of `agent_name`: its store in the run's directory,
    /// and the owner's endpoint if no live process serves the address yet.
    ///
    /// Fails if the directory cannot be used, a label does not fit a store,
    /// or a live owner serves the directory on another address.
    pub fn with_settings(
        agent_name: &str,
        settings: &MpSettings,
    ) -> Result<MultiProcessExporter, MpError> {
        settings.check()?;
        let dir = &settings.dir;
        files::prepare_directory(dir)?;
        let identity = StoreIdentity {
            listen: settings.base.listen.to_string(),
            hostname: nixl_telemetry_metrics::hostname().to_owned(),
            agent_name: agent_name.to_owned(),
            pid: std::process::id(),
            agent_instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
            local_rank: settings.local_rank.clone(),
        };
        let store = StoreWriter::create(dir, &identity, &settings.base.buckets)?;
        let set_up = || -> Result<(Election, Arc<Collector>), MpError> {
            let uid = store.uid().map_err(|source| MpError::File {
                action: "inspect the store",
                path: store.path().to_owned(),
                source,
            })?;
            election::check_other_runs(dir, &settings.base.listen, uid)?;
            let collector = Arc::new(Collector::new(
                dir.clone(),
                identity.listen.clone(),
                uid,
                settings.stale_ttl,
            ));
            let election = Election::new(
                dir,
                settings.base.listen,
                settings.base.limits,
                Arc::clone(&collector),
                uid,
            )?;
            Ok((election, collector))
        };
        let (mut election, collector) = match set_up() {
            Ok(parts) => parts,
            Err(e) => {
                // Nobody saw this store publish anything: take it away again.
                let _ = std::fs::remove_file(store.path());
                return Err(e);
            }
        };
        election.try_take(store::now_ms());
        Ok(MultiProcessExporter {
            election,
            store,
            collector,
        })
    }

    /// Turns `events` into totals and publishes them to the store (no lock,
    /// no system call).
    pub fn record(&mut self, events: &[Event]) {
        self.store.record(events);
    }

    /// Marks the store as updated now and, if no live process serves the
    /// run, becomes the owner (one `flock` attempt). The plug-in's `flush`,
    /// which the host calls after every flush pass, does this.
    pub fn tick(&mut self) {
        let now = store::now_ms();
        self.store.heartbeat(now);
        self.election.try_take(now);
    }

    /// Whether this exporter serves the run.
    pub fn is_owner(&self) -> bool {
        self.election.is_owner()
    }

    /// The address this exporter serves, if it is the owner.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.election.local_addr()
    }

    /// This exporter's store.
    pub fn store_path(&self) -> &Path {
        self.store.path()
    }

    /// The ranks' part of the body a scrape of the run's endpoint would get
    /// now in `format` (every rank of the directory), whether or not this
    /// exporter serves it. A scrape's body starts with the serving owner's
    /// own `exposer_*` families, which only its HTTP server knows.
    pub fn render(&self, format: Format) -> Vec<u8> {
        self.collector.render(format)
    }
}

impl RustPluginExporter for MultiProcessExporter {
    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        let settings = MpSettings::from_env(params.output_path).map_err(|e| full_message(&e))?;
        MultiProcessExporter::with_settings(params.agent_name, &settings)
            .map_err(|e| full_message(&e))
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        self.record(events);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        self.tick();
        Ok(())
    }
}
