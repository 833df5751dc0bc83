//! Caching: the handle builders write through while a record is applied
//! ([`MetricsUpdate`]), remembered metric positions ([`Slot`]), and the memo of what
//! each record class writes ([`ClassMemo`]).
//!
//! The built-in builders share one shape: their rule code turns a record into a list
//! of [`Write`]s (a metric's slot and how much to add), and one function,
//! [`MetricsUpdate::apply`], adds them. The memo keeps that list per record class, so a
//! class seen before replays the same list through the same function without building,
//! hashing or looking up any key: there is no second statement of any rule.

use crate::error::BuildError;
use crate::extract::RecordClass;

use super::storage::{Metrics, UndoLog};

/// A remembered position of a metric in one [`Metrics`] map (see [`MetricsUpdate::slot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    id: u32,
    generation: u64,
}

/// The metrics as builders see them while a record is applied: every write is
/// recorded so that a record that fails half-way leaves the map exactly as it was.
#[derive(Debug)]
pub struct MetricsUpdate<'m> {
    metrics: &'m mut Metrics,
    undo: &'m mut UndoLog,
}

impl<'m> MetricsUpdate<'m> {
    pub(crate) fn new(metrics: &'m mut Metrics, undo: &'m mut UndoLog) -> MetricsUpdate<'m> {
        MetricsUpdate { metrics, undo }
    }

    /// The current value of a metric (including this record's earlier writes).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<i64> {
        self.metrics.get(key)
    }

    /// Adds `delta` to a metric (a missing metric counts as 0) and returns the new value.
    /// Fails, changing nothing, if the result leaves the 64-bit range.
    pub fn add(&mut self, key: &str, delta: i64) -> Result<i64, BuildError> {
        match self.metrics.id_of(key) {
            Some(id) => self.add_id(id, delta),
            None => {
                self.undo.create(self.metrics, key, delta)?;
                Ok(delta)
            }
        }
    }

    /// Sets a metric to `value`.
    pub fn set(&mut self, key: &str, value: i64) -> Result<(), BuildError> {
        match self.metrics.id_of(key) {
            Some(id) => {
                self.undo.write(self.metrics, id, value);
                Ok(())
            }
            None => self.undo.create(self.metrics, key, value).map(drop),
        }
    }

    /// The slot of a metric, creating it with value 0 if it does not exist (a creation
    /// is undone like any write). A slot stays valid for this map until
    /// [`MetricsUpdate::is_current`] says otherwise, so builders can remember the slots
    /// of long keys and skip hashing them on later records.
    pub fn slot(&mut self, key: &str) -> Result<Slot, BuildError> {
        let id = match self.metrics.id_of(key) {
            Some(id) => id,
            None => self.undo.create(self.metrics, key, 0)?,
        };
        Ok(Slot {
            id,
            generation: self.metrics.generation(),
        })
    }

    /// Whether a remembered slot still belongs to this map.
    #[inline]
    #[must_use]
    pub fn is_current(&self, slot: Slot) -> bool {
        slot.generation == self.metrics.generation()
    }

    /// Adds `delta` to the metric at `slot` (see [`MetricsUpdate::add`]).
    #[inline]
    pub fn add_at(&mut self, slot: Slot, delta: i64) -> Result<i64, BuildError> {
        if !self.is_current(slot) {
            return Err(BuildError::StaleSlot);
        }
        self.add_id(slot.id, delta)
    }

    /// Sets the metric at `slot` (see [`MetricsUpdate::set`]).
    pub fn set_at(&mut self, slot: Slot, value: i64) -> Result<(), BuildError> {
        if !self.is_current(slot) {
            return Err(BuildError::StaleSlot);
        }
        self.undo.write(self.metrics, slot.id, value);
        Ok(())
    }

    /// Applies a builder's writes for one record, in order: each adds its amount, or,
    /// for a write that scales with the record's time, `amount × time` when `time` is
    /// positive (nothing otherwise). Every slot must be current.
    #[inline]
    pub(crate) fn apply(&mut self, writes: &[Write], time: i64) -> Result<(), BuildError> {
        for write in writes {
            let delta = if !write.scaled {
                write.amount
            } else if time > 0 {
                match write.amount.checked_mul(time) {
                    Some(delta) => delta,
                    None => return Err(self.overflow(write.slot.id)),
                }
            } else {
                continue;
            };
            self.add_at(write.slot, delta)?;
        }
        Ok(())
    }

    #[inline]
    fn add_id(&mut self, id: u32, delta: i64) -> Result<i64, BuildError> {
        match self.metrics.value_at(id).checked_add(delta) {
            Some(new) => {
                self.undo.write(self.metrics, id, new);
                Ok(new)
            }
            None => Err(self.overflow(id)),
        }
    }

    #[cold]
    #[inline(never)]
    fn overflow(&self, id: u32) -> BuildError {
        BuildError::Overflow {
            key: self.metrics.key_of(id),
        }
    }
}

