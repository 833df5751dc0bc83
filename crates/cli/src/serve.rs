//! `nixl-telemetry serve`: the metric processor as an HTTP service
//! (`nixl-telemetry-service`; docs/service.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use nixl_telemetry_processor::{AttributeRegistry, DEFAULT_BUILDERS};
use nixl_telemetry_service::{
    Service, ServiceConfig, StoreUrl, Token, DEFAULT_BODY_TIMEOUT, DEFAULT_COMMIT_CHECK_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_LISTEN, DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONCURRENT_READS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_ENVELOPE_SKEW, DEFAULT_MAX_KEYS, DEFAULT_MAX_LABEL_VALUES, DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_STORE_TIMEOUT,
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
    /// The most distinct metric keys the store holds: a record that would add
    /// keys past it is refused (422, key_limit_reached); updates of stored keys
    /// are still taken.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_KEYS,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_keys: u64,
    /// The most full reads of the store (GET /metrics, GET /api/v1/metrics)
    /// served at once; a read past it is answered 503 (too_many_reads) with
    /// Retry-After: 1. Reads arriving together share one read of the store.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONCURRENT_READS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    max_concurrent_reads: u64,
    /// The most distinct values of one label GET /metrics shows; further values
    /// are shown as `other` and counted in tao_service_label_values_folded_total.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_LABEL_VALUES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_label_values: u64,
    /// Also show, on GET /metrics, every other key of the JSON map (TAO's flat
    /// keys) as one family tao_legacy_value{key="…"}.
    #[arg(long)]
    metrics_legacy_keys: bool,
    /// Seconds a request's headers may take, counted from its first byte (from
    /// the connection's opening, for its first request).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_HEADER_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    header_timeout: f64,
    /// Seconds a kept-alive connection may wait for its next request (at the
    /// connection cap, waiting connections are closed at once).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    idle_timeout: f64,
    /// Seconds an envelope's `now` may be from the service's clock, either way
    /// (further: 400), or `any` to accept every time (to replay records).
    #[arg(long, value_name = "SECONDS|any", default_value_t = Bound::Seconds(DEFAULT_MAX_ENVELOPE_SKEW.as_secs_f64()),
          value_parser = seconds_or_any)]
    max_envelope_skew: Bound,
    /// Seconds a client may take to send a request body (then: 408).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_BODY_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    body_timeout: f64,
    /// The most connections served at once; the next ones wait until one closes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections: u64,
    /// Seconds the store may take to connect or to answer one round trip (then:
    /// 503); also the longest a record waits for the store's writer.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_STORE_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    store_timeout: f64,
    /// Seconds the writer keeps asking whether a commit whose answer was lost
    /// happened, before answering that it does not know.
    #[arg(long, value_name = "SECONDS",
          default_value_t = DEFAULT_COMMIT_CHECK_TIMEOUT.as_secs_f64(), value_parser = seconds)]
    commit_check_timeout: f64,
    /// Seconds requests under way may take to finish once SIGINT or SIGTERM came.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SHUTDOWN_GRACE.as_secs_f64(),
          value_parser = seconds)]
    shutdown_grace: f64,
}

/// A bound in seconds, or none.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Seconds(f64),
    Any,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Seconds(seconds) => write!(f, "{seconds}"),
            Bound::Any => f.write_str("any"),
        }
    }
}

/// A number of seconds as [`seconds`] takes it, or `any`.
fn seconds_or_any(text: &str) -> Result<Bound, String> {
    if text == "any" {
        return Ok(Bound::Any);
    }
    seconds(text)
        .map(Bound::Seconds)
        .map_err(|e| format!("{e}, or `any`"))
}

/// A number of seconds: positive, finite, at most a day.
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value > 0.0 && value <= 86_400.0 => Ok(value),
        _ => Err(format!(
            "`{text}` is not a number of seconds; give one above 0 and at most 86400, such as 5 or 0.5"
        )),
    }
}

/// Runs the service until SIGINT or SIGTERM (its log: the command's one set-up,
/// installed before this is called).
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
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
        max_keys: args.max_keys,
        max_concurrent_reads: args.max_concurrent_reads as usize,
        body_timeout: Duration::from_secs_f64(args.body_timeout),
        store_timeout: Duration::from_secs_f64(args.store_timeout),
        commit_check_timeout: Duration::from_secs_f64(args.commit_check_timeout),
        header_timeout: Duration::from_secs_f64(args.header_timeout),
        idle_timeout: Duration::from_secs_f64(args.idle_timeout),
        max_envelope_skew: match args.max_envelope_skew {
            Bound::Seconds(seconds) => Some(Duration::from_secs_f64(seconds)),
            Bound::Any => None,
        },
        max_connections: args.max_connections as usize,
        shutdown_grace: Duration::from_secs_f64(args.shutdown_grace),
        max_label_values: args.max_label_values as usize,
        metrics_legacy_keys: args.metrics_legacy_keys,
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
