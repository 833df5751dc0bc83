//! The cheap wall clock of the hot path: microseconds since the Unix epoch.
//!
//! On x86-64 with an invariant time-stamp counter, [`now_us`] reads the TSC and
//! converts it with a calibration (`base_us + (tsc − base_tsc) · scale`) kept in
//! a seqlock: a handful of plain loads and one multiply, no system call. The
//! calibration is measured once per process (about 2 ms, off the hot path) and
//! refreshed by the flush threads through [`recalibrate`], which re-anchors it to
//! the system wall clock and refines the TSC frequency over an ever longer
//! baseline. Elsewhere [`now_us`] falls back to the system clock.

use std::cell::RefCell;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Fixed-point shift of the scale (µs per tick · 2^SCALE_SHIFT).
const SCALE_SHIFT: u32 = 40;
/// How long the first calibration measures.
const INITIAL_CALIBRATION: Duration = Duration::from_millis(2);
/// Re-anchor at most this often.
const RECALIBRATE_EVERY: Duration = Duration::from_millis(500);

/// The system wall clock in µs since the Unix epoch (0 before 1970).
pub fn system_now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

struct Calibration {
    seq: AtomicU64,
    base_tsc: AtomicU64,
    base_us: AtomicU64,
    scale: AtomicU64,
}

static CAL: Calibration = Calibration {
    seq: AtomicU64::new(0),
    base_tsc: AtomicU64::new(0),
    base_us: AtomicU64::new(0),
    scale: AtomicU64::new(0),
};
static USE_TSC: AtomicBool = AtomicBool::new(false);

/// The long baseline used to refine the frequency: (tsc, instant) at init.
struct Anchor {
    tsc0: u64,
    mono0: Instant,
    last: Instant,
}
static ANCHOR: OnceLock<Mutex<Anchor>> = OnceLock::new();

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU and has no memory effects.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    0
}

#[cfg(target_arch = "x86_64")]
fn tsc_is_invariant() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 reports the
    // highest extended leaf, which we check before asking for 0x8000_0007.
    #[allow(unused_unsafe)]
    let (max_ext, edx) = unsafe {
        let max_ext = __cpuid(0x8000_0000).eax;
        let edx = if max_ext >= 0x8000_0007 {
            __cpuid(0x8000_0007).edx
        } else {
            0
        };
        (max_ext, edx)
    };
    max_ext >= 0x8000_0007 && edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_is_invariant() -> bool {
    false
}

/// One (tsc, wall µs) pair taken as close together as the machine allows.
fn paired_reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0u64, 0u64);
    for _ in 0..5 {
        let t0 = read_tsc();
        let us = system_now_us();
        let t1 = read_tsc();
        let width = t1.wrapping_sub(t0);
        if width < best.0 {
            best = (width, t0 + width / 2, us);
        }
    }
    (best.1, best.2)
}

fn publish(base_tsc: u64, base_us: u64, scale: u64) {
    let seq = CAL.seq.load(Ordering::Relaxed);
    CAL.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    CAL.base_tsc.store(base_tsc, Ordering::Relaxed);
    CAL.base_us.store(base_us, Ordering::Relaxed);
    CAL.scale.store(scale, Ordering::Relaxed);
    CAL.seq.store(seq.wrapping_add(2), Ordering::Release);
}

fn scale_for(ticks: u64, elapsed: Duration) -> Option<u64> {
    let us = elapsed.as_nanos() as f64 / 1e3;
    (ticks > 0 && us > 0.0).then(|| ((us / ticks as f64) * (1u64 << SCALE_SHIFT) as f64) as u64)
}

/// Calibrates the clock once per process; later calls return at once.
/// Called when a telemetry instance is created, before any record.
pub fn init() {
    ANCHOR.get_or_init(|| {
        let mono0 = Instant::now();
        let tsc0 = read_tsc();
        if tsc_is_invariant() {
            while mono0.elapsed() < INITIAL_CALIBRATION {
                std::hint::spin_loop();
            }
            let ticks = read_tsc().wrapping_sub(tsc0);
            if let Some(scale) = scale_for(ticks, mono0.elapsed()) {
                let (base_tsc, base_us) = paired_reading();
                publish(base_tsc, base_us, scale);
                USE_TSC.store(true, Ordering::Release);
            }
        }
        Mutex::new(Anchor {
            tsc0,
            mono0,
            last: Instant::now(),
        })
    });
}

/// Re-anchors the TSC clock to the system wall clock and refines its frequency
/// over the time since [`init`]. Cheap to call often: it acts at most every
/// 500 ms. Called by flush threads, never by recording threads.
pub fn recalibrate() {
    if !USE_TSC.load(Ordering::Acquire) {
        return;
    }
    let Some(anchor) = ANCHOR.get() else { return };
    let Ok(mut anchor) = anchor.try_lock() else {
        return;
    };
    if anchor.last.elapsed() < RECALIBRATE_EVERY {
        return;
    }
    anchor.last = Instant::now();
    let ticks = read_tsc().wrapping_sub(anchor.tsc0);
    if let Some(scale) = scale_for(ticks, anchor.mono0.elapsed()) {
        let (base_tsc, base_us) = paired_reading();
        publish(base_tsc, base_us, scale);
    }
}