/// One write of a built-in builder (see [`MetricsUpdate::apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Write {
    pub(crate) slot: Slot,
    pub(crate) amount: i64,
    /// The amount is multiplied by the record's time, and added only when that time is
    /// positive.
    pub(crate) scaled: bool,
}

impl Write {
    /// Adds `amount` for every record.
    pub(crate) fn per_job(slot: Slot, amount: i64) -> Write {
        Write {
            slot,
            amount,
            scaled: false,
        }
    }

    /// Adds `factor × time` for records whose time is positive.
    pub(crate) fn per_time(slot: Slot, factor: i64) -> Write {
        Write {
            slot,
            amount: factor,
            scaled: true,
        }
    }
}

/// What one class wrote: a range of the memo's shared list.
#[derive(Debug, Clone, Copy)]
struct ClassWrites {
    /// The class's identifier (0: nothing remembered here).
    class: u64,
    start: u32,
    end: u32,
    /// Whether the list holds the writes that scale with time (a class first seen
    /// with no time lacks them: its metrics were not created).
    timed: bool,
}

/// The writes a builder made per record class (see `TelemetryData::class`), in a
/// vector indexed by the class's entry number, so that a builder seeing a class again
/// replays them without building, hashing or looking up any key. Everything is
/// forgotten when the metrics map changes (another map, or a roll-back that removed
/// keys), and when the shared list grows past `16 × capacity`; classes numbered
/// `capacity` or more are not remembered.
#[derive(Debug)]
pub(crate) struct ClassMemo {
    entries: Vec<ClassWrites>,
    writes: Vec<Write>,
    /// The generation of the map every remembered slot belongs to.
    generation: u64,
    capacity: usize,
}

impl ClassMemo {
    pub(crate) fn new(capacity: usize) -> ClassMemo {
        ClassMemo {
            entries: Vec::new(),
            writes: Vec::new(),
            generation: 0,
            capacity,
        }
    }

    fn forget_if_stale(&mut self, metrics: &MetricsUpdate<'_>) {
        if self.generation != metrics.metrics.generation() {
            self.entries.clear();
            self.writes.clear();
            self.generation = metrics.metrics.generation();
        }
    }

    /// The writes remembered for `class` in these metrics, if they cover a record
    /// whose time is `time` (a positive time needs the timed writes).
    #[inline]
    pub(crate) fn get(
        &mut self,
        metrics: &MetricsUpdate<'_>,
        class: Option<RecordClass>,
        time: i64,
    ) -> Option<&[Write]> {
        let class = class?;
        self.forget_if_stale(metrics);
        let entry = self.entries.get(class.index as usize)?;
        (entry.class == class.id && (entry.timed || time <= 0))
            .then(|| &self.writes[entry.start as usize..entry.end as usize])
    }

    /// Remembers (or replaces) what `class` writes; every slot must belong to
    /// `metrics` as they are now. `timed`: the list holds the writes that scale with
    /// time.
    pub(crate) fn insert(
        &mut self,
        metrics: &MetricsUpdate<'_>,
        class: Option<RecordClass>,
        writes: &[Write],
        timed: bool,
    ) {
        let Some(class) = class else {
            return;
        };
        self.forget_if_stale(metrics);
        let index = class.index as usize;
        if index >= self.capacity {
            return;
        }
        if self.writes.len() + writes.len() > self.capacity.saturating_mul(16) {
            self.entries.clear();
            self.writes.clear();
        }
        if self.entries.len() <= index {
            let empty = ClassWrites {
                class: 0,
                start: 0,
                end: 0,
                timed: false,
            };
            self.entries.resize(index + 1, empty);
        }
        let start = self.writes.len() as u32;
        self.writes.extend_from_slice(writes);
        self.entries[index] = ClassWrites {
            class: class.id,
            start,
            end: self.writes.len() as u32,
            timed,
        };
    }
}
