//! What `top` shows for one agent at one refresh, and the orders it sorts by.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::feed::Missed;

/// Whether `c` changes the direction or order in which a terminal lays out
/// the text around it (U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069): an agent named with U+202E would show the row's
/// following cells reversed.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// `text` as `top` shows it: control characters escaped as the readers do
/// (`\xHH`), and the bidirectional controls too (`\u{202e}`).
pub fn shown_text(text: &str) -> Cow<'_, str> {
    let escaped = crate::printable::escape_control(text);
    if !escaped.contains(is_bidi_control) {
        return escaped;
    }
    let mut out = String::with_capacity(escaped.len() + 8);
    for c in escaped.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Rates over the last refresh interval, from the events read in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// Events read per second.
    pub events_per_s: f64,
    /// `agent_tx_bytes` per second.
    pub tx_bytes_per_s: f64,
    /// `agent_rx_bytes` per second.
    pub rx_bytes_per_s: f64,
    /// `agent_tx_requests_num` + `agent_rx_requests_num` per second.
    pub requests_per_s: f64,
    /// The median transfer time, µs, estimated from the model's histogram
    /// (`None` without transfers in the interval).
    pub p50_us: Option<f64>,
    /// The 99th percentile.
    pub p99_us: Option<f64>,
}

impl Rates {
    /// Bytes moved per second, both ways.
    pub fn bytes_per_s(&self) -> f64 {
        self.tx_bytes_per_s + self.rx_bytes_per_s
    }
}

/// Why the rates of an interval are not shown, or what else is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Flags {
    /// Events this reader could not see in the interval.
    pub missed: Missed,
    /// The ring is full: nothing consumes it, its producer drops events.
    pub full: bool,
    /// The ring could not be read (the message says why).
    pub problem: Option<String>,
    /// Why an agent just found has no rates yet.
    pub starting: Option<Starting>,
}

/// Why an agent just found has no rates yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Starting {
    /// The events its ring held when `top` found it are still being read
    /// (those a consumer took wait until the writer is seen to move on).
    ReadingWhatTheRingHeld,
    /// It was found, or its ring's old events read, late in the interval:
    /// too little time to make a rate of.
    LateInTheInterval,
}

impl Flags {
    /// The note `top` shows, empty when all is well.
    pub fn note(&self, consuming: bool) -> String {
        let mut parts = Vec::new();
        if let Some(problem) = &self.problem {
            parts.push(format!("unreadable: {problem}"));
        }
        match self.starting {
            Some(Starting::ReadingWhatTheRingHeld) => {
                parts.push("reading what the ring held when top came: rates follow".to_owned())
            }
            Some(Starting::LateInTheInterval) => {
                parts.push("just found: rates at the next refresh".to_owned())
            }
            None => {}
        }
        if self.missed.drained > 0 {
            parts.push(format!(
                "drained by another consumer, then written over: {} events missed",
                self.missed.drained
            ));
        }
        if self.missed.wrapped > 0 {
            parts.push(format!(
                "ring wrapped: {} events missed",
                self.missed.wrapped
            ));
        }
        if self.missed.suspected_laps > 0 {
            let times = match self.missed.suspected_laps {
                1 => "once".to_owned(),
                n => format!("{n} times"),
            };
            parts.push(format!(
                "ring may have wrapped between two looks ({times}): events may be missing"
            ));
        }
        if self.full && !consuming {
            parts.push("ring full, nothing consumes it (try --consume)".to_owned());
        }
        parts.join("; ")
    }
}

/// One agent at one refresh.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// The agent as shown (its file name; control characters escaped).
    pub agent: String,
    /// The ring file.
    pub path: String,
    /// The ring's version.
    pub version: Option<i32>,
    /// The ring file is gone (the agent vanished).
    pub gone: bool,
    /// The interval's rates; `None` before the agent was seen for half an
    /// interval, after what its ring held when `top` found it (older
    /// events), for a gone agent, and when events were missed (the flags
    /// say why): never wrong rates.
    pub rates: Option<Rates>,
    /// Events per second written by the producer, from the trailer, when
    /// the rates are not shown but the ring's trailer counts them.
    pub written_per_s: Option<f64>,
    /// What went wrong in the interval.
    pub flags: Flags,
    /// Error events so far.
    pub errors: u64,
    /// Error events so far by status, the most first.
    pub errors_by_status: Vec<(String, u64)>,
    /// Bytes registered now (registered minus deregistered).
    pub memory_registered: i128,
    /// Events the producer lost so far (`None`: the ring cannot tell).
    pub lost: Option<u128>,
    /// Throughput (bytes/s) of the last refreshes, oldest first; `None`
    /// where it is not known.
    pub history: Vec<Option<u64>>,
}

