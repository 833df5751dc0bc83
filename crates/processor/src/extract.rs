//! Normalisation: a raw record becomes [`TelemetryData`], one value per registry
//! attribute, with defaults applied and strings sanitised.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::direct_parse::{Found, ScanArena};
use crate::error::ExtractError;
use crate::hash::{bytes_eq, hash_bytes, tail_words, KeyHashState};
use crate::record::{JsonNumber, JsonValue, Record};
use crate::registry::AttributeRegistry;
use crate::sanitize::{
    is_sanitized_lower, render_scalar, sanitize_into, sanitize_str, write_number,
};
use crate::types::{AttributeDef, AttributeType, DefaultValue};

/// The value of a boolean attribute: any JSON scalar, kept as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'r> {
    /// A JSON boolean.
    Bool(bool),
    /// A JSON number.
    Number(JsonNumber),
    /// A JSON string.
    String(&'r str),
}

impl Scalar<'_> {
    /// The truth value: `false`, `0`, `0.0` and `""` are false, everything else true.
    pub fn truthy(&self) -> bool {
        match self {
            Scalar::Bool(b) => *b,
            Scalar::Number(JsonNumber::PosInt(u)) => *u != 0,
            Scalar::Number(JsonNumber::NegInt(i)) => *i != 0,
            Scalar::Number(JsonNumber::Float(f)) => *f != 0.0,
            Scalar::String(s) => !s.is_empty(),
        }
    }

    /// Appends the value rendered as text and lower-cased: `true` / `false`, numbers as
    /// [`crate::sanitize::write_number`] writes them, strings lower-cased.
    pub fn write_lower(&self, out: &mut String) {
        match self {
            Scalar::Bool(true) => out.push_str("true"),
            Scalar::Bool(false) => out.push_str("false"),
            Scalar::Number(n) => write_number(*n, out),
            Scalar::String(s) => {
                if s.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
                    out.push_str(&s.to_lowercase());
                } else {
                    out.push_str(s);
                }
            }
        }
    }
}

/// The value of a list attribute: strings, from the record or from the default.
#[derive(Debug, Clone, Copy)]
pub enum ListValue<'r> {
    /// A JSON array whose elements have been checked to be strings.
    Json(&'r [JsonValue<'r>]),
    /// The attribute's default.
    Default(&'r [String]),
    /// A JSON array of strings, each kept as its text.
    Strings(&'r [&'r str]),
}

impl<'r> ListValue<'r> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ListValue::Json(items) => items.len(),
            ListValue::Default(items) => items.len(),
            ListValue::Strings(items) => items.len(),
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'r str> + 'r {
        let (json, default, strings) = match *self {
            ListValue::Json(items) => (items, &[][..], &[][..]),
            ListValue::Default(items) => (&[][..], items, &[][..]),
            ListValue::Strings(items) => (&[][..], &[][..], items),
        };
        json.iter()
            .map(|v| match v {
                JsonValue::String(s) => s.as_ref(),
                _ => "",
            })
            .chain(default.iter().map(String::as_str))
            .chain(strings.iter().copied())
    }

    /// The distinct elements with their counts, in order of first appearance
    /// (`["a", "b", "a"]` → `("a", 2), ("b", 1)`), without allocating for up to
    /// [`NameGroups::INLINE`] distinct elements.
    pub fn groups(&self) -> NameGroups<'r> {
        NameGroups::from_names(self.iter())
    }
}

