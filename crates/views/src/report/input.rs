//! The report's input: the events of a ring file, of a directory of rings
//! (read to their end, consuming unless asked to peek), or of a JSON-lines
//! capture made with `telemetry_reader --json`, each agent's in read order.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context as _};
use nixl_telemetry::ring::{ReadMode, RingError, RingReader};
use serde::Deserialize;

use super::kind::{Classifier, Kind};
use crate::lines::{open_input, BoundedLines, Line};
use crate::ring_files::{agent_of, RingSources};
use nixl_telemetry::ring::error_message as describe_ring_error;
use nixl_telemetry::ring::layout::EVENT_TYPES;
use nixl_telemetry::ring::ScanRules;
use nixl_telemetry::ring::{event_of_type, SlotConverter, UNKNOWN_TYPE_CATEGORY};
use nixl_telemetry::{Category, Event};

/// Events taken from a ring at a time.
const BATCH: usize = 8192;
/// The longest capture line accepted (a reader's line is under 200 bytes).
const MAX_LINE: usize = 64 * 1024;
/// Bad capture lines warned about one by one; later ones are only counted.
const MAX_LINE_WARNINGS: u64 = 10;

/// One event, as much of it as the report uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// µs since the epoch, where the ring version carries it.
    pub timestamp_us: Option<u64>,
    /// What the event means.
    pub kind: Kind,
    /// Its value.
    pub value: u64,
}

/// One agent's events in read order.
#[derive(Debug, Clone)]
pub struct AgentInput {
    /// The agent.
    pub agent: String,
    /// The ring's version, when read from a ring.
    pub ring_version: Option<i32>,
    /// The events.
    pub samples: Vec<Sample>,
    /// Events the producer lost, from the ring's trailer (this project's
    /// rings have one).
    pub lost_by_producer: Option<u128>,
}

/// What was read.
#[derive(Debug)]
pub struct Input {
    /// Every agent's events, agents in name order.
    pub agents: Vec<AgentInput>,
    /// Error statuses, by the ids in [`Kind::Error`].
    pub statuses: Vec<String>,
    /// Whether the events came from a capture (not from rings).
    pub from_capture: bool,
    /// Problems that did not stop the read (skipped files and lines).
    pub warnings: Vec<String>,
}

/// One line of `telemetry_reader --json` (other keys are ignored).
#[derive(Debug, Deserialize)]
struct CaptureLine {
    timestamp_us: Option<u64>,
    /// The category's name (`"ERROR"`), used when `category_id` is missing.
    category: Option<String>,
    category_id: Option<i32>,
    name: String,
    value: u64,
    agent: Option<String>,
}

/// What a capture line must look like, for messages.
const CAPTURE_FORM: &str = "one JSON object per line as `telemetry_reader --json` writes it, \
     e.g. {\"timestamp_us\":1749737007118204,\"category\":\"TRANSFER\",\"category_id\":1,\
     \"name\":\"agent_tx_bytes\",\"value\":4096}";

impl Input {
    /// Reads `path`: a directory of rings, a ring file, a capture file, or
    /// `-` for a capture on standard input. Rings are read to their end,
    /// consumed when `mode` says so.
    pub fn read(path: &Path, mode: ReadMode) -> anyhow::Result<Input> {
        if path.as_os_str() == "-" {
            return Input::read_capture(std::io::stdin().lock(), "standard input", "capture");
        }
        let meta = std::fs::metadata(path).with_context(|| {
            format!(
                "--input {}: cannot read it; accepted: a ring file, a directory of ring files, \
                 a capture made with `telemetry_reader --json`, or - for standard input",
                path.display()
            )
        })?;
        if meta.is_dir() {
            return Input::read_directory(path, mode);
        }
        if meta.len() == 0 {
            bail!("{}", empty_input(&format!("--input {}", path.display())));
        }
        if looks_like_capture(path)? {
            let agent = capture_agent(path);
            let file = open_input(path, "--input")?;
            return Input::read_capture(file, &format!("--input {}", path.display()), &agent);
        }
        let mut classifier = Classifier::default();
        let reader = RingReader::open(path, mode).map_err(|e| {
            anyhow::anyhow!(
                "{}; a capture (`telemetry_reader --json` output) is accepted too",
                describe_ring_error(&e, mode)
            )
        })?;
        let mut warnings = Vec::new();
        let agents = read_ring(reader, agent_of(path), &mut classifier, &mut warnings)
            .map_err(|e| anyhow::anyhow!("{}", describe_ring_error(&e, mode)))?;
        Ok(Input {
            agents,
            statuses: classifier.statuses().to_vec(),
            from_capture: false,
            warnings,
        })
    }

