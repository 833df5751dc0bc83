//! The telemetry event and its category.

use core::fmt;
use core::mem::{align_of, offset_of, size_of};

/// Bytes of the name field, NUL terminator included.
pub const EVENT_NAME_CAPACITY: usize = 32;
/// Longest name that is stored intact, in bytes (the 32nd byte is always NUL).
pub const MAX_EVENT_NAME_LEN: usize = EVENT_NAME_CAPACITY - 1;

/// A telemetry event category.
///
/// A thin wrapper around the `i32` stored in the event so that category numbers
/// this version does not know survive a read-write round trip unchanged.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct Category(pub i32);

impl Category {
    /// Memory registration and deregistration (bytes).
    pub const MEMORY: Category = Category(0);
    /// Bytes and requests of transfers.
    pub const TRANSFER: Category = Category(1);
    /// Connection set-up and tear-down.
    pub const CONNECTION: Category = Category(2);
    /// Events reported by a backend.
    pub const BACKEND: Category = Category(3);
    /// Errors (name = status string, value 1).
    pub const ERROR: Category = Category(4);
    /// Timings in microseconds.
    pub const PERFORMANCE: Category = Category(5);
    /// Telemetry's own events, such as dropped-event counts.
    pub const SYSTEM: Category = Category(6);
    /// Anything else an application records.
    pub const CUSTOM: Category = Category(7);

    /// The eight known categories in number order.
    pub const ALL: [Category; 8] = [
        Category::MEMORY,
        Category::TRANSFER,
        Category::CONNECTION,
        Category::BACKEND,
        Category::ERROR,
        Category::PERFORMANCE,
        Category::SYSTEM,
        Category::CUSTOM,
    ];

    /// The name readers print for a known category, `None` for an unknown number.
    pub const fn known_name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "MEMORY",
            1 => "TRANSFER",
            2 => "CONNECTION",
            3 => "BACKEND",
            4 => "ERROR",
            5 => "PERFORMANCE",
            6 => "SYSTEM",
            7 => "CUSTOM",
            _ => return None,
        })
    }

    /// Whether this is one of the eight known categories.
    pub const fn is_known(self) -> bool {
        self.known_name().is_some()
    }

    /// Parses a category name as readers print it (case-insensitive), the
    /// `NIXL_TELEMETRY_<NAME>` constant name, or a decimal number.
    pub fn parse(text: &str) -> Option<Category> {
        let text = text.trim();
        if let Ok(n) = text.parse::<i32>() {
            return Some(Category(n));
        }
        let upper = text.to_ascii_uppercase();
        let bare = upper.strip_prefix("NIXL_TELEMETRY_").unwrap_or(&upper);
        if let Some(n) = bare.strip_prefix("UNKNOWN_CATEGORY_") {
            return n.parse().ok().map(Category);
        }
        Category::ALL
            .into_iter()
            .find(|c| c.known_name() == Some(bare))
    }
}

impl fmt::Display for Category {
    /// Prints the reader's name: `TRANSFER`, or `UNKNOWN_CATEGORY_<n>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.known_name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN_CATEGORY_{}", self.0),
        }
    }
}

impl fmt::Debug for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self, self.0)
    }
}

/// One telemetry event: a ring slot and the plug-in ABI's `nixl_telemetry_event_t`.
///
/// 56 bytes, little-endian on the platforms NIXL runs on, laid out as
///
/// | offset | size | field |
/// | --- | --- | --- |
/// | 0 | 8 | `timestamp_us` |
/// | 8 | 4 | `category` |
/// | 12 | 32 | `event_name`, NUL-terminated, NUL-padded |
/// | 44 | 4 | `reserved` (0) |
/// | 48 | 8 | `value` |
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Event {
    /// Microseconds since the Unix epoch, taken when the operation completed.
    pub timestamp_us: u64,
    /// The category number (see [`Category`]).
    pub category: i32,
    /// The name, NUL-terminated and NUL-padded.
    pub event_name: [u8; EVENT_NAME_CAPACITY],
    /// Padding, written as 0; readers ignore it.
    pub reserved: u32,
    /// The per-operation reading.
    pub value: u64,
}

