//! Where an endpoint listens, which histogram buckets it uses and how its HTTP
//! server is bounded: read from the environment once, when an exporter is created.

use nixl_telemetry_abi::env::{EXPORTER_OUTPUT_PATH, HISTOGRAM_BUCKETS_US};
use std::net::SocketAddr;
use std::time::Duration;

pub use nixl_telemetry_abi::buckets::{Buckets, BucketsError, DEFAULT_BUCKETS_US, MAX_BUCKETS};
use nixl_telemetry_abi::{buckets, env};
use thiserror::Error;

/// `NIXL_TELEMETRY_PROMETHEUS_PORT`: the port when no output path is given.
pub const ENV_PORT: &str = "NIXL_TELEMETRY_PROMETHEUS_PORT";
/// `NIXL_TELEMETRY_PROMETHEUS_LOCAL`: listen on `127.0.0.1` instead of `0.0.0.0`.
pub const ENV_LOCAL: &str = "NIXL_TELEMETRY_PROMETHEUS_LOCAL";

/// Every variable [`Settings::from_env`] reads.
pub const VARIABLES: [&str; 3] = [ENV_PORT, ENV_LOCAL, HISTOGRAM_BUCKETS_US];

/// The port used when neither an output path nor [`ENV_PORT`] is given.
pub const DEFAULT_PORT: u16 = 9090;

/// The listen-address forms accepted, as quoted in error messages.
pub const ACCEPTED_ADDRESS_FORMS: &str = "\"<IPv4>:<port>\" such as 127.0.0.1:9090 or \
     0.0.0.0:9090, or \"[<IPv6>]:<port>\" such as [::1]:9090, with a port from 0 to 65535 \
     (0: any free port)";

/// A configuration value the exporter cannot use; creation fails with it.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    /// The output path is not a socket address of an accepted form.
    #[error("invalid Prometheus listen address {value:?} in {EXPORTER_OUTPUT_PATH}: {reason}; accepted: {ACCEPTED_ADDRESS_FORMS}")]
    Address {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`ENV_PORT`] is not a port number.
    #[error("invalid {ENV_PORT}={value:?}: not a port number; accepted: an integer from 0 to 65535 (0: any free port); or set {EXPORTER_OUTPUT_PATH} to {ACCEPTED_ADDRESS_FORMS}")]
    Port {
        /// The value given.
        value: String,
    },
    /// [`ENV_LOCAL`] is neither on nor off.
    #[error("invalid {ENV_LOCAL}={value:?}; accepted: {}", env::SWITCH_ACCEPTED)]
    Local {
        /// The value given.
        value: String,
    },
    /// [`HISTOGRAM_BUCKETS_US`] is not a list of strictly increasing positive numbers.
    #[error("invalid {HISTOGRAM_BUCKETS_US}={value:?}: {reason}; accepted: {} (at most {MAX_BUCKETS}; +Inf is always added)", buckets::BUCKETS_ACCEPTED)]
    Buckets {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A variable holds a value that is not UTF-8.
    #[error(
        "invalid {variable}={value:?}: it is not UTF-8; accepted: {}",
        env::UTF8_ACCEPTED
    )]
    NotUtf8 {
        /// The variable.
        variable: &'static str,
        /// Its value, invalid sequences replaced with U+FFFD.
        value: String,
    },
}

/// Limits of the HTTP server behind an endpoint. The defaults suit production;
/// tests shorten the timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections open at once. When full, a new connection replaces the one
    /// that has waited longest for its request; if every connection is busy
    /// answering, the new one is closed.
    pub max_connections: usize,
    /// The largest request head (request line and headers) read, bytes; a
    /// larger one is answered `431` and the connection closed.
    pub max_request_bytes: usize,
    /// Time a connection may take to deliver a complete request head, counted
    /// from its opening or from the end of the previous response (so it is also
    /// the keep-alive idle timeout).
    pub request_timeout: Duration,
    /// Time a response may take to be written out.
    pub write_timeout: Duration,
    /// Time a closing connection is drained of unread input before it is
    /// dropped (so the client reads the response rather than a reset).
    pub linger_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 256,
            max_request_bytes: 8 * 1024,
            request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            linger_timeout: Duration::from_secs(2),
        }
    }
}

