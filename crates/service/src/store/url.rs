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
///   (`postgres://user:password@host:port/database?options`).
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
        let bad = |reason: String| StoreUrlError {
            url: redact(text),
            reason,
        };
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