/// Distinct list elements with their counts (see [`ListValue::groups`]).
#[derive(Debug, Clone)]
pub struct NameGroups<'r> {
    inline: [(&'r str, u32); NameGroups::INLINE],
    len: usize,
    spill: Vec<(&'r str, u32)>,
    /// Position in `spill` by name, once `spill` is longer than a short scan (so that
    /// grouping stays linear in the number of names).
    index: HashMap<&'r str, u32, KeyHashState>,
}

impl<'r> NameGroups<'r> {
    /// Distinct elements kept without allocating.
    pub const INLINE: usize = 4;

    /// Groups names (see [`ListValue::groups`]).
    pub fn from_names(names: impl IntoIterator<Item = &'r str>) -> NameGroups<'r> {
        let mut groups = NameGroups {
            inline: [("", 0); NameGroups::INLINE],
            len: 0,
            spill: Vec::new(),
            index: HashMap::default(),
        };
        for name in names {
            groups.add(name);
        }
        groups
    }

    /// Spilled names looked up by a scan; past this, through `index`.
    const SCAN: usize = 16;

    fn add(&mut self, item: &'r str) {
        if let Some(entry) = self.inline[..self.len]
            .iter_mut()
            .find(|(name, _)| *name == item)
        {
            entry.1 += 1;
            return;
        }
        if self.len < Self::INLINE {
            self.inline[self.len] = (item, 1);
            self.len += 1;
            return;
        }
        let found = if self.spill.len() <= Self::SCAN {
            self.spill.iter().position(|(name, _)| *name == item)
        } else {
            if self.index.is_empty() {
                self.index = self
                    .spill
                    .iter()
                    .enumerate()
                    .map(|(i, (name, _))| (*name, i as u32))
                    .collect();
            }
            self.index.get(item).map(|&i| i as usize)
        };
        match found {
            Some(i) => self.spill[i].1 += 1,
            None => {
                if !self.index.is_empty() {
                    self.index.insert(item, self.spill.len() as u32);
                }
                self.spill.push((item, 1));
            }
        }
    }

    /// The groups in order of first appearance.
    pub fn iter(&self) -> impl Iterator<Item = (&'r str, u32)> + '_ {
        self.inline[..self.len]
            .iter()
            .chain(self.spill.iter())
            .copied()
    }
}

/// Sanitised text: raw text sanitised when first read (and borrowed as it is when it
/// was already clean), or owned text.
#[derive(Clone)]
pub struct Text<'r>(TextRepr<'r>);

#[derive(Clone)]
enum TextRepr<'r> {
    /// Raw text and, once read, its sanitised form (`None`: the raw text is clean).
    Raw(&'r str, OnceLock<Option<Box<str>>>),
    Owned(String),
}

impl<'r> Text<'r> {
    /// Text sanitised in lower case (see [`crate::sanitize_str`]). The work is done
    /// when the text is first read, so values no builder reads cost nothing.
    pub fn sanitized(raw: &'r str) -> Text<'r> {
        Text(TextRepr::Raw(raw, OnceLock::new()))
    }

    /// Owned text, as is.
    pub fn owned(text: String) -> Text<'r> {
        Text(TextRepr::Owned(text))
    }

    /// Text that sanitises to this text (sanitising is idempotent): the raw text when
    /// it was given raw, without sanitising it.
    pub(crate) fn unsanitized(&self) -> &str {
        match &self.0 {
            TextRepr::Raw(raw, _) => raw,
            TextRepr::Owned(text) => text,
        }
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            TextRepr::Raw(raw, sanitized) => sanitized
                .get_or_init(|| {
                    (!is_sanitized_lower(raw)).then(|| {
                        let mut text = String::with_capacity(raw.len());
                        sanitize_into(&mut text, raw, false);
                        text.into_boxed_str()
                    })
                })
                .as_deref()
                .unwrap_or(raw),
            TextRepr::Owned(text) => text,
        }
    }
}

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        self
    }
}

impl std::fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// One normalised attribute value.
#[derive(Debug, Clone)]
pub enum AttrValue<'r> {
    /// A string attribute, sanitised (lower case, `[a-z0-9_]` only).
    String(Text<'r>),
    /// A boolean attribute, as given.
    Boolean(Scalar<'r>),
    /// An integer attribute.
    Integer(i64),
    /// A list attribute.
    List(ListValue<'r>),
}

impl AttrValue<'_> {
    /// Appends the value as text the way the comprehensive name and labels show it:
    /// strings as they are, integers in decimal, booleans lower-cased
    /// ([`Scalar::write_lower`]), lists as their elements joined by `,` (lists never
    /// reach a built-in builder's text: the registry keeps them out of the comprehensive
    /// name, and the labeled builder skips them).
    pub fn write_text(&self, out: &mut String) {
        match self {
            AttrValue::String(s) => out.push_str(s),
            AttrValue::Boolean(b) => b.write_lower(out),
            AttrValue::Integer(i) => {
                use std::fmt::Write as _;
                let _ = write!(out, "{i}");
            }
            AttrValue::List(list) => {
                for (i, item) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(item);
                }
            }
        }
    }
}

/// A record normalised against a registry: one value per attribute, in registry order.
#[derive(Debug, Clone)]
pub struct TelemetryData<'r> {
    registry: &'r AttributeRegistry,
    values: Vec<AttrValue<'r>>,
    /// The groups of one list attribute, computed on first use (several builders group
    /// the same GPU list).
    groups: OnceCell<(usize, NameGroups<'r>)>,
    /// The record's class (see [`RecordClasses`]) over the attribute positions of the
    /// mask, when the processor computed one.
    class: Option<(u64, RecordClass)>,
    /// The positions builders asked a class for (see [`TelemetryData::class`]).
    wanted: Cell<u64>,
}

