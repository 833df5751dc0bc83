//! The one log set-up of the long-running commands (`export`, `serve`): every
//! `tracing` event on stderr, one line each, with its UTC timestamp and
//! level. `RUST_LOG` chooses what is shown (the usual `tracing` directives,
//! e.g. `RUST_LOG=debug` or `RUST_LOG=nixl_telemetry=debug`); without it, the
//! command's default applies.

use tracing_subscriber::EnvFilter;

/// Installs the subscriber, once per process (a second call changes
/// nothing). `default` is the filter when `RUST_LOG` is unset or empty, in
/// `RUST_LOG`'s syntax (e.g. `"warn,nixl_telemetry_export=info"`).
pub fn init(default: &str) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::builder().parse(&directives).unwrap_or_else(|e| {
                eprintln!(
                    "nixl-telemetry: warning: RUST_LOG={directives:?} is not a log filter ({e}); \
                     accepted: tracing directives such as info or nixl_telemetry=debug; \
                     using {default:?}"
                );
                EnvFilter::new(default)
            })
        }
        _ => EnvFilter::new(default),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false)
        .try_init();
}
