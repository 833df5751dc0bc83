//! Store URLs: which store holds the metrics, and how to reach it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::StoreUrlError;

/// The SQLite file used when no store is given, in the working directory.
pub const DEFAULT_SQLITE_FILE: &str = "nixl-telemetry-metrics.db";

/// How SQLite makes a commit durable (`PRAGMA synchronous`; the store runs in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `NORMAL`: a commit is written to the write-ahead log before it returns, so it
    /// survives the end of the process (`kill -9`, a crash); the log is flushed to the
    /// disk at checkpoints, so a power cut may lose the last commits (never corrupts).
    #[default]
    Normal,
    /// `FULL`: each commit also waits for the disk (`fsync`), so it survives a power cut.
    Full,
}

impl Synchronous {
    /// The pragma's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
        }
    }
}

/// Where the metrics are kept.
///
/// Written as:
/// * `sqlite:PATH`, `sqlite://PATH` or `sqlite:///ABSOLUTE/PATH`, optionally followed
///   by `?synchronous=normal|full`; a bare path (no `scheme://`) is a SQLite file too;
/// * `postgres://…` or `postgresql://…`: a PostgreSQL connection URL
///   (`postgres://user:password@host:port/database?options`);
/// * `env:NAME`: the store URL is the value of the environment variable `NAME`;
///   `file:PATH`: it is the first line of the file `PATH` (so that a password
///   need not be on a command line, where `ps` shows it).
///
/// A libpq keyword string (`host=… password=…`) is refused, not taken as a file
/// name; a password is never shown in a message.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An embedded SQLite database file (created on first use).
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// How commits are made durable.
        synchronous: Synchronous,
    },
    /// A PostgreSQL database.
    Postgres {
        /// The connection URL as given (shown with its password hidden).
        url: String,
    },
}

impl Default for StoreUrl {
    /// [`DEFAULT_SQLITE_FILE`] in the working directory.
    fn default() -> Self {
        StoreUrl::Sqlite {
            path: PathBuf::from(DEFAULT_SQLITE_FILE),
            synchronous: Synchronous::Normal,
        }
    }
}

impl StoreUrl {
    /// The kind of store: `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreUrl::Sqlite { .. } => "sqlite",
            StoreUrl::Postgres { .. } => "postgres",
        }
    }
}

impl FromStr for StoreUrl {
    type Err = StoreUrlError;

    fn from_str(text: &str) -> Result<StoreUrl, StoreUrlError> {
        if let Some(name) = text.strip_prefix("env:") {
            return StoreUrl::from_variable(name);
        }
        if let Some(path) = text.strip_prefix("file:") {
            return StoreUrl::from_file(path);
        }
        StoreUrl::from_text(text)
    }
}

/// The connection keywords of libpq that start a keyword/value connection string.
const LIBPQ_KEYWORDS: [&str; 14] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "sslmode",
    "connect_timeout",
    "application_name",
    "options",
    "service",
    "target_session_attrs",
    "client_encoding",
];

/// Whether `text` is a libpq keyword/value string (`host=h password=p …`).
fn is_libpq_string(text: &str) -> bool {
    text.split_whitespace()
        .next()
        .and_then(|first| first.split_once('='))
        .is_some_and(|(key, _)| LIBPQ_KEYWORDS.contains(&key.to_ascii_lowercase().as_str()))
}