/// Everything an exporter is created with besides its agent's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The address the endpoint listens on.
    pub listen: SocketAddr,
    /// The latency histograms' bounds.
    pub buckets: Buckets,
    /// The HTTP server's limits (used by the agent that opens the endpoint).
    pub limits: ServerLimits,
}

impl Settings {
    /// Settings for `listen` with the default buckets and limits.
    pub fn new(listen: SocketAddr) -> Settings {
        Settings {
            listen,
            buckets: Buckets::default(),
            limits: ServerLimits::default(),
        }
    }

    /// Reads the process environment; `output_path` is the host's
    /// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`. A variable whose value is not
    /// UTF-8 is an error naming it, as in the host's configuration.
    pub fn from_env(output_path: Option<&str>) -> Result<Settings, SettingsError> {
        for variable in VARIABLES {
            env::var(variable).map_err(|e| SettingsError::NotUtf8 {
                variable: e.variable,
                value: e.value_lossy,
            })?;
        }
        Settings::from_lookup(output_path, |name| std::env::var(name).ok())
    }

    /// Like [`Settings::from_env`], reading variables through `lookup`.
    ///
    /// The address is the output path when one is given (non-empty), else
    /// `0.0.0.0:<port>`, or `127.0.0.1:<port>` when [`ENV_LOCAL`] is on, with
    /// the port from [`ENV_PORT`] or [`DEFAULT_PORT`]. Empty (or blank)
    /// variables count as unset, [`HISTOGRAM_BUCKETS_US`] included, as in NIXL: a blank
    /// bucket list means the defaults, while a non-blank list that is not valid
    /// fails creation rather than falling back to them.
    pub fn from_lookup(
        output_path: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let listen = match output_path.filter(|p| !p.is_empty()) {
            Some(path) => parse_address(path)?,
            None => {
                let port = match lookup(ENV_PORT).filter(|v| !v.trim().is_empty()) {
                    Some(v) => v
                        .trim()
                        .parse::<u16>()
                        .map_err(|_| SettingsError::Port { value: v.clone() })?,
                    None => DEFAULT_PORT,
                };
                let local = match lookup(ENV_LOCAL).filter(|v| !v.trim().is_empty()) {
                    Some(v) => env::parse_switch(&v).ok_or(SettingsError::Local { value: v })?,
                    None => false,
                };
                let ip = if local { [127, 0, 0, 1] } else { [0, 0, 0, 0] };
                SocketAddr::from((ip, port))
            }
        };
        let buckets = match lookup(HISTOGRAM_BUCKETS_US).filter(|v| !v.trim().is_empty()) {
            Some(v) => Buckets::parse(&v).map_err(|e| SettingsError::Buckets {
                reason: e.to_string(),
                value: v,
            })?,
            None => Buckets::default(),
        };
        Ok(Settings {
            listen,
            buckets,
            limits: ServerLimits::default(),
        })
    }
}