const _: () = {
    assert!(size_of::<Event>() == 56);
    assert!(align_of::<Event>() == 8);
    assert!(offset_of!(Event, timestamp_us) == 0);
    assert!(offset_of!(Event, category) == 8);
    assert!(offset_of!(Event, event_name) == 12);
    assert!(offset_of!(Event, reserved) == 44);
    assert!(offset_of!(Event, value) == 48);
};

impl Default for Event {
    fn default() -> Self {
        Event::ZERO
    }
}

impl Event {
    /// Size of one event in bytes.
    pub const SIZE: usize = size_of::<Event>();

    /// An all-zero event.
    pub const ZERO: Event = Event {
        timestamp_us: 0,
        category: 0,
        event_name: [0; EVENT_NAME_CAPACITY],
        reserved: 0,
        value: 0,
    };

    /// Builds an event, cutting `name` as [`encode_name`] does.
    pub fn new(timestamp_us: u64, category: Category, name: &str, value: u64) -> Event {
        Event {
            timestamp_us,
            category: category.0,
            event_name: encode_name(name),
            reserved: 0,
            value,
        }
    }

    /// Builds an event from an already encoded name.
    pub const fn with_encoded_name(
        timestamp_us: u64,
        category: Category,
        event_name: [u8; EVENT_NAME_CAPACITY],
        value: u64,
    ) -> Event {
        Event {
            timestamp_us,
            category: category.0,
            event_name,
            reserved: 0,
            value,
        }
    }

    /// The category.
    pub const fn category(&self) -> Category {
        Category(self.category)
    }

    /// The name's bytes up to the first NUL (all 32 if there is none).
    pub fn name_bytes(&self) -> &[u8] {
        let end = self
            .event_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(EVENT_NAME_CAPACITY);
        &self.event_name[..end]
    }

    /// Whether the name field holds a NUL terminator, as every well-formed slot does.
    pub fn name_is_terminated(&self) -> bool {
        self.event_name.contains(&0)
    }

    /// The name as text; invalid UTF-8 is replaced with U+FFFD.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.name_bytes())
    }

    /// The raw 56 bytes, little-endian, with the reserved field as stored.
    pub fn to_bytes(&self) -> [u8; 56] {
        let mut out = [0u8; 56];
        out[0..8].copy_from_slice(&self.timestamp_us.to_le_bytes());
        out[8..12].copy_from_slice(&self.category.to_le_bytes());
        out[12..44].copy_from_slice(&self.event_name);
        out[44..48].copy_from_slice(&self.reserved.to_le_bytes());
        out[48..56].copy_from_slice(&self.value.to_le_bytes());
        out
    }

    /// Decodes 56 little-endian bytes. The reserved field is kept as found.
    pub fn from_bytes(bytes: &[u8; 56]) -> Event {
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let mut event_name = [0u8; EVENT_NAME_CAPACITY];
        event_name.copy_from_slice(&bytes[12..44]);
        Event {
            timestamp_us: u64_at(0),
            category: i32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
            event_name,
            reserved: u32::from_le_bytes([bytes[44], bytes[45], bytes[46], bytes[47]]),
            value: u64_at(48),
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("timestamp_us", &self.timestamp_us)
            .field("category", &self.category())
            .field("name", &self.name())
            .field("value", &self.value)
            .finish()
    }
}