/// A libpq keyword/value string with the value of `password=` hidden.
fn redact_libpq(text: &str) -> String {
    text.split_whitespace()
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl StoreUrl {
    /// The store URL in the environment variable `name` (`env:NAME`).
    fn from_variable(name: &str) -> Result<StoreUrl, StoreUrlError> {
        let given = format!("env:{name}");
        let bad = |reason: String| StoreUrlError {
            url: given.clone(),
            reason,
        };
        if name.is_empty() {
            return Err(bad("no variable named: expected env:NAME".into()));
        }
        let value = std::env::var(name).map_err(|e| {
            bad(match e {
                std::env::VarError::NotPresent => format!("the variable {name} is not set"),
                std::env::VarError::NotUnicode(_) => {
                    format!("the variable {name} is not valid UTF-8")
                }
            })
        })?;
        StoreUrl::from_read(value.trim(), &given)
    }

    /// The store URL on the first line of the file `path` (`file:PATH`).
    fn from_file(path: &str) -> Result<StoreUrl, StoreUrlError> {
        let given = format!("file:{path}");
        let bad = |reason: String| StoreUrlError {
            url: given.clone(),
            reason,
        };
        if path.is_empty() {
            return Err(bad("no file named: expected file:PATH".into()));
        }
        let content =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read the file: {e}")))?;
        StoreUrl::from_read(content.lines().next().unwrap_or("").trim(), &given)
    }

    /// A store URL read from a variable or a file (named `given` in messages).
    fn from_read(text: &str, given: &str) -> Result<StoreUrl, StoreUrlError> {
        if text.is_empty() {
            return Err(StoreUrlError {
                url: given.to_owned(),
                reason: "it is empty: expected a store URL".into(),
            });
        }
        if text.starts_with("env:") || text.starts_with("file:") {
            return Err(StoreUrlError {
                url: given.to_owned(),
                reason: "it names another variable or file: expected the store URL itself".into(),
            });
        }
        StoreUrl::from_text(text).map_err(|e| StoreUrlError {
            url: format!("{given} ({})", e.url),
            reason: e.reason,
        })
    }

    /// A store URL written out (not `env:` or `file:`).
    fn from_text(text: &str) -> Result<StoreUrl, StoreUrlError> {
        let bad = |reason: String| StoreUrlError {
            url: redact(text),
            reason,
        };
        if is_libpq_string(text) {
            return Err(StoreUrlError {
                url: redact_libpq(text),
                reason:
                    "a libpq keyword/value string is not a store URL: write it as \
                         postgres://user:password@host:port/database (or give a SQLite file's path)"
                        .into(),
            });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            // The driver's own parser: what it accepts here, it accepts when connecting.
            tokio_postgres::Config::from_str(text).map_err(|e| bad(e.to_string()))?;
            return Ok(StoreUrl::Postgres {
                url: text.to_owned(),
            });
        }
        let rest =
            match text.strip_prefix("sqlite:") {
                Some(rest) => rest.strip_prefix("//").unwrap_or(rest),
                None if text.contains("://") => return Err(bad(
                    "unknown kind of store: expected sqlite:PATH, postgres://… or postgresql://…"
                        .into(),
                )),
                None => text,
            };
        let (path, query) = match text.starts_with("sqlite:") {
            true => rest.split_once('?').unwrap_or((rest, "")),
            // A bare path keeps a `?` in its file name.
            false => (rest, ""),
        };
        if path.is_empty() {
            return Err(bad("the SQLite file's path is empty".into()));
        }
        let mut synchronous = Synchronous::Normal;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("synchronous", value)) => {
                    synchronous = match value.to_ascii_lowercase().as_str() {
                        "normal" => Synchronous::Normal,
                        "full" => Synchronous::Full,
                        _ => {
                            return Err(bad(format!(
                            "synchronous={value}: expected synchronous=normal or synchronous=full"
                        )))
                        }
                    }
                }
                _ => {
                    return Err(bad(format!(
                        "unknown option `{pair}`: the SQLite store takes synchronous=normal|full"
                    )))
                }
            }
        }
        Ok(StoreUrl::Sqlite {
            path: PathBuf::from(path),
            synchronous,
        })
    }
}

impl fmt::Display for StoreUrl {
    /// The URL with a PostgreSQL password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite { path, synchronous } => {
                write!(f, "sqlite:{}", path.display())?;
                if *synchronous != Synchronous::Normal {
                    write!(f, "?synchronous={}", synchronous.as_str())?;
                }
                Ok(())
            }
            StoreUrl::Postgres { url } => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// A URL with the password of its `user:password@` part, and any `password=` option,
/// replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let authority_start = scheme_end + 3;
        let authority_end = out[authority_start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| authority_start + i);
        if let Some(at) = out[authority_start..authority_end].rfind('@') {
            let userinfo = &out[authority_start..authority_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(authority_start + colon + 1..authority_start + at, "***");
            }
        }
    }
    if let Some(query_start) = out.find('?') {
        let (head, query) = out.split_at(query_start + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(path: &str, synchronous: Synchronous) -> StoreUrl {
        StoreUrl::Sqlite {
            path: PathBuf::from(path),
            synchronous,
        }
    }

    #[test]
    fn sqlite_forms() {
        let normal = Synchronous::Normal;
        assert_eq!("m.db".parse::<StoreUrl>().unwrap(), sqlite("m.db", normal));
        assert_eq!(
            "sqlite:m.db".parse::<StoreUrl>().unwrap(),
            sqlite("m.db", normal)
        );
        assert_eq!(
            "sqlite://m.db".parse::<StoreUrl>().unwrap(),
            sqlite("m.db", normal)
        );
        assert_eq!(
            "sqlite:///var/lib/m.db".parse::<StoreUrl>().unwrap(),
            sqlite("/var/lib/m.db", normal)
        );
        assert_eq!(
            "sqlite:m.db?synchronous=FULL".parse::<StoreUrl>().unwrap(),
            sqlite("m.db", Synchronous::Full)
        );
        assert_eq!(
            "odd?name.db".parse::<StoreUrl>().unwrap(),
            sqlite("odd?name.db", normal)
        );
        assert_eq!(StoreUrl::default(), sqlite(DEFAULT_SQLITE_FILE, normal));
        assert_eq!(
            "sqlite:m.db?synchronous=full"
                .parse::<StoreUrl>()
                .unwrap()
                .to_string(),
            "sqlite:m.db?synchronous=full"
        );
    }

    #[test]
    fn bad_urls_say_what_is_accepted() {
        for (url, says) in [
            ("mysql://h/db", "expected sqlite:PATH, postgres://"),
            ("sqlite:", "path is empty"),
            (
                "sqlite:m.db?synchronous=off",
                "expected synchronous=normal or",
            ),
            ("sqlite:m.db?cache=shared", "unknown option `cache=shared`"),
            ("postgres://h:notaport/db", "postgres://h:notaport/db"),
        ] {
            let err = url.parse::<StoreUrl>().unwrap_err().to_string();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn a_libpq_string_is_refused_with_its_password_hidden() {
        for text in [
            "host=db.example password=s3cret dbname=metrics",
            "password=s3cret host=db.example",
            "dbname=metrics",
        ] {
            let err = text.parse::<StoreUrl>().unwrap_err().to_string();
            assert!(err.contains("libpq keyword/value string"), "{err}");
            assert!(err.contains("postgres://user:password@host"), "{err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
        // A path with `=` further on is still a path.
        assert_eq!(
            "runs/a=b.db".parse::<StoreUrl>().unwrap(),
            sqlite("runs/a=b.db", Synchronous::Normal)
        );
    }

    #[test]
    fn the_url_is_read_from_a_file_or_a_variable() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("store-url");
        std::fs::write(
            &file,
            "postgres://alice:s3cret@db.example/metrics\nignored\n",
        )
        .unwrap();
        let url: StoreUrl = format!("file:{}", file.display()).parse().unwrap();
        assert_eq!(
            url,
            StoreUrl::Postgres {
                url: "postgres://alice:s3cret@db.example/metrics".into()
            }
        );
        assert_eq!(url.to_string(), "postgres://alice:***@db.example/metrics");
        // Cargo sets this variable for the tests it runs.
        assert_eq!(
            "env:CARGO_PKG_NAME".parse::<StoreUrl>().unwrap(),
            sqlite(env!("CARGO_PKG_NAME"), Synchronous::Normal)
        );
        std::fs::write(&file, "postgres://alice:s3cret@db.example:nope/metrics\n").unwrap();
        for (text, says) in [
            (
                format!("file:{}", file.display()),
                "postgres://alice:***@db.example:nope",
            ),
            ("file:/nonexistent/store-url".into(), "cannot read the file"),
            ("env:NIXL_TELEMETRY_NOT_SET_ANYWHERE".into(), "is not set"),
            ("env:".into(), "expected env:NAME"),
        ] {
            let err = text.parse::<StoreUrl>().unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn postgres_passwords_are_hidden() {
        let url: StoreUrl =
            "postgres://alice:s3cret@db.example:5432/metrics?password=x&sslmode=disable"
                .parse()
                .unwrap();
        assert_eq!(url.kind(), "postgres");
        assert_eq!(
            url.to_string(),
            "postgres://alice:***@db.example:5432/metrics?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgresql://bob@h/db"), "postgresql://bob@h/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        let err = "postgres://u:pw@h:x/db".parse::<StoreUrl>().unwrap_err();
        assert!(!err.to_string().contains("pw@"), "{err}");
    }
}
