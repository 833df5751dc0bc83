//! One sample per label set: which stores of the directory the owner
//! publishes, under which labels, and which it may remove.
//!
//! A store's labels are `agent_name`, `hostname`, `pid`, `agent_instance` and
//! `local_rank`, and nothing stops two stores from having the same ones: with
//! one PID namespace per rank (containers) a restarted rank is pid 1 again,
//! and a copied store file repeats its original. Two samples of one series
//! are an invalid exposition (Prometheus keeps the first and drops the other),
//! so the stores of one label set are published as one:
//!
//! * Stores with the same creation time are one *incarnation* (one exporter's
//!   life): a copy repeats its original. The live store stands for it, or,
//!   when none is live, the one published last; the others are never
//!   published, and are removed once released and stale.
//! * An incarnation is kept while its writer lives, until its last update
//!   is older than the stale TTL, and beyond that for as long as an
//!   incarnation that *continues* it is kept: one that started before its
//!   TTL ran out (while it was still published) and was seen later. A rank
//!   restarted within the TTL therefore goes on as the same series, however
//!   long it then lives; a store left from long ago does not join a new one.
//! * The kept incarnations are published as one: the counters (counter
//!   families, histogram buckets, sums and counts, errors, per-name counters)
//!   are their sums, so the series never goes down; the gauges (last values),
//!   the histogram bounds and the labels are the newest live incarnation's
//!   (the newest one's when none lives). An incarnation that ended counts its
//!   outstanding registrations as deregistered (its process took them along),
//!   so `agent_memory_registered_bytes` is the live rank's. Observations of an
//!   incarnation with other bounds count in the first bucket whose bound is
//!   at least their own bucket's.
//!
//! Everything is decided from the stores alone (creation and update times,
//! liveness), so every owner, after a takeover too, decides the same.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use nixl_telemetry_metrics::families::{Kind, Source, HISTOGRAMS, SCALARS};
use nixl_telemetry_metrics::{histogram, slot, HistogramTotals, Series, Totals};

use crate::scan::StoreReading;

/// The most incarnations of one label set kept only because a later one
/// continues them (a rank restarting faster than the TTL, over and over);
/// beyond it the oldest are let go, and the series drops by their totals.
pub const MAX_CONTINUED: usize = 64;

/// A store as a scan found it.
#[derive(Debug, Clone)]
pub struct Found {
    /// What it holds.
    pub reading: StoreReading,
    /// Whether its writer holds it (a store whose lock cannot be probed
    /// counts as live: nothing is removed on a probe that failed).
    pub live: bool,
}

/// What to do with the stores found, by their index in the input.
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// One reading per label set, its incarnations merged, in rendering
    /// order (by local rank, pid, agent instance, agent name, host name).
    pub published: Vec<StoreReading>,
    /// Released, stale and not needed: to be removed.
    pub reap: Vec<usize>,
    /// Copies: stores repeating another store's incarnation, not published.
    pub copies: Vec<usize>,
    /// Released stores whose totals a later incarnation goes on from.
    pub continued: Vec<usize>,
    /// Live stores sharing their labels with another live store (their
    /// counters are summed): one per label set, the newest.
    pub live_twins: Vec<usize>,
    /// Incarnations let go beyond [`MAX_CONTINUED`].
    pub over_limit: Vec<usize>,
}

/// The labels of a store, as its series carry them.
type LabelKey<'a> = (&'a str, &'a str, u32, u32, Option<&'a str>);

fn label_key(r: &StoreReading) -> LabelKey<'_> {
    (
        &r.agent_name,
        &r.hostname,
        r.pid,
        r.agent_instance,
        r.local_rank.as_deref(),
    )
}

/// One exporter's life: the store standing for it.
#[derive(Debug, Clone, Copy)]
struct Incarnation {
    store: usize,
    live: bool,
    created_ms: u64,
    updated_ms: u64,
    /// Now if live, its last update otherwise.
    last_seen_ms: u64,
}

