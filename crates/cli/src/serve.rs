//! `nixl-telemetry serve`: the metric processor as an HTTP service
//! (`nixl-telemetry-service`; docs/service.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use nixl_telemetry_processor::{AttributeRegistry, DEFAULT_BUILDERS};
use nixl_telemetry_service::{
    Service, ServiceConfig, StoreUrl, Token, DEFAULT_LISTEN, DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_LABEL_VALUES,
};

/// Options of `nixl-telemetry serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (host:port; a non-loopback address needs
    /// NIXL_TELEMETRY_METRICS_TOKEN or --insecure).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: String,
    /// Where the metrics are kept: sqlite:PATH[?synchronous=full] or
    /// postgres://user:password@host:port/database (default: an SQLite file in the
    /// working directory, created on first start).
    #[arg(long, value_name = "URL", default_value_t = StoreUrl::default())]
    store: StoreUrl,
    /// Comma-separated builders, run in order: legacy, comprehensive, time, labeled.
    #[arg(long, value_name = "LIST", default_value_t = DEFAULT_BUILDERS.join(","))]
    builders: String,
    /// Attribute registry (.toml or .json) instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    attributes: Option<PathBuf>,
    /// Serve without a token on a non-loopback address.
    #[arg(long)]
    insecure: bool,
    /// The longest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body: usize,
    /// The most records applied in one store transaction (1: one per record).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BATCH as u64,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    max_batch: u64,
    /// The most distinct values of one label GET /metrics shows; further values
    /// are shown as `other` and counted in tao_service_label_values_folded_total.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_LABEL_VALUES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_label_values: u64,
    /// Also show, on GET /metrics, every other key of the JSON map (TAO's flat
    /// keys) as one family tao_legacy_value{key="…"}.
    #[arg(long)]
    metrics_legacy_keys: bool,
}

/// Runs the service until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
    let registry = match &args.attributes {
        Some(path) => AttributeRegistry::from_path(path)?,
        None => AttributeRegistry::default(),
    };
    let config = ServiceConfig {
        store: args.store,
        registry,
        builders: args.builders,
        token: Token::from_env()?,
        insecure: args.insecure,
        max_body_bytes: args.max_body,
        max_batch: args.max_batch as usize,
        max_label_values: args.max_label_values as usize,
        metrics_legacy_keys: args.metrics_legacy_keys,
        ..ServiceConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = Service::bind(&config, &args.listen).await?;
        let address = listener.local_addr().context("the listening address")?;
        let store = config.store.to_string();
        let authentication = match config.token {
            Some(_) => "token required",
            None => "no authentication",
        };
        let service = Service::start(config).await?;
        eprintln!(
            "nixl-telemetry serve: listening on http://{address} (store {store}, {authentication})"
        );
        service.serve(listener, stop_signal()).await?;
        eprintln!("nixl-telemetry serve: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// Completes on SIGINT or SIGTERM.
async fn stop_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