impl<'r> TelemetryData<'r> {
    /// A record's values, one per attribute of `registry`, in registry order.
    fn new(registry: &'r AttributeRegistry, values: Vec<AttrValue<'r>>) -> TelemetryData<'r> {
        TelemetryData {
            registry,
            values,
            groups: OnceCell::new(),
            class: None,
            wanted: Cell::new(0),
        }
    }

    /// The registry the data follows.
    pub fn registry(&self) -> &'r AttributeRegistry {
        self.registry
    }

    /// The values, in registry order.
    pub fn values(&self) -> &[AttrValue<'r>] {
        &self.values
    }

    /// Takes the values out.
    pub fn into_values(self) -> Vec<AttrValue<'r>> {
        self.values
    }

    /// The value at a registry position (builders resolve positions once, when bound).
    pub fn at(&self, index: usize) -> &AttrValue<'r> {
        &self.values[index]
    }

    /// The distinct elements and counts of the list attribute at `index` (see
    /// [`ListValue::groups`]), computed once per record for the first list asked for;
    /// `None` if that attribute is not a list.
    pub fn groups_at(&self, index: usize) -> Option<Cow<'_, NameGroups<'r>>> {
        let AttrValue::List(list) = self.at(index) else {
            return None;
        };
        let (cached, groups) = self.groups.get_or_init(|| (index, list.groups()));
        Some(if *cached == index {
            Cow::Borrowed(groups)
        } else {
            Cow::Owned(list.groups())
        })
    }

    /// The record's class over (at least) the attribute positions in `mask` (bit `i`:
    /// registry position `i`): an identifier equal for two records exactly when their
    /// values at those positions are equal, so a builder whose metric keys depend only
    /// on those values can remember its slots per class. Identifiers are never reused,
    /// in any processor. `None` when the processor did not compute a class covering the
    /// mask (it learns from the masks asked for, so from the next record on it will)
    /// or the data was not made by a processor.
    pub(crate) fn class(&self, mask: u64) -> Option<RecordClass> {
        if mask == 0 {
            return None;
        }
        self.wanted.set(self.wanted.get() | mask);
        match self.class {
            Some((covered, id)) if covered & mask == mask => Some(id),
            _ => None,
        }
    }

    /// The positions builders asked a class for.
    pub(crate) fn wanted_class_mask(&self) -> u64 {
        self.wanted.get()
    }

    /// Computes the record's class over the positions of `mask`.
    pub(crate) fn set_class(&mut self, classes: &mut RecordClasses, mask: u64) {
        let class = classes.class_of(&self.values, mask);
        self.class = Some((mask, class));
    }

    /// The value of the attribute with this name.
    pub fn get(&self, name: &str) -> Option<&AttrValue<'r>> {
        self.registry.index_of(name).map(|i| &self.values[i])
    }

    /// The truth value of a boolean attribute (`None` if there is no such boolean).
    pub fn truthy(&self, name: &str) -> Option<bool> {
        match self.get(name)? {
            AttrValue::Boolean(b) => Some(b.truthy()),
            _ => None,
        }
    }

    /// The text of a string attribute.
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            AttrValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value of an integer attribute.
    pub fn integer(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            AttrValue::Integer(i) => Some(*i),
            _ => None,
        }
    }

    /// The elements of a list attribute.
    pub fn list(&self, name: &str) -> Option<ListValue<'r>> {
        match self.get(name)? {
            AttrValue::List(l) => Some(*l),
            _ => None,
        }
    }

    /// The data as a JSON object keyed by attribute name (boolean attributes keep the
    /// scalar they were given).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        let number = |n: JsonNumber| match n {
            JsonNumber::PosInt(u) => Value::from(u),
            JsonNumber::NegInt(i) => Value::from(i),
            JsonNumber::Float(f) => Value::from(f),
        };
        let map = self
            .registry
            .attributes()
            .iter()
            .zip(&self.values)
            .map(|(attr, value)| {
                let v = match value {
                    AttrValue::String(s) => Value::from(&**s),
                    AttrValue::Boolean(Scalar::Bool(b)) => Value::from(*b),
                    AttrValue::Boolean(Scalar::Number(n)) => number(*n),
                    AttrValue::Boolean(Scalar::String(s)) => Value::from(*s),
                    AttrValue::Integer(i) => Value::from(*i),
                    AttrValue::List(l) => Value::from(l.iter().collect::<Vec<_>>()),
                };
                (attr.name.clone(), v)
            })
            .collect();
        Value::Object(map)
    }
}