/// The longest prefix of `name` that is at most [`MAX_EVENT_NAME_LEN`] bytes,
/// ends on a character boundary and holds no NUL.
pub fn truncate_name(name: &str) -> &str {
    let name = match name.find('\0') {
        Some(nul) => &name[..nul],
        None => name,
    };
    if name.len() <= MAX_EVENT_NAME_LEN {
        return name;
    }
    let mut end = MAX_EVENT_NAME_LEN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Encodes a name into the 32-byte field: cut by [`truncate_name`], NUL-padded.
/// Looks at no more than the first 32 bytes of `name`. A `const fn`, so names
/// known at compile time are encoded at compile time.
pub const fn encode_name(name: &str) -> [u8; EVENT_NAME_CAPACITY] {
    let bytes = name.as_bytes();
    let limit = if bytes.len() < MAX_EVENT_NAME_LEN {
        bytes.len()
    } else {
        MAX_EVENT_NAME_LEN
    };
    // A NUL ends the name; it is ASCII, hence always a character boundary.
    let mut end = 0;
    while end < limit && bytes[end] != 0 {
        end += 1;
    }
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = [0u8; EVENT_NAME_CAPACITY];
    out.split_at_mut(end)
        .0
        .copy_from_slice(bytes.split_at(end).0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_at_31_bytes() {
        assert_eq!(truncate_name("agent_memory_deregistered_bytes").len(), 31);
        assert_eq!(
            truncate_name("ucx_rdma_read_completion_latency"),
            "ucx_rdma_read_completion_latenc"
        );
        assert_eq!(truncate_name(""), "");
        let ev = Event::new(1, Category::CUSTOM, &"a".repeat(100), 2);
        assert_eq!(ev.event_name[31], 0);
        assert_eq!(ev.name().len(), 31);
    }

    #[test]
    fn names_are_cut_at_a_character_boundary() {
        // 30 ASCII bytes then a 2-byte character: 32 bytes, the character must go.
        let name = format!("{}é", "x".repeat(30));
        assert_eq!(truncate_name(&name), "x".repeat(30));
        // 29 + 2 = 31 bytes fits exactly.
        let name = format!("{}é", "x".repeat(29));
        assert_eq!(truncate_name(&name), name);
        // A 4-byte character straddling the limit.
        let name = format!("{}🚀", "x".repeat(29));
        assert_eq!(truncate_name(&name), "x".repeat(29));
    }

    #[test]
    fn a_nul_ends_the_name() {
        assert_eq!(truncate_name("abc\0def"), "abc");
    }

    #[test]
    fn encode_name_agrees_with_truncate_name() {
        let long = "x".repeat(40);
        let cases = [
            "",
            "a",
            "abc\0def",
            "\0",
            "agent_memory_deregistered_bytes",
            "ucx_rdma_read_completion_latency",
            long.as_str(),
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxé",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxé",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx🚀",
            "ＮＶＩＤＩＡ Ａ１００ ＮＶＩＤＩＡ",
        ];
        for name in cases {
            let cut = truncate_name(name).as_bytes();
            let mut want = [0u8; EVENT_NAME_CAPACITY];
            want[..cut.len()].copy_from_slice(cut);
            assert_eq!(encode_name(name), want, "{name:?}");
        }
    }

    #[test]
    fn encode_name_runs_at_compile_time() {
        const NAME: [u8; EVENT_NAME_CAPACITY] = encode_name("agent_tx_bytes");
        assert_eq!(&NAME[..14], b"agent_tx_bytes");
        assert!(NAME[14..].iter().all(|&b| b == 0));
    }

    #[test]
    fn bytes_round_trip_including_unknown_categories() {
        let mut ev = Event::new(
            1_749_737_007_118_204,
            Category(42),
            "agent_tx_bytes",
            u64::MAX,
        );
        ev.reserved = 0xdead_beef;
        let back = Event::from_bytes(&ev.to_bytes());
        assert_eq!(back, ev);
        assert_eq!(back.category().to_string(), "UNKNOWN_CATEGORY_42");
        assert_eq!(Category(-3).to_string(), "UNKNOWN_CATEGORY_-3");
    }

    #[allow(unsafe_code)] // reads the in-memory bytes to compare
    #[test]
    fn to_bytes_matches_the_in_memory_layout() {
        let ev = Event::new(
            0x0102_0304_0506_0708,
            Category::ERROR,
            "NIXL_ERR_BACKEND",
            9,
        );
        // SAFETY: Event is repr(C), 56 bytes, with no padding (asserted above), so all
        // its bytes are initialised.
        let raw: [u8; 56] = unsafe { core::mem::transmute(ev) };
        if cfg!(target_endian = "little") {
            assert_eq!(raw, ev.to_bytes());
        }
    }

    #[test]
    fn categories_parse_and_print() {
        for c in Category::ALL {
            assert_eq!(Category::parse(&c.to_string()), Some(c));
            assert_eq!(Category::parse(&c.0.to_string()), Some(c));
        }
        assert_eq!(Category::parse("transfer"), Some(Category::TRANSFER));
        assert_eq!(
            Category::parse("NIXL_TELEMETRY_ERROR"),
            Some(Category::ERROR)
        );
        assert_eq!(Category::parse("UNKNOWN_CATEGORY_9"), Some(Category(9)));
        assert_eq!(Category::parse("nope"), None);
    }
}