/// Decides, at `now_ms` with a stale TTL of `ttl_ms`, what is published
/// and what is removed among `found` (every store of this owner's address).
pub fn select(found: &[Found], now_ms: u64, ttl_ms: u64) -> Selection {
    let mut out = Selection::default();
    let mut groups: BTreeMap<LabelKey<'_>, Vec<usize>> = BTreeMap::new();
    for (i, f) in found.iter().enumerate() {
        groups.entry(label_key(&f.reading)).or_default().push(i);
    }
    let stale = |updated_ms: u64| now_ms.saturating_sub(updated_ms) > ttl_ms;
    for members in groups.values() {
        let (incarnations, copies) = incarnations(found, members, now_ms);
        for &c in &copies {
            if !found[c].live && stale(found[c].reading.updated_ms) {
                out.reap.push(c);
            }
        }
        out.copies.extend(copies);
        let kept = kept(&incarnations, ttl_ms, &stale, &mut out);
        for (inc, keep) in incarnations.iter().zip(&kept) {
            if !keep {
                out.reap.push(inc.store);
            }
        }
        let kept: Vec<&Incarnation> = incarnations
            .iter()
            .zip(&kept)
            .filter_map(|(inc, &keep)| keep.then_some(inc))
            .collect();
        let Some(newest) = kept
            .iter()
            .max_by_key(|inc| (inc.live, inc.created_ms, inc.updated_ms))
        else {
            continue;
        };
        if kept.iter().filter(|inc| inc.live).count() > 1 {
            out.live_twins.push(newest.store);
        }
        for inc in &kept {
            if !inc.live && inc.store != newest.store {
                out.continued.push(inc.store);
            }
        }
        let others: Vec<(&Totals, bool)> = kept
            .iter()
            .filter(|inc| inc.store != newest.store)
            .map(|inc| (&found[inc.store].reading.totals, !inc.live))
            .collect();
        let mut reading = found[newest.store].reading.clone();
        if !others.is_empty() {
            reading.totals = merge(&reading.totals, &others);
        }
        out.published.push(reading);
    }
    out.copies.sort_unstable();
    out.reap.sort_unstable();
    out.continued.sort_unstable();
    out.over_limit.sort_unstable();
    out.published.sort_by(|a, b| {
        let key = |s: &StoreReading| {
            let rank = s
                .local_rank
                .as_deref()
                .map(|r| (r.parse::<u64>().unwrap_or(u64::MAX), r.to_owned()));
            (
                rank,
                s.pid,
                s.agent_instance,
                s.agent_name.clone(),
                s.hostname.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    out
}

/// The incarnations among `members` (one label set): stores with the same
/// creation time are one, a live store standing for it, else the one
/// published last (update time, then publish sequence, then the first
/// listed); the others are copies, returned second. Two live stores are
/// always two incarnations (a copy is never live).
fn incarnations(found: &[Found], members: &[usize], now_ms: u64) -> (Vec<Incarnation>, Vec<usize>) {
    let mut copies = Vec::new();
    let mut by_creation: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for &i in members {
        by_creation
            .entry(found[i].reading.created_ms)
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for stores in by_creation.values() {
        let live: Vec<usize> = stores.iter().copied().filter(|&i| found[i].live).collect();
        let standing: Vec<usize> = if live.is_empty() {
            let published_last = stores.iter().copied().max_by_key(|&i| {
                let r = &found[i].reading;
                (r.updated_ms, r.seq, std::cmp::Reverse(i))
            });
            published_last.into_iter().collect()
        } else {
            live
        };
        copies.extend(stores.iter().copied().filter(|i| !standing.contains(i)));
        out.extend(standing.into_iter().map(|i| {
            let r = &found[i].reading;
            let live = found[i].live;
            Incarnation {
                store: i,
                live,
                created_ms: r.created_ms,
                updated_ms: r.updated_ms,
                last_seen_ms: if live { now_ms } else { r.updated_ms },
            }
        }));
    }
    (out, copies)
}

/// Which incarnations are kept: the live, the fresh, and those a kept one
/// continues (at most [`MAX_CONTINUED`] of these, the most recently seen).
///
/// One pass from the most recently seen: whatever can continue an
/// incarnation was seen no earlier than its last update, so it comes
/// before it, and the earliest creation among the kept ones so far tells
/// whether one of them started within its TTL.
fn kept(
    incarnations: &[Incarnation],
    ttl_ms: u64,
    stale: &impl Fn(u64) -> bool,
    out: &mut Selection,
) -> Vec<bool> {
    let mut order: Vec<usize> = (0..incarnations.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(incarnations[i].last_seen_ms));
    let mut keep = vec![false; incarnations.len()];
    let mut earliest_kept = u64::MAX;
    let mut continued = 0;
    for i in order {
        let inc = &incarnations[i];
        keep[i] = if inc.live || !stale(inc.updated_ms) {
            true
        } else if earliest_kept <= inc.updated_ms.saturating_add(ttl_ms) {
            continued += 1;
            if continued > MAX_CONTINUED {
                out.over_limit.push(inc.store);
            }
            continued <= MAX_CONTINUED
        } else {
            false
        };
        if keep[i] {
            earliest_kept = earliest_kept.min(inc.created_ms);
        }
    }
    keep
}

/// `newest`'s totals with the counters of `others` added (each with whether
/// it ended); gauges and bounds stay `newest`'s.
fn merge(newest: &Totals, others: &[(&Totals, bool)]) -> Totals {
    let counter_slots = SCALARS.iter().filter_map(|s| match (s.kind, s.source) {
        (Kind::Counter, Source::Slot(slot)) => Some(slot),
        _ => None,
    });
    let counter_slots: Vec<usize> = counter_slots.collect();
    let mut fixed = *newest.fixed_readings();
    for (totals, ended) in others {
        let mut add = *totals.fixed_readings();
        if *ended {
            // Its process took its registrations along: whatever was still
            // registered counts as deregistered (and the reverse).
            let settled = add[slot::MEM_REGISTERED].max(add[slot::MEM_DEREGISTERED]);
            add[slot::MEM_REGISTERED] = settled;
            add[slot::MEM_DEREGISTERED] = settled;
        }
        for &s in &counter_slots {
            fixed[s] = fixed[s].saturating_add(add[s]);
        }
    }
    let histograms = [0, 1].map(|h| {
        let target = newest.histogram(h);
        let mut counts = target.counts().to_vec();
        for (totals, _) in others {
            add_rebucketed(&mut counts, target.bounds(), totals.histogram(h));
        }
        HistogramTotals::from_counts(
            Arc::clone(target.shared_bounds()),
            counts,
            fixed[HISTOGRAMS[h].sum_slot],
        )
    });
    const _: () = assert!(histogram::COUNT == 2);
    let mut series: Vec<Series> = newest.series_list().to_vec();
    let mut values = newest.series_values().to_vec();
    let mut index: HashMap<Series, usize> = series
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, s)| (s, i))
        .collect();
    for (totals, _) in others {
        for (s, v) in totals.series() {
            match index.get(s) {
                Some(&i) => values[i] = values[i].saturating_add(v),
                None => {
                    index.insert(s.clone(), series.len());
                    series.push(s.clone());
                    values.push(v);
                }
            }
        }
    }
    Totals::from_parts(fixed, histograms, series.into(), values, 0)
}

/// Adds `from`'s per-bucket counts to `counts` (over `bounds`): each of its
/// buckets into the first bucket whose bound is at least its own (`+Inf`
/// last), which is exact when the bounds are the same.
fn add_rebucketed(counts: &mut [u64], bounds: &[f64], from: &HistogramTotals) {
    for (b, &count) in from.counts().iter().enumerate() {
        let target = match from.bounds().get(b) {
            Some(&upper) => bounds.partition_point(|&t| t < upper),
            None => bounds.len(),
        };
        counts[target] = counts[target].saturating_add(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nixl_telemetry_abi::{Category, Event};
    use nixl_telemetry_metrics::{AgentMetrics, Buckets, SeriesNaming};

    const TTL: u64 = 30_000;
    const NOW: u64 = 1_000_000;

    /// A store of rank-0, pid 1, created at `created`, last updated at
    /// `updated`, holding `events`.
    fn store(created: u64, updated: u64, live: bool, bounds: &[f64], events: &[Event]) -> Found {
        let buckets = Buckets::new(bounds).unwrap();
        let mut metrics = AgentMetrics::new("rank-0", buckets, SeriesNaming::Prometheus);
        metrics.record(events);
        Found {
            reading: StoreReading {
                listen: "127.0.0.1:9".to_owned(),
                hostname: "h".to_owned(),
                agent_name: "rank-0".to_owned(),
                created_ms: created,
                updated_ms: updated,
                seq: 2,
                pid: 1,
                agent_instance: 0,
                local_rank: Some("0".to_owned()),
                totals: metrics.totals().clone(),
            },
            live,
        }
    }

    fn tx(bytes: u64, us: u64) -> [Event; 3] {
        [
            Event::new(1, Category::TRANSFER, "agent_tx_bytes", bytes),
            Event::new(1, Category::TRANSFER, "agent_tx_requests_num", 1),
            Event::new(1, Category::PERFORMANCE, "agent_xfer_time", us),
        ]
    }

    fn memory(registered: u64, deregistered: u64) -> [Event; 2] {
        [
            Event::new(1, Category::MEMORY, "agent_memory_registered", registered),
            Event::new(
                1,
                Category::MEMORY,
                "agent_memory_deregistered",
                deregistered,
            ),
        ]
    }

    const BOUNDS: &[f64] = &[10.0, 100.0];

    #[test]
    fn a_restarted_rank_goes_on_from_its_predecessor() {
        let mut first = tx(4096, 50).to_vec();
        first.extend(memory(1000, 200));
        first.push(Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1));
        first.push(Event::new(1, Category::BACKEND, "ucx.rndv", 5));
        let mut second = tx(8192, 5).to_vec();
        second.extend(tx(4096, 500));
        second.extend(memory(300, 0));
        second.push(Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1));
        second.push(Event::new(1, Category::CUSTOM, "mine", 2));
        // The predecessor ended 10 s before its successor started, long
        // before now: past its TTL, still continued.
        let found = [
            store(100_000, 200_000, false, BOUNDS, &first),
            store(210_000, NOW - 500, true, BOUNDS, &second),
        ];
        let s = select(&found, NOW, TTL);
        assert_eq!(s.published.len(), 1);
        assert_eq!(
            (s.continued.as_slice(), s.reap.as_slice()),
            (&[0][..], &[][..])
        );
        let t = &s.published[0].totals;
        assert_eq!(s.published[0].created_ms, 210_000, "the live one's labels");
        assert_eq!(t.fixed(slot::TX_BYTES), 4096 + 12288);
        assert_eq!(t.fixed(slot::TX_REQUESTS), 3);
        assert_eq!(t.fixed(slot::TX_LAST), 4096, "gauges are the live rank's");
        assert_eq!(t.fixed(slot::XFER_TIME), 555);
        assert_eq!(t.histogram(0).counts(), [1, 1, 1]);
        assert_eq!(t.histogram(0).count(), 3);
        // The predecessor's 800 bytes still registered went with it.
        assert_eq!(t.registered_now(), 300);
        assert_eq!(t.fixed(slot::MEM_REGISTERED), 1300);
        assert_eq!(t.fixed(slot::MEM_DEREGISTERED), 1000);
        assert_eq!(t.error_count("backend"), Some(2));
        let named: Vec<(&str, u64)> = t
            .series()
            .filter(|(s, _)| matches!(s, Series::Counter { .. }))
            .map(|(s, v)| (s.name(), v))
            .collect();
        assert_eq!(named, [("mine_total", 2), ("ucx_rndv_total", 5)]);
    }

    #[test]
    fn a_copy_is_not_published_and_goes_once_stale() {
        let original = store(100_000, NOW - 100, true, BOUNDS, &tx(12288, 5));
        let mut copy = store(100_000, NOW - 40_000, false, BOUNDS, &tx(4096, 5));
        copy.reading.seq = 8;
        let found = [copy.clone(), original.clone()];
        let s = select(&found, NOW, TTL);
        assert_eq!(s.published.len(), 1);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 12288);
        assert_eq!(
            (s.copies.as_slice(), s.reap.as_slice()),
            (&[0][..], &[0][..])
        );
        // A fresh copy stays until its own TTL, unpublished.
        let mut fresh = copy.clone();
        fresh.reading.updated_ms = NOW - 10;
        let s = select(&[fresh, original.clone()], NOW, TTL);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 12288);
        assert_eq!(
            (s.copies.as_slice(), s.reap.as_slice()),
            (&[0][..], &[][..])
        );
        // Of two released copies of one incarnation, the one published last
        // stands for it: the later update, then the later publish.
        let mut ended = original;
        ended.live = false;
        ended.reading.updated_ms = NOW - 1000;
        let mut older = copy;
        older.reading.updated_ms = NOW - 1000;
        older.reading.seq = 1;
        let s = select(&[older.clone(), ended.clone()], NOW, TTL);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 12288);
        assert_eq!(s.copies, [0]);
        older.reading.seq = 9;
        let s = select(&[older, ended], NOW, TTL);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 4096);
        assert_eq!(s.copies, [1]);
    }

    #[test]
    fn a_store_left_from_long_ago_is_not_continued() {
        let old = store(1_000, 2_000, false, BOUNDS, &tx(4096, 5));
        let live = store(900_000, NOW, true, BOUNDS, &tx(100, 5));
        let s = select(&[old, live], NOW, TTL);
        assert_eq!(s.published.len(), 1);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 100);
        assert_eq!(s.reap, [0]);
        assert!(s.continued.is_empty());
    }

    #[test]
    fn a_chain_of_restarts_is_kept_while_its_last_one_lives_then_goes_together() {
        let chain = |last_live: bool, last_updated: u64| {
            [
                store(100_000, 150_000, false, BOUNDS, &tx(1, 5)),
                store(160_000, 300_000, false, BOUNDS, &tx(10, 5)),
                store(320_000, last_updated, last_live, BOUNDS, &tx(100, 5)),
            ]
        };
        let s = select(&chain(true, 400_000), NOW, TTL);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 111);
        assert_eq!(s.continued, [0, 1]);
        assert!(s.reap.is_empty());
        // The last one ended, but within the TTL: all stay.
        let s = select(&chain(false, NOW - TTL), NOW, TTL);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 111);
        assert!(s.reap.is_empty());
        // Its TTL ran out too: all go, and nothing is published.
        let s = select(&chain(false, NOW - TTL - 1), NOW, TTL);
        assert!(s.published.is_empty());
        assert_eq!(s.reap, [0, 1, 2]);
    }

    #[test]
    fn two_live_stores_of_one_label_set_are_summed_and_reported() {
        let a = store(100_000, NOW, true, BOUNDS, &tx(1000, 5));
        let b = store(100_000, NOW, true, BOUNDS, &tx(2000, 5));
        let s = select(&[a, b], NOW, TTL);
        assert_eq!(s.published.len(), 1);
        assert_eq!(s.published[0].totals.fixed(slot::TX_BYTES), 3000);
        assert_eq!(s.live_twins.len(), 1);
        assert!(s.copies.is_empty() && s.continued.is_empty());
    }

    #[test]
    fn other_bounds_count_in_the_first_bucket_that_holds_them() {
        // Predecessor: bounds 5, 50, 500; one value in each bucket and +Inf.
        let mut events = Vec::new();
        for us in [1, 20, 200, 5000] {
            events.extend(tx(1, us));
        }
        let old = store(100_000, 200_000, false, &[5.0, 50.0, 500.0], &events);
        let live = store(210_000, NOW, true, &[10.0, 100.0], &[]);
        let s = select(&[old, live], NOW, TTL);
        let h = s.published[0].totals.histogram(0).clone();
        assert_eq!(h.bounds(), [10.0, 100.0]);
        // ≤5 → ≤10; (5,50] → ≤100; (50,500] and +Inf → +Inf.
        assert_eq!(h.counts(), [1, 1, 2]);
        assert_eq!(h.count(), 4);
        assert_eq!(h.sum(), 5221);
    }

    #[test]
    fn distinct_label_sets_stay_apart_in_rank_order() {
        let mut a = store(100_000, NOW, true, BOUNDS, &tx(1, 5));
        a.reading.local_rank = Some("10".to_owned());
        let mut b = store(100_000, NOW, true, BOUNDS, &tx(2, 5));
        b.reading.local_rank = Some("2".to_owned());
        let mut c = store(100_000, NOW, true, BOUNDS, &tx(3, 5));
        c.reading.agent_name = "other".to_owned();
        c.reading.local_rank = Some("2".to_owned());
        let s = select(&[a, b, c], NOW, TTL);
        let order: Vec<(Option<&str>, &str)> = s
            .published
            .iter()
            .map(|r| (r.local_rank.as_deref(), r.agent_name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (Some("2"), "other"),
                (Some("2"), "rank-0"),
                (Some("10"), "rank-0")
            ]
        );
        assert!(s.live_twins.is_empty() && s.reap.is_empty());
    }

    #[test]
    fn restarts_beyond_the_limit_let_the_oldest_go() {
        let released = MAX_CONTINUED as u64 + 2;
        let mut found: Vec<Found> = (0..released)
            .map(|i| {
                store(
                    100_000 + 1000 * i,
                    100_500 + 1000 * i,
                    false,
                    BOUNDS,
                    &tx(1, 5),
                )
            })
            .collect();
        found.push(store(
            100_000 + 1000 * released,
            NOW,
            true,
            BOUNDS,
            &tx(1, 5),
        ));
        let s = select(&found, NOW, TTL);
        assert_eq!(s.over_limit, [0, 1]);
        assert_eq!(s.reap, [0, 1]);
        assert_eq!(s.continued.len(), MAX_CONTINUED);
        assert_eq!(
            s.published[0].totals.fixed(slot::TX_BYTES),
            MAX_CONTINUED as u64 + 1
        );
    }
}