    fn read_directory(path: &Path, mode: ReadMode) -> anyhow::Result<Input> {
        // The readers' rules: the user named the directory.
        let mut sources =
            RingSources::new(&[path.to_owned()], ScanRules::Readers).map_err(anyhow::Error::msg)?;
        let scan = sources.scan();
        if let Some((_, message)) = scan.unlisted.first() {
            bail!("--input {message}");
        }
        let mut classifier = Classifier::default();
        let mut agents = Vec::new();
        let mut warnings: Vec<String> = scan
            .refused
            .iter()
            .map(|(_, m)| format!("skipping {m}"))
            .collect();
        for candidate in &scan.files {
            let rings = sources.open(candidate, mode).and_then(|reader| {
                read_ring(reader, candidate.agent(), &mut classifier, &mut warnings)
            });
            match rings {
                Ok(rings) => agents.extend(rings),
                Err(e) => warnings.push(format!("skipping {}", describe_ring_error(&e, mode))),
            }
        }
        if agents.is_empty() {
            bail!(
                "--input {}: the directory holds no ring files ({} other files skipped); \
                 accepted: a directory with at least one NIXL ring file",
                path.display(),
                warnings.len()
            );
        }
        Ok(Input {
            agents,
            statuses: classifier.statuses().to_vec(),
            from_capture: false,
            warnings,
        })
    }

    /// Reads a capture (from `source`, for messages); lines without an
    /// `agent` key belong to `agent`.
    fn read_capture(input: impl Read, source: &str, agent: &str) -> anyhow::Result<Input> {
        let mut lines = BoundedLines::new(input, MAX_LINE, 64 * 1024);
        let mut classifier = Classifier::default();
        let mut agents: Vec<AgentInput> = Vec::new();
        let mut warnings = Vec::new();
        let mut bad = 0u64;
        let mut good = 0u64;
        while let Some((number, line)) = lines.next_line().context("reading the capture")? {
            let problem = match line {
                Line::TooLong(len) => format!("{len} bytes long, over the {MAX_LINE}-byte limit"),
                Line::Bytes(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
                Line::Bytes(bytes) => match serde_json::from_slice::<CaptureLine>(bytes)
                    .map_err(|e| e.to_string())
                    .and_then(|line| {
                        let category = line_category(&line)?;
                        Ok((line, category))
                    }) {
                    Ok((line, category)) => {
                        good += 1;
                        let owner = line.agent.as_deref().unwrap_or(agent);
                        let at = match agents.iter().position(|a| a.agent == owner) {
                            Some(at) => at,
                            None => {
                                agents.push(AgentInput {
                                    agent: owner.to_owned(),
                                    ring_version: None,
                                    samples: Vec::new(),
                                    lost_by_producer: None,
                                });
                                agents.len() - 1
                            }
                        };
                        let event = event_of_line(category, &line.name, line.value);
                        agents[at].samples.push(Sample {
                            timestamp_us: line.timestamp_us,
                            kind: classifier.classify(&event),
                            value: line.value,
                        });
                        continue;
                    }
                    Err(e) => e,
                },
            };
            bad += 1;
            if bad <= MAX_LINE_WARNINGS {
                warnings.push(format!(
                    "capture line {number} skipped: {problem}; accepted: {CAPTURE_FORM}"
                ));
            }
        }
        if bad > MAX_LINE_WARNINGS {
            warnings.push(format!(
                "{} more capture lines skipped",
                bad - MAX_LINE_WARNINGS
            ));
        }
        if good == 0 && bad == 0 {
            bail!("{}", empty_input(source));
        }
        if good == 0 && bad > 0 {
            bail!(
                "the capture holds no valid line ({bad} skipped; the first: {})",
                warnings[0]
            );
        }
        agents.sort_by(|a, b| a.agent.cmp(&b.agent));
        Ok(Input {
            agents,
            statuses: classifier.statuses().to_vec(),
            from_capture: true,
            warnings,
        })
    }
}

/// The message for an input that holds nothing at all (an empty file, or
/// nothing on standard input): the same for both.
fn empty_input(source: &str) -> String {
    format!(
        "{source} is empty: no ring and no capture line to report on; accepted: a ring file, \
         a directory of ring files, or a capture ({CAPTURE_FORM})"
    )
}

/// A capture line's category: `category_id`, else the `category` name
/// (`"ERROR"`, as readers print it), else none (known event names have one).
fn line_category(line: &CaptureLine) -> Result<Option<i32>, String> {
    if line.category_id.is_some() {
        return Ok(line.category_id);
    }
    match &line.category {
        None => Ok(None),
        Some(name) => Category::parse(name).map(|c| Some(c.0)).ok_or_else(|| {
            format!(
                "category {name:?} is not a category: accepted MEMORY, TRANSFER, CONNECTION, \
                 BACKEND, ERROR, PERFORMANCE, SYSTEM, CUSTOM, UNKNOWN_CATEGORY_<n> or a number"
            )
        }),
    }
}

/// Whether the file starts (after white space) with `{`, as a capture does
/// and no ring file can (its header starts with `write_pos`, a slot index
/// below the capacity: its first byte is `{` only in a ring of more than 123
/// slots whose `write_pos` ends in that byte, and then the header's
/// following bytes are not white space or JSON).
fn looks_like_capture(path: &Path) -> anyhow::Result<bool> {
    let mut head = [0u8; 64];
    let n = {
        let mut file = std::fs::File::open(path)
            .with_context(|| format!("--input {}: cannot open it", path.display()))?;
        let mut n = 0;
        while n < head.len() {
            match file.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("--input {}", path.display()));
                }
            }
        }
        n
    };
    let text = head[..n].trim_ascii_start();
    Ok(text.first() == Some(&b'{')
        && text
            .get(1)
            .is_some_and(|&b| b == b'"' || b.is_ascii_whitespace()))
}

