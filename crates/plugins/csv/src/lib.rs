//! The CSV exporter plug-in: `libtelemetry_exporter_csv.so`.
//!
//! Selected with `NIXL_TELEMETRY_EXPORTER=csv`. Each exporter appends its
//! agent's events to one file:
//!
//! * the file is `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH` (the host's `output_path`),
//!   or else `NIXL_TELEMETRY_CSV_FILE`; with neither, creation fails;
//! * it is opened for appending and created if missing; a file that cannot be
//!   opened fails exporter creation with the operating system's reason;
//! * when the file is new or empty, the header `timestamp_us,category,event_name,value`
//!   is written first, and never again on reopen;
//! * one line per event: the timestamp in µs, the category as its number, the
//!   name (quoted per RFC 4180 when it holds a comma, a double quote, CR or LF),
//!   the value;
//! * lines are buffered and written at each flush (and when the buffer fills),
//!   not at each event; the rest is written when the exporter is destroyed.
//!
//! The crate is also an `rlib` so its writer can be tested and reused.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use nixl_telemetry_abi::rust_plugin::{RustPluginExporter, RustPluginParams};
use nixl_telemetry_abi::Event;

/// The variable naming the file when the host passes no output path.
pub const ENV_CSV_FILE: &str = "NIXL_TELEMETRY_CSV_FILE";

/// The first line of every file.
pub const HEADER: &str = "timestamp_us,category,event_name,value";

/// Bytes buffered before a write happens without a flush.
const BUFFER_BYTES: usize = 256 * 1024;

/// Appends `name` to `out` as one CSV field, quoted per RFC 4180 when it holds
/// a comma, a double quote, CR or LF (inner quotes doubled).
pub fn push_field(out: &mut Vec<u8>, name: &str) {
    if name
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
    {
        out.push(b'"');
        for b in name.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(name.as_bytes());
    }
}

/// Appends one event's line, newline included, to `out`.
pub fn push_line(out: &mut Vec<u8>, event: &Event) {
    use std::io::Write as _;
    let _ = write!(out, "{},{},", event.timestamp_us, event.category);
    push_field(out, &event.name());
    let _ = writeln!(out, ",{}", event.value);
}

/// Writes events as CSV lines to one file.
#[derive(Debug)]
#[must_use = "dropping it writes what is buffered"]
pub struct CsvWriter {
    path: PathBuf,
    out: BufWriter<File>,
    line: Vec<u8>,
}