thread_local! {
    /// The calibration lock, held by the thread calling `fork()` from just
    /// before the fork until just after it (in the parent and in the child).
    static HELD_ACROSS_FORK: RefCell<Option<MutexGuard<'static, Anchor>>> =
        const { RefCell::new(None) };
}

/// Just before `fork()` (the prepare handler of [`crate::fork`]): waits for a
/// first calibration or a re-anchoring in progress on another thread and
/// holds the calibration lock, so the child never sees the seqlock half
/// written (where [`now_us`] would wait forever) or the lock held by a
/// thread it does not have.
pub(crate) fn before_fork() {
    init();
    if let Some(anchor) = ANCHOR.get() {
        let guard = anchor.lock().unwrap_or_else(PoisonError::into_inner);
        // Fails only while this thread exits: then the guard is released here.
        let _ = HELD_ACROSS_FORK.try_with(|held| *held.borrow_mut() = Some(guard));
    }
}

/// Just after `fork()`, in the parent and in the child: releases what
/// [`before_fork`] holds.
pub(crate) fn after_fork() {
    let _ = HELD_ACROSS_FORK.try_with(|held| held.borrow_mut().take());
}

/// Whether [`now_us`] reads the TSC (otherwise the system clock).
pub fn uses_tsc() -> bool {
    USE_TSC.load(Ordering::Relaxed)
}

/// Microseconds since the Unix epoch, cheaply. Requires [`init`] for the fast
/// path; before it, or without an invariant TSC, reads the system clock.
#[inline(always)]
pub fn now_us() -> u64 {
    if USE_TSC.load(Ordering::Relaxed) {
        let tsc = read_tsc();
        TscToUs::current().us(tsc)
    } else {
        system_now_us()
    }
}

/// An event's timestamp as cheaply as the machine gives it: raw TSC ticks
/// where [`uses_tsc`], for whoever drains the event to convert with
/// [`TscToUs`] (the recording thread pays for the RDTSC only, the conversion
/// happens off the hot path), else µs from the system clock. Which of the two
/// is fixed for the process from [`init`] on; a recording thread reads the
/// clock only through telemetry created after it.
#[inline(always)]
pub(crate) fn stamp() -> u64 {
    if USE_TSC.load(Ordering::Relaxed) {
        read_tsc()
    } else {
        system_now_us_out_of_line()
    }
}

/// [`system_now_us`] as one call kept out of the record path's code.
#[cold]
#[inline(never)]
fn system_now_us_out_of_line() -> u64 {
    system_now_us()
}

/// The calibration in force, read once: converts TSC ticks to µs since the
/// epoch, for ticks taken before its anchor as well as after (an event read
/// at record time and converted at flush time may predate a re-anchoring).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TscToUs {
    base_tsc: u64,
    base_us: u64,
    scale: u64,
}

impl TscToUs {
    /// The current calibration (a consistent snapshot of the seqlock). If
    /// the re-anchoring thread was preempted in the middle of its three
    /// stores, the reader yields its CPU after a short spin rather than spin
    /// for the rest of its time slice.
    #[inline(always)]
    pub(crate) fn current() -> TscToUs {
        let mut attempts = 0u32;
        loop {
            let s1 = CAL.seq.load(Ordering::Acquire);
            let base_tsc = CAL.base_tsc.load(Ordering::Relaxed);
            let base_us = CAL.base_us.load(Ordering::Relaxed);
            let scale = CAL.scale.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if s1 & 1 == 0 && CAL.seq.load(Ordering::Relaxed) == s1 {
                return TscToUs {
                    base_tsc,
                    base_us,
                    scale,
                };
            }
            if attempts < 64 {
                attempts += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// `tsc` in µs since the epoch.
    #[inline(always)]
    pub(crate) fn us(&self, tsc: u64) -> u64 {
        let delta = tsc.wrapping_sub(self.base_tsc) as i64 as i128;
        let us = (delta * self.scale as i128) >> SCALE_SHIFT;
        (self.base_us as i128 + us) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_the_system_clock() {
        init();
        for _ in 0..20 {
            let a = system_now_us();
            let ours = now_us();
            let b = system_now_us();
            // Within 2 ms of the system clock (generous for a loaded CI machine).
            assert!(ours + 2_000 >= a && ours <= b + 2_000, "{a} {ours} {b}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_stamp_converted_later_is_the_time_it_was_taken() {
        init();
        let before = now_us();
        let value = stamp();
        let after = now_us();
        std::thread::sleep(Duration::from_millis(3));
        let us = if uses_tsc() {
            TscToUs::current().us(value)
        } else {
            value
        };
        assert!(before <= us && us <= after, "{before} {us} {after}");
    }

    #[test]
    fn ticks_before_the_anchor_convert_to_earlier_times() {
        let cal = TscToUs {
            base_tsc: 1_000_000,
            base_us: 5_000_000,
            // 1 µs per 1024 ticks, exactly.
            scale: 1u64 << (SCALE_SHIFT - 10),
        };
        assert_eq!(cal.us(1_000_000), 5_000_000);
        assert_eq!(cal.us(1_000_000 + 2_000 * 1024), 5_002_000);
        assert_eq!(cal.us(1_000_000 - 10 * 1024), 4_999_990);
    }

    #[test]
    fn advances() {
        init();
        let a = now_us();
        std::thread::sleep(Duration::from_millis(5));
        let b = now_us();
        assert!(b >= a + 4_000, "{a} {b}");
    }
}