/// Parses `ip:port` (IPv4) or `[ipv6]:port`; host names are not accepted.
pub fn parse_address(value: &str) -> Result<SocketAddr, SettingsError> {
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let fail = |reason: &str| SettingsError::Address {
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    if value.contains("://") || value.contains('/') {
        return Err(fail("a URL is not an address"));
    }
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err(fail("no port given"));
    };
    if port.parse::<u16>().is_err() {
        return Err(fail(if port.is_empty() {
            "no port given"
        } else {
            "the port is not a number from 0 to 65535"
        }));
    }
    if value.parse::<std::net::IpAddr>().is_ok() || host.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err(fail("an IPv6 address must be written in brackets"));
    }
    Err(fail(
        "the host is not an IP address (host names are not resolved)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(output: Option<&str>, vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        Settings::from_lookup(output, |k| map.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn the_output_path_wins() {
        let s = settings(Some("127.0.0.1:9464"), &[(ENV_PORT, "1234")]).unwrap();
        assert_eq!(s.listen, "127.0.0.1:9464".parse().unwrap());
        let s = settings(Some("[::1]:80"), &[]).unwrap();
        assert_eq!(s.listen, "[::1]:80".parse().unwrap());
    }

    #[test]
    fn without_a_path_port_and_local_decide() {
        assert_eq!(
            settings(None, &[]).unwrap().listen,
            "0.0.0.0:9090".parse().unwrap()
        );
        assert_eq!(
            settings(Some(""), &[(ENV_PORT, "9100")]).unwrap().listen,
            "0.0.0.0:9100".parse().unwrap()
        );
        assert_eq!(
            settings(None, &[(ENV_PORT, "9100"), (ENV_LOCAL, "Yes")])
                .unwrap()
                .listen,
            "127.0.0.1:9100".parse().unwrap()
        );
        assert_eq!(
            settings(None, &[(ENV_LOCAL, "off")]).unwrap().listen,
            "0.0.0.0:9090".parse().unwrap()
        );
    }

    #[test]
    fn malformed_addresses_name_the_accepted_forms() {
        for (bad, reason) in [
            ("localhost:9090", "host names"),
            ("127.0.0.1", "no port"),
            ("127.0.0.1:", "no port"),
            ("127.0.0.1:99999", "0 to 65535"),
            ("::1:9090", "brackets"),
            ("http://127.0.0.1:9090/metrics", "not an address"),
            ("300.1.1.1:80", "not an IP address"),
        ] {
            let err = settings(Some(bad), &[]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(reason), "{bad}: {text}");
            assert!(text.contains("[::1]:9090") && text.contains("127.0.0.1:9090"));
            assert!(text.contains(&format!("{bad:?}")), "{text}");
        }
    }

    #[test]
    fn bad_port_and_switch_values_fail() {
        let err = settings(None, &[(ENV_PORT, "http")]).unwrap_err();
        assert!(matches!(err, SettingsError::Port { .. }));
        assert!(err.to_string().contains("0 to 65535"));
        let err = settings(None, &[(ENV_PORT, "65536")]).unwrap_err();
        assert!(matches!(err, SettingsError::Port { .. }));
        let err = settings(None, &[(ENV_LOCAL, "maybe")]).unwrap_err();
        assert!(err.to_string().contains("\"maybe\""));
    }

    #[test]
    fn buckets_parse_or_say_why_not() {
        let b = settings(None, &[(HISTOGRAM_BUCKETS_US, " 5, 50 ,500.5")])
            .unwrap()
            .buckets;
        assert_eq!(b.bounds(), &[5.0, 50.0, 500.5]);
        // Each reason is the parser's (nixl_telemetry_abi::buckets, tested
        // there); the error adds the variable, the value and what is accepted.
        let err = settings(None, &[(HISTOGRAM_BUCKETS_US, "10,5")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "invalid {HISTOGRAM_BUCKETS_US}=\"10,5\": bound 2 (5) is not greater than bound 1 (10): \
                 bounds must be strictly increasing; accepted: comma-separated, strictly \
                 increasing, positive, finite microsecond bounds such as 10,100,1000 (at most \
                 64; +Inf is always added)"
            )
        );
        let err = settings(None, &[(HISTOGRAM_BUCKETS_US, "10,,20")]).unwrap_err();
        assert!(err.to_string().contains("bound 2 is empty"), "{err}");
    }

    #[test]
    fn blank_port_and_switch_values_are_unset() {
        let s = settings(None, &[(ENV_PORT, " "), (ENV_LOCAL, "\t")]).unwrap();
        assert_eq!(s.listen, "0.0.0.0:9090".parse().unwrap());
    }

    #[test]
    fn a_blank_bucket_variable_means_the_defaults() {
        for blank in ["", "  "] {
            let s = settings(None, &[(HISTOGRAM_BUCKETS_US, blank)]).unwrap();
            assert_eq!(s.buckets, Buckets::default(), "{blank:?}");
        }
    }
}