impl CsvWriter {
    /// Opens `path` for appending (created if missing) and writes the header
    /// when the file is empty. The header check and write hold an exclusive
    /// lock on the file so two writers never both add one.
    pub fn open(path: &Path) -> std::io::Result<CsvWriter> {
        let mut file = OpenOptions::new().append(true).create(true).open(path)?;
        file.lock()?;
        let header = (|| -> std::io::Result<()> {
            if file.metadata()?.len() == 0 {
                file.write_all(HEADER.as_bytes())?;
                file.write_all(b"\n")?;
            }
            Ok(())
        })();
        let unlocked = file.unlock();
        header?;
        unlocked?;
        Ok(CsvWriter {
            path: path.to_owned(),
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            line: Vec::with_capacity(128),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Buffers one line per event.
    pub fn write_events(&mut self, events: &[Event]) -> std::io::Result<()> {
        for event in events {
            self.line.clear();
            push_line(&mut self.line, event);
            self.out.write_all(&self.line)?;
        }
        Ok(())
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The plug-in's exporter: one [`CsvWriter`] per agent.
#[derive(Debug)]
pub struct CsvExporter {
    writer: CsvWriter,
}

impl CsvExporter {
    /// The file from the parameters or `lookup(NIXL_TELEMETRY_CSV_FILE)`.
    pub fn output_file(
        params: &RustPluginParams<'_>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<PathBuf, String> {
        match params.output_path.filter(|p| !p.is_empty()) {
            Some(path) => Ok(PathBuf::from(path)),
            None => lookup(ENV_CSV_FILE)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| {
                    format!(
                        "no CSV file for agent {:?}: set NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH or {ENV_CSV_FILE}",
                        params.agent_name
                    )
                }),
        }
    }
}

impl RustPluginExporter for CsvExporter {
    // It never logs: its failures are its export calls' errors.
    const LOGS_WITH_TRACING: bool = false;

    fn create(params: &RustPluginParams<'_>) -> Result<Self, String> {
        // A value that is not UTF-8 is an error naming the variable, as in the host.
        let from_env = nixl_telemetry_abi::env::var(ENV_CSV_FILE).map_err(|e| e.to_string())?;
        let path = Self::output_file(params, |_| from_env.clone())?;
        let writer = CsvWriter::open(&path)
            .map_err(|e| format!("cannot open CSV file {} for appending: {e}", path.display()))?;
        Ok(CsvExporter { writer })
    }

    fn export_batch(&mut self, events: &[Event]) -> Result<(), String> {
        self.writer
            .write_events(events)
            .map_err(|e| format!("cannot write to {}: {e}", self.writer.path().display()))
    }

    fn flush(&mut self) -> Result<(), String> {
        self.writer
            .flush()
            .map_err(|e| format!("cannot write to {}: {e}", self.writer.path().display()))
    }
}

nixl_telemetry_abi::export_plugin!(
    CsvExporter,
    name = "csv",
    version = env!("CARGO_PKG_VERSION")
);

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::Category;

    fn line(event: &Event) -> String {
        let mut out = Vec::new();
        push_line(&mut out, event);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        let cases = [
            ("agent_tx_bytes", "agent_tx_bytes"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
            ("cr\r", "\"cr\r\""),
            (" spaced ", " spaced "),
            ("", ""),
        ];
        for (name, want) in cases {
            let mut out = Vec::new();
            push_field(&mut out, name);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{name:?}");
        }
    }

    #[test]
    fn a_line_has_the_category_number() {
        let ev = Event::new(
            1_700_000_000_000_001,
            Category::ERROR,
            "NIXL_ERR_BACKEND",
            1,
        );
        assert_eq!(line(&ev), "1700000000000001,4,NIXL_ERR_BACKEND,1\n");
        let ev = Event::new(5, Category(42), "x,y", u64::MAX);
        assert_eq!(line(&ev), "5,42,\"x,y\",18446744073709551615\n");
    }

    #[test]
    fn output_path_wins_over_the_variable() {
        let params = RustPluginParams {
            agent_name: "a",
            max_events_buffered: 8,
            output_path: Some("/from/host.csv"),
        };
        let env = |_: &str| Some("/from/env.csv".to_owned());
        assert_eq!(
            CsvExporter::output_file(&params, env).unwrap(),
            PathBuf::from("/from/host.csv")
        );
        let params = RustPluginParams {
            output_path: None,
            ..params
        };
        assert_eq!(
            CsvExporter::output_file(&params, env).unwrap(),
            PathBuf::from("/from/env.csv")
        );
        let err = CsvExporter::output_file(&params, |_| None).unwrap_err();
        assert!(
            err.contains("NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH") && err.contains(ENV_CSV_FILE),
            "{err}"
        );
    }

    #[test]
    fn header_once_and_lines_only_at_flush() {
        let dir = std::env::temp_dir().join(format!("csv-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.csv");
        let _ = std::fs::remove_file(&path);
        let mut w = CsvWriter::open(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n")
        );
        w.write_events(&[Event::new(1, Category::MEMORY, "m", 2)])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n")
        );
        w.flush().unwrap();
        drop(w);
        let mut w = CsvWriter::open(&path).unwrap();
        w.write_events(&[Event::new(3, Category::CUSTOM, "c", 4)])
            .unwrap();
        drop(w);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n1,0,m,2\n3,7,c,4\n")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