/// The agent of a capture's lines without an `agent` key (a single ring's
/// capture): the file's name without a `.jsonl` or `.json` extension.
fn capture_agent(path: &Path) -> String {
    let name = agent_of(path);
    for ext in [".jsonl", ".json"] {
        if let Some(stem) = name.strip_suffix(ext) {
            if !stem.is_empty() {
                return stem.to_owned();
            }
        }
    }
    name
}

/// Producers of one ring file followed in one read at most: a file
/// rewritten in place more often than this while it is read is given up.
const MAX_PRODUCERS: usize = 16;

/// Reads a ring to its end: one [`AgentInput`] per producer of the file. A
/// ring rewritten in place in another layout while it is read (the
/// reader's [`RingError::LayoutChanged`], as the export sidecar and `top`
/// see it) is a new producer: what the old one wrote is kept as read, a
/// warning names the change, and the file is opened again and read in its
/// new layout as the next producer (`<agent> (producer N)`), never decoded
/// in the old one.
fn read_ring(
    mut reader: RingReader,
    agent: String,
    classifier: &mut Classifier,
    warnings: &mut Vec<String>,
) -> Result<Vec<AgentInput>, RingError> {
    let mut producers = Vec::new();
    loop {
        let (producer, rewritten) =
            read_producer(&mut reader, &agent, producers.len(), classifier)?;
        producers.push(producer);
        let Some(change) = rewritten else {
            return Ok(producers);
        };
        if producers.len() >= MAX_PRODUCERS {
            warnings.push(format!(
                "{change}: rewritten {MAX_PRODUCERS} times while being read; the rest of it is \
                 skipped"
            ));
            return Ok(producers);
        }
        warnings.push(format!(
            "{change}: a new producer; its events are counted as agent {:?}",
            producer_name(&agent, producers.len())
        ));
        reader = RingReader::open(reader.path(), reader.mode())?;
    }
}

/// The agent name of a file's producer number `index` (from 0): the first
/// keeps the file's name.
fn producer_name(agent: &str, index: usize) -> String {
    if index == 0 {
        agent.to_owned()
    } else {
        format!("{agent} (producer {})", index + 1)
    }
}

