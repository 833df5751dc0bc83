//! The one log set-up of the long-running commands (`export`, `serve`): every
//! `tracing` event on stderr, one line each, with its UTC timestamp and
//! level. `RUST_LOG` chooses what is shown (the usual `tracing` directives,
//! e.g. `RUST_LOG=debug` or `RUST_LOG=nixl_telemetry=debug`); without it, the
//! command's default applies. Control characters in a line (a newline or an
//! escape sequence in a ring's or an agent's name) are written escaped
//! (`\x0a`), so that no name can forge a log line or drive the terminal.

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
        .with_writer(|| EscapingStderr)
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false)
        .try_init();
}

/// stderr, with every control character of a formatted line but its final
/// newline written as `\xNN`. The subscriber writes each event as one line
/// in one call.
struct EscapingStderr;

impl std::io::Write for EscapingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().lock().write_all(&escaped_line(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `line` with every control character but a tab and the final newline
/// written as `\xNN`.
fn escaped_line(line: &[u8]) -> Vec<u8> {
    let (body, newline) = match line.strip_suffix(b"\n") {
        Some(body) => (body, true),
        None => (line, false),
    };
    let mut escaped = Vec::with_capacity(line.len() + 8);
    for &byte in body {
        if byte < 0x20 && byte != b'\t' || byte == 0x7f {
            escaped.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
        } else {
            escaped.push(byte);
        }
    }
    if newline {
        escaped.push(b'\n');
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escaped_line;

    #[test]
    fn a_name_cannot_break_or_drive_the_line() {
        assert_eq!(
            escaped_line(b"ring evil\nforged\x1b[2J\tok\x7f\n"),
            b"ring evil\\x0aforged\\x1b[2J\tok\\x7f\n".to_vec()
        );
        assert_eq!(escaped_line(b"no newline"), b"no newline".to_vec());
    }
}