/// The column rows are sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Agent name.
    Agent,
    /// Events per second.
    Events,
    /// Bytes sent per second.
    Tx,
    /// Bytes received per second.
    Rx,
    /// Requests per second.
    Requests,
    /// 99th percentile of the transfer time.
    P99,
    /// Errors so far.
    Errors,
    /// Events lost so far.
    Lost,
}

impl SortKey {
    /// Every key, in the order `s` cycles through them.
    pub const ALL: [SortKey; 8] = [
        SortKey::Agent,
        SortKey::Events,
        SortKey::Tx,
        SortKey::Rx,
        SortKey::Requests,
        SortKey::P99,
        SortKey::Errors,
        SortKey::Lost,
    ];

    /// The next key.
    pub fn next(self) -> SortKey {
        let at = SortKey::ALL.iter().position(|&k| k == self).unwrap_or(0);
        SortKey::ALL[(at + 1) % SortKey::ALL.len()]
    }

    /// The key's name as its column header says it.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Agent => "AGENT",
            SortKey::Events => "EVENTS/S",
            SortKey::Tx => "TX B/S",
            SortKey::Rx => "RX B/S",
            SortKey::Requests => "REQ/S",
            SortKey::P99 => "P99 µs",
            SortKey::Errors => "ERRORS",
            SortKey::Lost => "LOST",
        }
    }

    /// Whether the natural order is from the largest (numbers) or the
    /// smallest (names).
    fn descending(self) -> bool {
        self != SortKey::Agent
    }

    fn value(self, row: &Row) -> Option<f64> {
        let rate = |f: fn(&Rates) -> f64| row.rates.as_ref().map(f);
        match self {
            SortKey::Agent => None,
            SortKey::Events => rate(|r| r.events_per_s).or(row.written_per_s),
            SortKey::Tx => rate(|r| r.tx_bytes_per_s),
            SortKey::Rx => rate(|r| r.rx_bytes_per_s),
            SortKey::Requests => rate(|r| r.requests_per_s),
            SortKey::P99 => row.rates.as_ref().and_then(|r| r.p99_us),
            SortKey::Errors => Some(row.errors as f64),
            SortKey::Lost => row.lost.map(|n| n as f64),
        }
    }

    /// Orders `a` before `b`: by the key (unknown values last), `reverse`d
    /// on request, then by agent name; gone agents after the live ones.
    pub fn compare(self, a: &Row, b: &Row, reverse: bool) -> Ordering {
        let by_key = match (self.value(a), self.value(b)) {
            _ if self == SortKey::Agent => a.agent.cmp(&b.agent),
            (Some(x), Some(y)) => {
                let o = x.total_cmp(&y);
                if self.descending() {
                    o.reverse()
                } else {
                    o
                }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let by_key = if reverse { by_key.reverse() } else { by_key };
        a.gone
            .cmp(&b.gone)
            .then(by_key)
            .then_with(|| a.agent.cmp(&b.agent))
            .then_with(|| a.path.cmp(&b.path))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bidirectional_controls_are_shown_escaped() {
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            let name = format!("gpu{c}0\n");
            let shown = super::shown_text(&name);
            assert_eq!(
                shown,
                format!("gpu\\u{{{:x}}}0\\x0a", u32::from(c)),
                "U+{:04X}",
                u32::from(c)
            );
            assert!(!shown.contains(c));
        }
        assert_eq!(super::shown_text("plain-é"), "plain-é");
    }

    use super::*;

    fn row(agent: &str, tx: Option<f64>, gone: bool) -> Row {
        Row {
            agent: agent.to_owned(),
            gone,
            rates: tx.map(|tx| Rates {
                tx_bytes_per_s: tx,
                ..Rates::default()
            }),
            ..Row::default()
        }
    }

    #[test]
    fn rows_sort_by_the_key_with_unknown_and_gone_last() {
        let mut rows = [
            row("a", Some(1.0), false),
            row("b", None, false),
            row("c", Some(5.0), false),
            row("d", Some(9.0), true),
        ];
        rows.sort_by(|x, y| SortKey::Tx.compare(x, y, false));
        let order: Vec<&str> = rows.iter().map(|r| r.agent.as_str()).collect();
        assert_eq!(order, ["c", "a", "b", "d"]);
        rows.sort_by(|x, y| SortKey::Agent.compare(x, y, true));
        let order: Vec<&str> = rows.iter().map(|r| r.agent.as_str()).collect();
        assert_eq!(order, ["c", "b", "a", "d"]);
    }

    #[test]
    fn keys_cycle() {
        let mut k = SortKey::Agent;
        for _ in 0..SortKey::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, SortKey::Agent);
    }
}
