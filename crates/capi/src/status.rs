//! Status codes of the C API and the errors behind them.

use nixl_telemetry::{ConfigError, TelemetryError};

/// `NIXL_TELEMETRY_OK`: the call did what it was asked.
pub const OK: i32 = 0;
/// `NIXL_TELEMETRY_ERR_NULL`: the telemetry, handle or a required pointer was NULL; nothing was done.
pub const ERR_NULL: i32 = -1;
/// `NIXL_TELEMETRY_ERR_INVALID_NAME`: an agent, event or status name was empty or not UTF-8.
pub const ERR_INVALID_NAME: i32 = -2;
/// `NIXL_TELEMETRY_ERR_INVALID_CATEGORY`: a category number outside 0–7.
pub const ERR_INVALID_CATEGORY: i32 = -3;
/// `NIXL_TELEMETRY_ERR_INVALID_ARGUMENT`: another argument was out of range
/// (a direction, a `struct_size`, a setting's text).
pub const ERR_INVALID_ARGUMENT: i32 = -4;
/// `NIXL_TELEMETRY_ERR_CONFIG`: the configuration (environment variables or settings) was rejected.
pub const ERR_CONFIG: i32 = -5;
/// `NIXL_TELEMETRY_ERR_EXPORTER`: the exporter could not be created (ring directory, ring file, plug-in).
pub const ERR_EXPORTER: i32 = -6;
/// `NIXL_TELEMETRY_ERR_SYSTEM`: the system refused a resource (the flush thread could not start).
pub const ERR_SYSTEM: i32 = -7;
/// `NIXL_TELEMETRY_ERR_INTERNAL`: the library failed inside (a panic was caught); nothing crossed into the caller.
pub const ERR_INTERNAL: i32 = -8;

/// Every status code, with the text `nixl_telemetry_status_string` returns.
pub const ALL: [(i32, &str); 9] = [
    (OK, "NIXL_TELEMETRY_OK: success\0"),
    (
        ERR_NULL,
        "NIXL_TELEMETRY_ERR_NULL: a required pointer (telemetry, handle or output) was NULL\0",
    ),
    (
        ERR_INVALID_NAME,
        "NIXL_TELEMETRY_ERR_INVALID_NAME: a name was empty or not valid UTF-8\0",
    ),
    (
        ERR_INVALID_CATEGORY,
        "NIXL_TELEMETRY_ERR_INVALID_CATEGORY: a category number outside 0-7\0",
    ),
    (
        ERR_INVALID_ARGUMENT,
        "NIXL_TELEMETRY_ERR_INVALID_ARGUMENT: an argument was out of range\0",
    ),
    (
        ERR_CONFIG,
        "NIXL_TELEMETRY_ERR_CONFIG: the configuration was rejected\0",
    ),
    (
        ERR_EXPORTER,
        "NIXL_TELEMETRY_ERR_EXPORTER: the exporter could not be created\0",
    ),
    (
        ERR_SYSTEM,
        "NIXL_TELEMETRY_ERR_SYSTEM: the system refused a resource\0",
    ),
    (
        ERR_INTERNAL,
        "NIXL_TELEMETRY_ERR_INTERNAL: internal failure (caught)\0",
    ),
];

/// The text of an unknown status code.
pub const UNKNOWN: &str = "unknown nixl_telemetry status code\0";

/// The NUL-terminated text describing `status`.
pub fn text(status: i32) -> &'static str {
    ALL.iter()
        .find(|(code, _)| *code == status)
        .map_or(UNKNOWN, |(_, text)| text)
}