/// Normalises a raw record: for each attribute, the value under its raw key, or its
/// default when the key is missing or `null`. String attributes are sanitised (other
/// JSON scalars are first rendered as text); boolean attributes keep any scalar;
/// integer attributes need a 64-bit integer; list attributes a list of strings.
/// Anything else is an [`ExtractError`] naming the key and the expected type.
pub fn extract_telemetry_data<'r>(
    registry: &'r AttributeRegistry,
    record: &'r Record<'_>,
) -> Result<TelemetryData<'r>, ExtractError> {
    extract_into(registry, record, Vec::with_capacity(registry.len())).map_err(|(error, _)| error)
}

/// Registries of up to this many attributes have their members found in one pass.
const MEMBERS_AT_ONCE: usize = 64;
/// No member (and the most members a record read in one pass may have).
const NO_MEMBER: u8 = u8::MAX;

/// [`extract_telemetry_data`] into a given (empty) vector, handed back on failure so
/// that its allocation can be reused.
#[allow(clippy::type_complexity)]
pub(crate) fn extract_into<'r>(
    registry: &'r AttributeRegistry,
    record: &'r Record<'_>,
    mut values: Vec<AttrValue<'r>>,
) -> Result<TelemetryData<'r>, (ExtractError, Vec<AttrValue<'r>>)> {
    values.clear();
    let attrs = registry.attributes();
    // Each attribute's member: the last one with its raw key, as `Record::get` finds
    // it, found in one pass over the members from the end. Registries of more than
    // MEMBERS_AT_ONCE attributes and records of NO_MEMBER members or more look each
    // attribute up instead.
    let fields = record.fields();
    let at_once = attrs.len() <= MEMBERS_AT_ONCE && fields.len() < usize::from(NO_MEMBER);
    let mut member = [NO_MEMBER; MEMBERS_AT_ONCE];
    if at_once {
        let index = registry.raw_keys();
        for (pos, (key, _)) in fields.iter().enumerate().rev() {
            let mut reader = index.first(attrs, key);
            while let Some(a) = reader {
                if member[a] != NO_MEMBER {
                    // A later member already gave this key's attributes their value.
                    break;
                }
                member[a] = pos as u8;
                reader = index.next_same(a);
            }
        }
    }
    for (i, attr) in attrs.iter().enumerate() {
        let raw = if at_once {
            fields.get(usize::from(member[i])).map(|(_, value)| value)
        } else {
            record.get(&attr.raw_key)
        };
        let value = match raw {
            None | Some(JsonValue::Null) => default_value(attr),
            Some(raw) => match read_value(attr, raw) {
                Ok(value) => value,
                Err(error) => return Err((error, values)),
            },
        };
        values.push(value);
    }
    Ok(TelemetryData::new(registry, values))
}

/// [`extract_into`] for a line read by [`crate::direct_parse::scan_envelope_into`]: each
/// attribute's value from where `found` puts it in `arena`, normalised as
/// [`extract_into`] normalises it. Where that would be an error this gives the vector
/// back instead: the caller then reads the line the general way, which reports it.
pub(crate) fn extract_found<'r>(
    registry: &'r AttributeRegistry,
    arena: &'r ScanArena<'_>,
    found: &[Found<'r>],
    mut values: Vec<AttrValue<'r>>,
) -> Result<TelemetryData<'r>, Vec<AttrValue<'r>>> {
    values.clear();
    // One `extend` of known length: each value is written in its place, with no
    // growth check between building and storing it.
    let mut fits = true;
    values.extend(
        registry
            .attributes()
            .iter()
            .zip(found)
            .map(|(attr, place)| {
                found_value(attr, *place, arena).unwrap_or_else(|| {
                    fits = false;
                    AttrValue::Integer(0)
                })
            }),
    );
    if fits {
        Ok(TelemetryData::new(registry, values))
    } else {
        Err(values)
    }
}