/// Reads what one producer of a ring wrote, to the ring's end or until the
/// file is found rewritten in another layout (then the change, as words).
fn read_producer(
    reader: &mut RingReader,
    agent: &str,
    index: usize,
    classifier: &mut Classifier,
) -> Result<(AgentInput, Option<String>), RingError> {
    // The slots as events, as the export sidecar makes them; a slot whose
    // name has no terminator is malformed and skipped, as the readers skip it.
    let converter = SlotConverter::new(reader.layout());
    let timed = reader.layout().slot.timestamp.is_some();
    let mut slots = Vec::new();
    let mut events = Vec::new();
    let mut samples = Vec::new();
    let mut rewritten = None;
    loop {
        let n = match reader.read_slot_bytes(&mut slots, BATCH) {
            Ok(n) => n,
            Err(e @ RingError::LayoutChanged { .. }) => {
                rewritten = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        events.clear();
        converter.convert(&slots, 0, &mut events);
        samples.extend(events.iter().map(|e| Sample {
            timestamp_us: timed.then_some(e.timestamp_us),
            kind: classifier.classify(e),
            value: e.value,
        }));
    }
    let producer = AgentInput {
        agent: producer_name(agent, index),
        ring_version: Some(reader.layout().version),
        samples,
        // A rewritten file's trailer is the new producer's (or none).
        lost_by_producer: rewritten
            .is_none()
            .then(|| reader.trailer().map(|t| t.events_lost()))
            .flatten(),
    };
    Ok((producer, rewritten))
}

/// The event of a capture line, as the export sidecar would have made it
/// from the slot the line was read from: a line without a category (ring
/// versions 3, 4) gets the one of its event type (a typed error is its
/// `NIXL_ERR_` status in ERROR), or none a series takes for a type the table
/// lacks (`unknown_event_<n>`); a category the line has is kept.
pub fn event_of_line(category: Option<i32>, name: &str, value: u64) -> Event {
    let template = EVENT_TYPES
        .iter()
        .position(|&t| t == name)
        .map(event_of_type)
        .filter(|t| category.is_none_or(|c| c == t.category));
    match (template, category) {
        (Some(t), _) => Event { value, ..t },
        (None, Some(c)) => Event::new(0, Category(c), name, value),
        (None, None) => Event::new(0, UNKNOWN_TYPE_CATEGORY, name, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_is_read_per_agent_with_bad_lines_skipped() {
        let text = br#"{"timestamp_us":1,"category":"TRANSFER","category_id":1,"name":"agent_tx_bytes","value":4096,"agent":"b"}
{"timestamp_us":null,"category":null,"category_id":null,"name":"agent_err_not_found","value":1,"agent":"a"}

not json
{"timestamp_us":2,"category":"ERROR","category_id":4,"name":"NIXL_ERR_BACKEND","value":1}
"#;
        let input = Input::read_capture(&text[..], "test", "solo").unwrap();
        let names: Vec<&str> = input.agents.iter().map(|a| a.agent.as_str()).collect();
        assert_eq!(names, ["a", "b", "solo"]);
        assert_eq!(input.agents[1].samples[0].kind, Kind::TxBytes);
        assert_eq!(input.agents[0].samples[0].timestamp_us, None);
        assert_eq!(input.statuses, ["not_found", "backend"]);
        assert_eq!(input.warnings.len(), 1);
        assert!(input.warnings[0].contains("line 4"), "{:?}", input.warnings);
    }

    #[test]
    fn a_capture_without_any_valid_line_is_refused() {
        let err = Input::read_capture(&b"hello\nworld\n"[..], "test", "x").unwrap_err();
        assert!(err.to_string().contains("no valid line"), "{err}");
    }

    #[test]
    fn a_capture_with_category_names_only_counts_its_errors() {
        let text = br#"{"timestamp_us":1,"category":"ERROR","name":"NIXL_ERR_BACKEND","value":1}
{"timestamp_us":2,"category":"error","name":"NIXL_ERR_REMOTE_DISCONNECT","value":1}
{"timestamp_us":3,"category":"TRANSFER","name":"agent_tx_bytes","value":64}
{"timestamp_us":4,"category":"NONSENSE","name":"x","value":1}
"#;
        let input = Input::read_capture(&text[..], "test", "solo").unwrap();
        let kinds: Vec<Kind> = input.agents[0].samples.iter().map(|s| s.kind).collect();
        assert!(matches!(kinds[0], Kind::Error(_)), "{kinds:?}");
        assert!(matches!(kinds[1], Kind::Error(_)), "{kinds:?}");
        assert_eq!(kinds[2], Kind::TxBytes);
        assert_eq!(input.statuses, ["backend", "remote_disconnect"]);
        assert_eq!(input.warnings.len(), 1);
        assert!(
            input.warnings[0].contains("\"NONSENSE\" is not a category"),
            "{:?}",
            input.warnings
        );
    }

    #[test]
    fn an_empty_capture_is_refused_the_same_from_a_file_and_from_standard_input() {
        let err = Input::read_capture(&b""[..], "standard input", "capture").unwrap_err();
        assert!(
            err.to_string().starts_with("standard input is empty"),
            "{err}"
        );
        let err = Input::read_capture(&b"\n  \n"[..], "standard input", "capture").unwrap_err();
        assert!(err.to_string().contains("is empty"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.jsonl");
        std::fs::write(&path, b"").unwrap();
        let err = Input::read(&path, ReadMode::Peek).unwrap_err();
        assert_eq!(
            err.to_string(),
            empty_input(&format!("--input {}", path.display()))
        );
    }

    #[test]
    fn capture_lines_become_the_sidecar_s_events() {
        let e = event_of_line(None, "agent_rx_bytes", 8192);
        assert_eq!(
            (e.category(), e.name_bytes(), e.value),
            (Category::TRANSFER, &b"agent_rx_bytes"[..], 8192)
        );
        let e = event_of_line(None, "agent_err_not_found", 1);
        assert_eq!(
            (e.category(), e.name_bytes()),
            (Category::ERROR, &b"NIXL_ERR_NOT_FOUND"[..])
        );
        let e = event_of_line(Some(4), "agent_err_backend", 1);
        assert_eq!(e.name_bytes(), b"NIXL_ERR_BACKEND");
        let e = event_of_line(None, "agent_telemetry_events_dropped", 3);
        assert_eq!(e.category(), Category::SYSTEM);
        assert_eq!(
            event_of_line(None, "unknown_event_77", 1).category(),
            UNKNOWN_TYPE_CATEGORY
        );
        // A category the line has is kept (version 1, 2-named).
        let e = event_of_line(Some(7), "agent_tx_bytes", 1);
        assert_eq!(
            (e.category(), e.name_bytes()),
            (Category::CUSTOM, &b"agent_tx_bytes"[..])
        );
        let e = event_of_line(Some(4), "NIXL_ERR_BACKEND", 1);
        assert_eq!(
            (e.category(), e.name_bytes()),
            (Category::ERROR, &b"NIXL_ERR_BACKEND"[..])
        );
    }

    #[test]
    fn a_ring_rewritten_in_another_layout_while_read_is_a_new_producer() {
        use nixl_telemetry::ring::layout;
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("initiator");
        let tx = Event::new(1, Category::TRANSFER, "agent_tx_bytes", 254);
        std::fs::write(
            &path,
            nixl_telemetry_testsupport::nixl_ring::ring_bytes(&layout::V4, 64, &[tx]),
        )
        .unwrap();
        for mode in [ReadMode::Consume, ReadMode::Peek] {
            let reader = RingReader::open(&path, mode).unwrap();
            // Rewritten in place (the same file) as version 1, as a job
            // restarted under another release does, after the report opened it.
            let rx: Vec<Event> = (0..10)
                .map(|i| Event::new(100 + i, Category::TRANSFER, "agent_rx_bytes", 112))
                .collect();
            let v1 = nixl_telemetry_testsupport::nixl_ring::ring_bytes(&layout::V1, 64, &rx);
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(v1.len() as u64).unwrap();
            file.write_all_at(&v1, 0).unwrap();
            let mut classifier = Classifier::default();
            let mut warnings = Vec::new();
            let agents =
                read_ring(reader, "initiator".into(), &mut classifier, &mut warnings).unwrap();
            let names: Vec<&str> = agents.iter().map(|a| a.agent.as_str()).collect();
            assert_eq!(names, ["initiator", "initiator (producer 2)"], "{mode:?}");
            // Nothing decoded in the old layout: the new producer's 10
            // events of 112 rx bytes, read in version 1.
            assert!(agents[0].samples.is_empty(), "{:?}", agents[0].samples);
            assert_eq!(agents[0].ring_version, Some(4));
            assert_eq!(agents[1].ring_version, Some(1));
            let kinds: Vec<(Kind, u64)> = agents[1]
                .samples
                .iter()
                .map(|s| (s.kind, s.value))
                .collect();
            assert_eq!(kinds, vec![(Kind::RxBytes, 112); 10]);
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("rewritten in place")
                    && warnings[0].contains("version 4")
                    && warnings[0].contains("version 1")
                    && warnings[0].contains("a new producer"),
                "{warnings:?}"
            );
            // Back as it was for the next mode.
            std::fs::write(
                &path,
                nixl_telemetry_testsupport::nixl_ring::ring_bytes(&layout::V4, 64, &[tx]),
            )
            .unwrap();
        }
    }

    #[test]
    fn capture_agent_names() {
        assert_eq!(
            capture_agent(Path::new("/tmp/initiator.jsonl")),
            "initiator"
        );
        assert_eq!(capture_agent(Path::new("run.json")), "run");
        assert_eq!(capture_agent(Path::new("plain")), "plain");
    }
}