/// Why a call of the C API failed: the status code it returns and the message
/// it writes into the caller's buffer (where the call takes one).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CapiError {
    /// A required pointer argument was NULL.
    #[error("{what} is NULL; accepted: {accepted}")]
    Null {
        /// The argument.
        what: &'static str,
        /// What is accepted instead.
        accepted: &'static str,
    },
    /// A name was empty or not UTF-8.
    #[error("{what} {shown} is invalid: {reason}; accepted: {accepted}")]
    InvalidName {
        /// Which name.
        what: &'static str,
        /// The name as far as it can be shown (lossy UTF-8, quoted).
        shown: String,
        /// What is wrong with it.
        reason: &'static str,
        /// What is accepted.
        accepted: &'static str,
    },
    /// A category number outside 0–7.
    #[error("category {0} is unknown; accepted: 0 MEMORY, 1 TRANSFER, 2 CONNECTION, 3 BACKEND, 4 ERROR, 5 PERFORMANCE, 6 SYSTEM, 7 CUSTOM")]
    InvalidCategory(i32),
    /// Another argument out of range.
    #[error("{what}={value} is invalid; accepted: {accepted}")]
    InvalidArgument {
        /// The argument (or settings field).
        what: &'static str,
        /// The value found.
        value: String,
        /// What is accepted.
        accepted: String,
    },
    /// Telemetry could not be created.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
}

impl CapiError {
    /// The status code the C caller receives for this error.
    pub fn status(&self) -> i32 {
        match self {
            CapiError::Null { .. } => ERR_NULL,
            CapiError::InvalidName { .. } => ERR_INVALID_NAME,
            CapiError::InvalidCategory(_) => ERR_INVALID_CATEGORY,
            CapiError::InvalidArgument { .. } => ERR_INVALID_ARGUMENT,
            CapiError::Telemetry(err) => telemetry_status(err),
        }
    }
}

fn telemetry_status(err: &TelemetryError) -> i32 {
    match err {
        TelemetryError::Config(ConfigError::InvalidAgentName { .. }) => ERR_INVALID_NAME,
        TelemetryError::Config(_) => ERR_CONFIG,
        TelemetryError::RingDirectory { .. }
        | TelemetryError::Ring(_)
        | TelemetryError::Plugin(_) => ERR_EXPORTER,
        TelemetryError::Thread(_) => ERR_SYSTEM,
        _ => ERR_INTERNAL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_names_its_code_and_ends_in_nul() {
        let names = [
            "NIXL_TELEMETRY_OK:",
            "NIXL_TELEMETRY_ERR_NULL:",
            "NIXL_TELEMETRY_ERR_INVALID_NAME:",
            "NIXL_TELEMETRY_ERR_INVALID_CATEGORY:",
            "NIXL_TELEMETRY_ERR_INVALID_ARGUMENT:",
            "NIXL_TELEMETRY_ERR_CONFIG:",
            "NIXL_TELEMETRY_ERR_EXPORTER:",
            "NIXL_TELEMETRY_ERR_SYSTEM:",
            "NIXL_TELEMETRY_ERR_INTERNAL:",
        ];
        for ((code, text), name) in ALL.iter().zip(names) {
            assert!(text.starts_with(name), "{code}: {text}");
            assert!(text.ends_with('\0') && text.find('\0') == Some(text.len() - 1));
        }
        let codes: std::collections::HashSet<i32> = ALL.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes.len(), ALL.len(), "codes are distinct");
        assert_eq!(text(42), UNKNOWN);
        assert_eq!(text(ERR_CONFIG), ALL[5].1);
    }

    #[test]
    fn errors_map_to_their_codes() {
        let config = nixl_telemetry::Telemetry::builder("")
            .build()
            .expect_err("an empty agent name is refused");
        assert_eq!(CapiError::from(config).status(), ERR_INVALID_NAME);
        let config = nixl_telemetry::Telemetry::builder("a")
            .exporter(nixl_telemetry::ExporterChoice::Plugin {
                name: "no_such_plugin_anywhere".into(),
            })
            .build()
            .expect_err("a missing plug-in is refused");
        assert_eq!(CapiError::from(config).status(), ERR_EXPORTER);
        assert_eq!(CapiError::InvalidCategory(9).status(), ERR_INVALID_CATEGORY);
        let msg = CapiError::InvalidCategory(9).to_string();
        assert!(
            msg.contains("category 9") && msg.contains("7 CUSTOM"),
            "{msg}"
        );
    }
}
