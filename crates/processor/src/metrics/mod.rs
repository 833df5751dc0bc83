//! The metrics map and how builders write to it.
//!
//! * [`storage`]: the map itself ([`Metrics`]: values by key and `last_updated`), its
//!   JSON form, and the undo log that makes a record all-or-nothing.
//! * [`caching`]: the update handle builders write through ([`MetricsUpdate`], with
//!   remembered positions, [`Slot`]), and the per-record-class memo the built-in
//!   builders use to replay what a combination of values wrote before.

pub(crate) mod caching;
pub(crate) mod storage;

pub(crate) use caching::{ClassMemo, Write};
pub use caching::{MetricsUpdate, Slot};
pub use storage::{Metrics, LAST_UPDATED};
pub(crate) use storage::{Stamp, UndoLog};