/// An attribute's value from what [`crate::direct_parse::scan_envelope_into`] found,
/// normalised as [`read_value`] normalises it; `None` where that is an error (and for
/// scalars rendered as text, left to the general path).
#[inline(always)]
fn found_value<'r>(
    attr: &'r AttributeDef,
    place: Found<'r>,
    arena: &'r ScanArena<'_>,
) -> Option<AttrValue<'r>> {
    Some(match (place, attr.attr_type) {
        (Found::Missing | Found::Null, _) => default_value(attr),
        (Found::Str(text), AttributeType::String) => AttrValue::String(Text::sanitized(text)),
        (Found::Str(text), AttributeType::Boolean) => AttrValue::Boolean(Scalar::String(text)),
        (Found::Bool(b), AttributeType::Boolean) => AttrValue::Boolean(Scalar::Bool(b)),
        (Found::Number(n), AttributeType::Boolean) => AttrValue::Boolean(Scalar::Number(n)),
        (Found::Number(JsonNumber::NegInt(i)), AttributeType::Integer) => AttrValue::Integer(i),
        (Found::Number(JsonNumber::PosInt(u)), AttributeType::Integer) => {
            AttrValue::Integer(i64::try_from(u).ok()?)
        }
        (Found::At(at), _) => match &arena.values[at as usize] {
            JsonValue::Null => default_value(attr),
            raw => read_value(attr, raw).ok()?,
        },
        (Found::Strings(start, end), AttributeType::List) => AttrValue::List(ListValue::Strings(
            &arena.strings[start as usize..end as usize],
        )),
        (Found::List(start, end), AttributeType::List) => {
            let items = &arena.values[start as usize..end as usize];
            if !items.iter().all(|v| matches!(v, JsonValue::String(_))) {
                return None;
            }
            AttrValue::List(ListValue::Json(items))
        }
        // Scalars rendered as text, and every value of the wrong type.
        _ => return None,
    })
}

/// A record's class: its identifier (never reused, in any processor) and its entry
/// number in the processor's table (dense, reused once the table starts over), so
/// that builders can keep what they remember per class in a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordClass {
    pub(crate) id: u64,
    pub(crate) index: u32,
}

/// Where class identifiers come from: one counter for every table, so that an
/// identifier is never reused (builders may remember it after a table forgets it).
static NEXT_CLASS: AtomicU64 = AtomicU64::new(1);

/// Record classes: the normalised values of a record at chosen attribute positions,
/// written as bytes that determine them (its signature), each distinct signature with
/// an identifier. One lookup per record gives builders a small number to remember
/// their slots under, instead of each building and hashing its own key text.
///
/// An open-addressing table of entry numbers; entries keep the signature's hash and
/// its bytes (in one buffer) for an exact comparison. Remembers at most about
/// [`RecordClasses::MAX_CLASSES`] classes or [`RecordClasses::MAX_BYTES`] bytes of
/// signatures, then starts over.
#[derive(Debug)]
pub(crate) struct RecordClasses {
    seed: u64,
    /// Entry number + 1 (0: free), at most half full; the length is a power of two.
    table: Vec<u32>,
    entries: Vec<ClassEntry>,
    bytes: Vec<u8>,
    signature: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct ClassEntry {
    hash: u64,
    start: u32,
    end: u32,
    id: u64,
}

impl Default for RecordClasses {
    fn default() -> Self {
        RecordClasses {
            seed: KeyHashState::default().seed(),
            table: Vec::new(),
            entries: Vec::new(),
            bytes: Vec::new(),
            signature: Vec::new(),
        }
    }
}

impl RecordClasses {
    const MAX_CLASSES: usize = 1 << 16;
    const MAX_BYTES: usize = 16 << 20;

