//! A peeking reader that follows the writer rather than the consumer
//! ([`RingReader::follow_writer`](super::RingReader::follow_writer)).
//!
//! A consumer that moves `read_pos` past a peeking reader does not erase the
//! slots it read: each keeps its event until the writer comes round to it
//! again. So the slots from the peeking reader's own position up to
//! `write_pos` hold events it has not seen, consumed or not, unless the writer
//! has written over some of them. Which ones it may have written over is told
//! by the positions alone, given how far the writer can have gone past the
//! `write_pos` it last published:
//!
//! * a slot no consumer has released (from `read_pos` on) is never written:
//!   the writer only fills the slots a consumer gave back;
//! * NIXL's writers publish `write_pos` after every event, so at most the one
//!   slot at `write_pos` is being written unseen;
//! * this project's writer (the rings with a trailer) writes a whole batch and
//!   then publishes `write_pos` once, so while it writes, any slot a consumer
//!   gave back may be changing. A copy that holds such slots is kept until the
//!   writer is seen to publish again, to flush (the trailer's heartbeat,
//!   stored after each flush pass), to close, or to be gone (its lock free);
//!   by then every write it began before the copy is counted in `write_pos`.
//!
//! Of the slots copied, the oldest are the first the writer comes round to:
//! those within its reach are dropped and counted ([`written_over`]), the
//! rest handed out. What positions cannot show is a writer going round the
//! whole ring between two of the reader's loads of `write_pos`: a caller
//! that must know looks often enough, or counts with the trailer's
//! `events_written` (see `docs/readers.md`).

/// How many slots, counted from the oldest copied, the writer may have
/// written over: the copy started `backlog` slots behind `write_pos` as
/// loaded before the copy, and the writer has since published `advance`
/// slots and may be writing `in_flight` more unpublished.
///
/// The slot `i` places after the oldest lies `capacity − backlog + i` slots
/// ahead of that `write_pos`: the writer reaches it only after writing that
/// many.
pub(super) fn written_over(capacity: u64, backlog: u64, advance: u64, in_flight: u64) -> u64 {
    advance
        .saturating_add(in_flight)
        .saturating_add(backlog)
        .saturating_sub(capacity)
        .min(backlog)
}

/// How many of `copied` slots, the oldest `backlog` slots behind `write_pos`
/// as loaded before the copy, a consumer had taken when `write_pos` had
/// since advanced by `advance` and `unread` slots were left to it. Counted
/// from the copy's oldest slot, whose distance from either position could
/// not be told modulo the capacity once the writer comes round to it.
pub(super) fn consumed(backlog: u64, advance: u64, unread: u64, copied: u64) -> u64 {
    backlog
        .saturating_add(advance)
        .saturating_sub(unread)
        .min(copied)
}

/// What a reader following the writer keeps between calls.
#[derive(Debug, Default)]
pub(super) struct Following {
    /// Bytes of slots copied and not handed out yet, from byte `start` on.
    pub held: Vec<u8>,
    pub start: usize,
    /// The copy in `held` may still be changing under the writer.
    pub unsettled: Option<Unsettled>,
}

impl Following {
    /// Slots held, of `slot_size` bytes.
    pub fn held_slots(&self, slot_size: usize) -> u64 {
        ((self.held.len() - self.start) / slot_size) as u64
    }

    /// Forgets the oldest `n` slots held (at most all of them).
    pub fn drop_front(&mut self, n: u64, slot_size: usize) {
        let n = n.min(self.held_slots(slot_size)) as usize;
        self.start += n * slot_size;
        if self.start == self.held.len() {
            self.held.clear();
            self.start = 0;
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.held.clear();
        self.start = 0;
        self.unsettled = None;
    }
}

/// A copy whose consumed slots this project's writer may have been writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unsettled {
    /// `write_pos` loaded before the copy.
    pub write_before: u64,
    /// Slots from the oldest copied up to `write_before`.
    pub backlog: u64,
    /// Slots dropped already, at the copy.
    pub dropped: u64,
    /// `write_pos` and the trailer's heartbeat loaded after the copy.
    pub write_after: u64,
    pub heartbeat_after: Option<u64>,
    /// Slots of the copy a consumer had taken, after the copy.
    pub consumed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_reaches_the_oldest_slots_first() {
        // 16 slots; the copy starts 10 behind write_pos.
        assert_eq!(written_over(16, 10, 0, 0), 0);
        assert_eq!(written_over(16, 10, 5, 0), 0);
        assert_eq!(written_over(16, 10, 6, 0), 0, "slots 10 behind: 6 ahead");
        assert_eq!(written_over(16, 10, 7, 0), 1);
        assert_eq!(written_over(16, 10, 6, 1), 1, "one slot being written");
        assert_eq!(written_over(16, 10, 15, 1), 10, "never more than copied");
        assert_eq!(written_over(16, 10, u64::MAX, 1), 10);
    }

    #[test]
    fn consumed_slots_are_those_before_read_pos() {
        // A copy of 6 slots, 6 behind write_pos.
        assert_eq!(consumed(6, 0, 6, 6), 0, "consumer at our position");
        assert_eq!(consumed(6, 0, 8, 6), 0, "consumer behind us");
        assert_eq!(consumed(6, 0, 3, 6), 3);
        assert_eq!(consumed(6, 0, 0, 6), 6, "everything consumed");
        assert_eq!(consumed(6, 3, 0, 6), 6, "and more written since");
        // The writer came round to the oldest slot while it was copied: 16
        // slots, the copy 14 behind, 5 written since, 2 left unread.
        assert_eq!(consumed(14, 5, 2, 14), 14);
    }
}