    /// The class of `values` over the positions in `mask`.
    pub(crate) fn class_of(&mut self, values: &[AttrValue<'_>], mask: u64) -> RecordClass {
        let mut signature = std::mem::take(&mut self.signature);
        signature.clear();
        // The mask first: signatures over different positions never compare equal.
        signature.extend_from_slice(&mask.to_le_bytes());
        for (i, value) in values.iter().enumerate().take(64) {
            if mask & (1 << i) != 0 {
                write_signature(&mut signature, value);
            }
        }
        let id = self.id(&signature);
        self.signature = signature;
        id
    }

    fn id(&mut self, signature: &[u8]) -> RecordClass {
        let hash = hash_bytes(self.seed, signature);
        let mask = self.table.len().wrapping_sub(1);
        let mut at = hash as usize & mask;
        while let Some(&slot) = self.table.get(at) {
            if slot == 0 {
                break;
            }
            let entry = self.entries[slot as usize - 1];
            if entry.hash == hash
                && bytes_eq(
                    &self.bytes[entry.start as usize..entry.end as usize],
                    signature,
                )
            {
                return RecordClass {
                    id: entry.id,
                    index: slot - 1,
                };
            }
            at = (at + 1) & mask;
        }
        self.insert(signature, hash)
    }

    #[cold]
    fn insert(&mut self, signature: &[u8], hash: u64) -> RecordClass {
        if self.entries.len() >= Self::MAX_CLASSES || self.bytes.len() >= Self::MAX_BYTES {
            self.table.clear();
            self.entries.clear();
            self.bytes.clear();
        }
        if (self.entries.len() + 1) * 2 > self.table.len() {
            let len = (self.table.len() * 2).max(64);
            self.table.clear();
            self.table.resize(len, 0);
            for (n, entry) in self.entries.iter().enumerate() {
                place(&mut self.table, entry.hash, n as u32 + 1);
            }
        }
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(signature);
        let id = NEXT_CLASS.fetch_add(1, Ordering::Relaxed);
        self.entries.push(ClassEntry {
            hash,
            start,
            end: self.bytes.len() as u32,
            id,
        });
        let n = self.entries.len() as u32;
        place(&mut self.table, hash, n);
        RecordClass { id, index: n - 1 }
    }
}

/// Puts `value` at the first free place for `hash` (the table has one).
fn place(table: &mut [u32], hash: u64, value: u32) {
    let mask = table.len() - 1;
    let mut at = hash as usize & mask;
    while table[at] != 0 {
        at = (at + 1) & mask;
    }
    table[at] = value;
}

/// Appends bytes that determine a value given its attribute's type: concatenations of
/// these for the same positions stay unambiguous.
fn write_signature(out: &mut Vec<u8>, value: &AttrValue<'_>) {
    /// The length, then text of up to 16 bytes as its two words (a store of fixed
    /// size instead of a copy call; the length tells the two forms apart), longer
    /// text as it is.
    #[inline(always)]
    fn counted(out: &mut Vec<u8>, text: &str) {
        let len = (text.len() as u32).to_le_bytes();
        if text.len() <= 16 {
            let (a, b) = tail_words(text.as_bytes());
            let mut unit = [0; 20];
            unit[..4].copy_from_slice(&len);
            unit[4..12].copy_from_slice(&a.to_le_bytes());
            unit[12..].copy_from_slice(&b.to_le_bytes());
            out.extend_from_slice(&unit);
        } else {
            out.extend_from_slice(&len);
            out.extend_from_slice(text.as_bytes());
        }
    }
    match value {
        // Text that sanitises to the value (raw text is not sanitised here).
        AttrValue::String(text) => counted(out, text.unsanitized()),
        AttrValue::Boolean(Scalar::Bool(b)) => out.push(u8::from(*b)),
        AttrValue::Boolean(Scalar::Number(n)) => {
            let (tag, bits) = match n {
                JsonNumber::PosInt(u) => (2, *u),
                JsonNumber::NegInt(i) => (3, *i as u64),
                JsonNumber::Float(f) => (4, f.to_bits()),
            };
            out.push(tag);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        AttrValue::Boolean(Scalar::String(s)) => {
            out.push(5);
            counted(out, s);
        }
        AttrValue::Integer(i) => out.extend_from_slice(&i.to_le_bytes()),
        AttrValue::List(list) => {
            out.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for item in list.iter() {
                counted(out, item);
            }
        }
    }
}

/// `values` emptied, as a vector of `U`: its allocation is kept when `T` and `U` have
/// one layout, as a type does under another lifetime (what this is for: a vector
/// reused from record to record, whose elements borrow from each record).
#[inline]
pub(crate) fn recycle<T, U>(mut values: Vec<T>) -> Vec<U> {
    values.clear();
    // An in-place collect: same layout, so the allocation is kept.
    values.into_iter().map(|_| unreachable!("empty")).collect()
}

fn default_value(attr: &AttributeDef) -> AttrValue<'_> {
    match &attr.default {
        DefaultValue::String(s) => AttrValue::String(Text::sanitized(s)),
        DefaultValue::Boolean(b) => AttrValue::Boolean(Scalar::Bool(*b)),
        DefaultValue::Integer(i) => AttrValue::Integer(*i),
        DefaultValue::List(items) => AttrValue::List(ListValue::Default(items)),
    }
}

fn wrong_type(attr: &AttributeDef, raw: &JsonValue<'_>) -> ExtractError {
    ExtractError::WrongType {
        attribute: attr.name.clone(),
        raw_key: attr.raw_key.clone(),
        expected: attr.attr_type,
        found: raw.kind(),
    }
}

fn read_value<'r>(
    attr: &AttributeDef,
    raw: &'r JsonValue<'_>,
) -> Result<AttrValue<'r>, ExtractError> {
    Ok(match attr.attr_type {
        AttributeType::String => match raw {
            JsonValue::String(s) => AttrValue::String(Text::sanitized(s)),
            JsonValue::Array(_) | JsonValue::Object(_) => return Err(wrong_type(attr, raw)),
            scalar => {
                let mut text = String::new();
                render_scalar(scalar, &mut text);
                AttrValue::String(Text::owned(sanitize_str(&text, false).into_owned()))
            }
        },
        AttributeType::Boolean => AttrValue::Boolean(match raw {
            JsonValue::Bool(b) => Scalar::Bool(*b),
            JsonValue::Number(n) => Scalar::Number(*n),
            JsonValue::String(s) => Scalar::String(s),
            _ => return Err(wrong_type(attr, raw)),
        }),
        AttributeType::Integer => match raw {
            JsonValue::Number(JsonNumber::NegInt(i)) => AttrValue::Integer(*i),
            JsonValue::Number(JsonNumber::PosInt(u)) => {
                AttrValue::Integer(i64::try_from(*u).map_err(|_| {
                    ExtractError::IntegerOutOfRange {
                        attribute: attr.name.clone(),
                        raw_key: attr.raw_key.clone(),
                        value: *u,
                    }
                })?)
            }
            _ => return Err(wrong_type(attr, raw)),
        },
        AttributeType::List => match raw {
            JsonValue::Array(items) => {
                if let Some((index, bad)) = items
                    .iter()
                    .enumerate()
                    .find(|(_, v)| !matches!(v, JsonValue::String(_)))
                {
                    return Err(ExtractError::ListElement {
                        attribute: attr.name.clone(),
                        raw_key: attr.raw_key.clone(),
                        index,
                        found: bad.kind(),
                    });
                }
                AttrValue::List(ListValue::Json(items))
            }
            _ => return Err(wrong_type(attr, raw)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data<'r>(registry: &'r AttributeRegistry, record: &'r Record<'_>) -> TelemetryData<'r> {
        extract_telemetry_data(registry, record).unwrap()
    }

    #[test]
    fn texts_of_every_length_differing_in_one_byte_are_other_classes() {
        let registry = AttributeRegistry::default();
        let all = u64::MAX >> (64 - registry.len());
        let mut classes = RecordClasses::default();
        let base = "abcdefghijklmnopqrstu";
        for n in 0..=base.len() {
            let class = |classes: &mut RecordClasses, action: &str, gpu: &str| {
                let text = format!(r#"{{"action": "{action}", "gpu": ["{gpu}"]}}"#);
                let record = Record::parse(&text).unwrap();
                classes.class_of(data(&registry, &record).values(), all)
            };
            let same = class(&mut classes, &base[..n], &base[..n]);
            assert_eq!(class(&mut classes, &base[..n], &base[..n]), same);
            for i in 0..n {
                let mut other = base.as_bytes()[..n].to_vec();
                other[i] = b'_';
                let other = String::from_utf8(other).unwrap();
                assert_ne!(class(&mut classes, &other, &base[..n]), same, "{other}");
                assert_ne!(class(&mut classes, &base[..n], &other), same, "{other}");
            }
        }
    }

    #[test]
    fn classes_are_equal_exactly_for_equal_values_and_never_reused() {
        let registry = AttributeRegistry::default();
        let all = u64::MAX >> (64 - registry.len());
        let texts = [
            r#"{"action": "train", "gpu": ["a", "b"]}"#,
            r#"{"action": "train", "gpu": ["a", "b"], "time_lapsed": 3}"#,
            r#"{"action": "train", "gpu": ["ab"]}"#,
            r#"{"action": "train", "gpu": ["a", "b"], "success": 1}"#,
            r#"{"action": "train", "gpu": ["a", "b"], "success": true}"#,
            r#"{"action": "train", "gpu": ["a", "b"], "success": "x"}"#,
            // Raw text: equal once sanitised, but another class (finer, still exact).
            r#"{"action": "Train", "gpu": ["a", "b"]}"#,
        ];
        let records: Vec<Record<'_>> = texts.iter().map(|t| Record::parse(t).unwrap()).collect();
        let mut classes = RecordClasses::default();
        let ids: Vec<RecordClass> = records
            .iter()
            .map(|r| classes.class_of(data(&registry, r).values(), all))
            .collect();
        // time_lapsed is part of the mask here.
        for (i, a) in ids.iter().enumerate() {
            for (j, b) in ids.iter().enumerate() {
                assert_eq!(a == b, i == j, "{i} {j}");
            }
        }
        let without_time = all & !(1 << registry.index_of("time_lapsed").unwrap());
        let first = classes.class_of(data(&registry, &records[0]).values(), without_time);
        let second = classes.class_of(data(&registry, &records[1]).values(), without_time);
        assert_eq!(first, second);
        assert_ne!(first, ids[0], "another mask, another class");

        // Past the table's bound it starts over: the same values get a new identifier.
        for n in 0..RecordClasses::MAX_CLASSES {
            let text = format!(r#"{{"action": "a{n}"}}"#);
            let record = Record::parse(&text).unwrap();
            classes.class_of(data(&registry, &record).values(), all);
        }
        let again = classes.class_of(data(&registry, &records[0]).values(), all);
        assert_ne!(again.id, ids[0].id);
        assert_eq!(
            classes.class_of(data(&registry, &records[0]).values(), all),
            again
        );
    }
}

#[cfg(test)]
mod one_pass_tests {
    use super::*;
    use crate::types::{AttributeType as T, DefaultValue as D};

    /// What each attribute reads, shown as text: the value `Record::get` finds for its
    /// raw key (the last member with it), or the attribute's error.
    fn by_lookup(registry: &AttributeRegistry, record: &Record<'_>) -> String {
        let mut out = String::new();
        for attr in registry.attributes() {
            let shown = match record.get(&attr.raw_key) {
                None | Some(JsonValue::Null) => format!("{:?}", default_value(attr)),
                Some(raw) => match read_value(attr, raw) {
                    Ok(value) => format!("{value:?}"),
                    Err(error) => return format!("error: {error}"),
                },
            };
            out.push_str(&shown);
            out.push('\n');
        }
        out
    }

    fn by_extract(registry: &AttributeRegistry, record: &Record<'_>) -> String {
        match extract_into(registry, record, Vec::new()) {
            Ok(data) => data.values().iter().map(|v| format!("{v:?}\n")).collect(),
            Err((error, _)) => format!("error: {error}"),
        }
    }

    fn records() -> Vec<String> {
        let mut texts: Vec<String> = [
            r#"{}"#,
            r#"{"action": "train", "gpu": ["a", "b"], "x": 1, "y": 2, "z": 3}"#,
            // Duplicates: the last member wins, an earlier one of the wrong type is ignored.
            r#"{"time_lapsed": "bad", "action": "a", "time_lapsed": 4, "action": "b"}"#,
            r#"{"time_lapsed": 4, "time_lapsed": "bad"}"#,
            r#"{"time_lapsed": 4, "time_lapsed": null}"#,
            r#"{"gpu": 3, "version": 7, "network": [1], "success": "s"}"#,
            r#"{"automl_triggered": true, "client_type": "cli", "user_error": 0, "success": 1.5}"#,
            r#"{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        // More members than one pass takes, the attribute's member last.
        let mut many = String::from("{");
        for i in 0..300 {
            many.push_str(&format!("\"k{i}\": {i}, "));
        }
        many.push_str("\"time_lapsed\": 5, \"action\": \"x\", \"time_lapsed\": 6}");
        texts.push(many);
        texts
    }

    fn compare(registry: &AttributeRegistry) {
        for text in records() {
            let record = Record::parse(&text).unwrap();
            assert_eq!(
                by_extract(registry, &record),
                by_lookup(registry, &record),
                "{text}"
            );
        }
    }

    #[test]
    fn one_pass_finds_what_a_lookup_per_attribute_finds() {
        compare(&AttributeRegistry::default());
    }

    #[test]
    fn attributes_sharing_a_raw_key_each_read_it() {
        let mut attrs = AttributeRegistry::builtin_attributes();
        attrs.push(AttributeDef::new(
            "lapsed_again",
            "time_lapsed",
            T::Integer,
            D::Integer(0),
        ));
        attrs.push(AttributeDef::new(
            "action_as_flag",
            "action",
            T::Boolean,
            D::Boolean(false),
        ));
        attrs.push(AttributeDef::new(
            "x_text",
            "x",
            T::String,
            D::String("none".into()),
        ));
        let registry = AttributeRegistry::new(attrs).unwrap();
        compare(&registry);
        let record = Record::parse(r#"{"time_lapsed": 9, "action": "go"}"#).unwrap();
        let data = extract_telemetry_data(&registry, &record).unwrap();
        assert_eq!(data.integer("lapsed_again"), Some(9));
        assert_eq!(data.truthy("action_as_flag"), Some(true));
    }

    #[test]
    fn registries_too_large_for_one_pass_read_the_same() {
        let mut attrs = AttributeRegistry::builtin_attributes();
        for i in attrs.len()..=MEMBERS_AT_ONCE {
            attrs.push(AttributeDef::new(
                format!("k{i}"),
                format!("k{i}"),
                T::Integer,
                D::Integer(-1),
            ));
        }
        assert!(attrs.len() > MEMBERS_AT_ONCE);
        let registry = AttributeRegistry::new(attrs).unwrap();
        compare(&registry);
    }
}
