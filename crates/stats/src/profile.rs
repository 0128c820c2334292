//! Allocation profiling (the memory-patterns write-up's `AllocationProfiler` and
//! `ProfiledAllocator`): the latency of every allocate and every release, as two
//! [`Latency`] recordings.
//!
//! * [`AllocProfiler`] times closures, so it wraps any pool, arena or allocator
//!   call: `prof.alloc(|| pool.alloc(order))`, `prof.free(|| drop(obj))`. It records
//!   into hdrhistogram, one thread at a time (`&mut self`), and allocates only when a
//!   histogram grows to a new range.
//! * [`ProfiledAlloc`] wraps any [`GlobalAlloc`] and can itself be the
//!   `#[global_allocator]`: it must not allocate, so it counts into fixed atomic
//!   buckets (exact below 1024 ticks, 16 sub-buckets per power of two above) that
//!   every thread shares, and turns them into [`Latency`] recordings on demand.
//!
//! Both time with the TSC (ordered reads, `lfence; rdtsc` before and `rdtscp;
//! lfence` after), so each figure includes about one clock read's cost (see
//! `handoff_clock::Clock::read_cost`); subtract it, or report it beside.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use handoff_clock::{Clock, Source};

use crate::{Latency, Percentiles, Unit};

/// Times allocations and releases made by closures, for any pool or allocator.
///
/// ```
/// use handoff_clock::Clock;
/// use handoff_stats::profile::AllocProfiler;
///
/// let mut prof = AllocProfiler::new(Clock::quick());
/// for i in 0..1000u64 {
///     let b = prof.alloc(|| Box::new([i; 8]));
///     prof.free(|| drop(b));
/// }
/// let report = prof.report();
/// assert_eq!((report.alloc.count, report.free.count), (1000, 1000));
/// assert!(report.alloc.min <= report.alloc.p50 && report.alloc.p50 <= report.alloc.max);
/// ```
#[derive(Clone, Debug)]
pub struct AllocProfiler {
    clock: Clock,
    alloc: Latency,
    free: Latency,
}

/// Percentiles of both sides, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct AllocReport {
    /// Allocation latency.
    pub alloc: Percentiles,
    /// Release latency.
    pub free: Percentiles,
}

impl AllocProfiler {
    /// An empty profile timed by `clock`.
    ///
    /// ```
    /// let p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// assert_eq!(p.report().alloc.count, 0);
    /// ```
    pub fn new(clock: Clock) -> AllocProfiler {
        AllocProfiler {
            clock,
            alloc: Latency::with_unit(Unit::Ticks),
            free: Latency::with_unit(Unit::Ticks),
        }
    }

    /// Runs `f` (an allocation) and records how long it took.
    ///
    /// ```
    /// let mut p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// let v = p.alloc(|| vec![0u8; 64]);
    /// assert_eq!(v.len(), 64);
    /// ```
    #[inline]
    pub fn alloc<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let t0 = self.clock.start();
        let r = f();
        let t1 = self.clock.end();
        self.alloc.record(t1.saturating_sub(t0));
        r
    }

    /// Runs `f` (a release) and records how long it took.
    ///
    /// ```
    /// let mut p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// let v = vec![0u8; 64];
    /// p.free(|| drop(v));
    /// assert_eq!(p.report().free.count, 1);
    /// ```
    #[inline]
    pub fn free<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let t0 = self.clock.start();
        let r = f();
        let t1 = self.clock.end();
        self.free.record(t1.saturating_sub(t0));
        r
    }

    /// Allocation latency, converted to nanoseconds.
    ///
    /// ```
    /// let mut p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// drop(p.alloc(|| Box::new(1)));
    /// assert_eq!(p.alloc_latency().count(), 1);
    /// ```
    pub fn alloc_latency(&self) -> Latency {
        self.alloc.to_ns(&self.clock)
    }

    /// Release latency, converted to nanoseconds.
    ///
    /// ```
    /// let mut p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// p.free(|| ());
    /// assert_eq!(p.free_latency().unit(), handoff_stats::Unit::Ns);
    /// ```
    pub fn free_latency(&self) -> Latency {
        self.free.to_ns(&self.clock)
    }

    /// The document's table: min, p50, p90, p99, p99.9, max of both sides, in ns.
    ///
    /// ```
    /// let p = handoff_stats::profile::AllocProfiler::new(handoff_clock::Clock::quick());
    /// assert_eq!(p.report().free.count, 0);
    /// ```
    pub fn report(&self) -> AllocReport {
        AllocReport {
            alloc: self.alloc_latency().percentiles(),
            free: self.free_latency().percentiles(),
        }
    }
}

/// Exact buckets below this many ticks.
const LINEAR: usize = 1024;
/// Sub-buckets per power of two above `LINEAR`.
const SUB: usize = 16;
/// `LINEAR` exact buckets, then 16 for each power of two from 2^10 to 2^63.
const BUCKETS: usize = LINEAR + (64 - 10) * SUB;

/// A histogram of atomic counters: no allocation, safe from any thread.
struct AtomicBuckets {
    counts: [AtomicU64; BUCKETS],
    min: AtomicU64,
    max: AtomicU64,
}

impl AtomicBuckets {
    const fn new() -> Self {
        AtomicBuckets {
            counts: [const { AtomicU64::new(0) }; BUCKETS],
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    #[inline]
    fn index(v: u64) -> usize {
        if v < LINEAR as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize; // 10..=63
        let sub = (v >> (e - 4)) as usize & (SUB - 1);
        LINEAR + (e - 10) * SUB + sub
    }

    /// The value a bucket stands for: itself below `LINEAR`, else its midpoint.
    fn value_of(i: usize) -> u64 {
        if i < LINEAR {
            return i as u64;
        }
        let e = (i - LINEAR) / SUB + 10;
        let sub = ((i - LINEAR) % SUB) as u64;
        let width = 1u64 << (e - 4);
        ((SUB as u64 + sub) << (e - 4)) + width / 2
    }

    #[inline]
    fn record(&self, v: u64) {
        self.counts[Self::index(v)].fetch_add(1, Ordering::Relaxed);
        if v < self.min.load(Ordering::Relaxed) {
            self.min.fetch_min(v, Ordering::Relaxed);
        }
        if v > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(v, Ordering::Relaxed);
        }
    }

    fn snapshot(&self, unit: Unit) -> Latency {
        let mut out = Latency::with_unit(unit);
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
                out.record_n(Self::value_of(i), n);
            }
        }
        if out.count() > 0 {
            // The buckets' stand-ins, corrected to the exact extremes.
            out.min = self.min.load(Ordering::Relaxed).min(out.max);
            out.max = self.max.load(Ordering::Relaxed).max(out.min);
        }
        out
    }

    fn clear(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.min.store(u64::MAX, Ordering::Relaxed);
        self.max.store(0, Ordering::Relaxed);
    }
}

/// Wraps a [`GlobalAlloc`] and records the latency of every allocation
/// (`alloc`, `alloc_zeroed`, `realloc`) and every release (`dealloc`).
///
/// It allocates nothing itself, so it can be the program's allocator:
///
/// ```
/// use std::alloc::System;
/// use handoff_stats::profile::ProfiledAlloc;
///
/// #[global_allocator]
/// static ALLOC: ProfiledAlloc<System> = ProfiledAlloc::new(System);
///
/// let v: Vec<Box<u64>> = (0..1000).map(Box::new).collect();
/// drop(v);
/// let clock = handoff_clock::Clock::quick();
/// let report = ALLOC.report(&clock);
/// assert!(report.alloc.count >= 1001 && report.free.count >= 1001);
/// ```
///
/// The counters are shared by every thread (one relaxed `fetch_add` per call, on
/// cache lines that threads then share): a profiling build, not a production one.
/// Latencies are TSC ticks on x86_64, converted with a TSC [`Clock`] by
/// [`report`](Self::report) (and nanoseconds of the monotonic clock elsewhere).
pub struct ProfiledAlloc<A> {
    inner: A,
    enabled: AtomicBool,
    alloc: AtomicBuckets,
    free: AtomicBuckets,
}

impl<A> ProfiledAlloc<A> {
    /// Wraps `inner`, recording from the first call.
    pub const fn new(inner: A) -> ProfiledAlloc<A> {
        ProfiledAlloc {
            inner,
            enabled: AtomicBool::new(true),
            alloc: AtomicBuckets::new(),
            free: AtomicBuckets::new(),
        }
    }

    /// Starts or stops recording (the calls go on either way).
    ///
    /// ```
    /// use handoff_stats::profile::ProfiledAlloc;
    /// let a = ProfiledAlloc::new(std::alloc::System);
    /// a.set_enabled(false);
    /// ```
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Forgets everything recorded so far.
    ///
    /// ```
    /// use handoff_stats::profile::ProfiledAlloc;
    /// let a = ProfiledAlloc::new(std::alloc::System);
    /// a.clear();
    /// assert_eq!(a.alloc_latency().count(), 0);
    /// ```
    pub fn clear(&self) {
        self.alloc.clear();
        self.free.clear();
    }

    /// The allocation latencies so far, in ticks (see the type's docs).
    ///
    /// ```
    /// let a = handoff_stats::profile::ProfiledAlloc::new(std::alloc::System);
    /// assert_eq!(a.alloc_latency().count(), 0);
    /// ```
    pub fn alloc_latency(&self) -> Latency {
        self.alloc.snapshot(TICK_UNIT)
    }

    /// The release latencies so far, in ticks (see the type's docs).
    ///
    /// ```
    /// let a = handoff_stats::profile::ProfiledAlloc::new(std::alloc::System);
    /// assert_eq!(a.free_latency().count(), 0);
    /// ```
    pub fn free_latency(&self) -> Latency {
        self.free.snapshot(TICK_UNIT)
    }

    /// Both sides' percentiles in nanoseconds, converted with `clock`. On x86_64 the
    /// ticks are the TSC's: with a clock that is not TSC-based (a machine without
    /// an invariant TSC) they are left in ticks, since no conversion would be right.
    ///
    /// ```
    /// let a = handoff_stats::profile::ProfiledAlloc::new(std::alloc::System);
    /// assert_eq!(a.report(&handoff_clock::Clock::quick()).alloc.count, 0);
    /// ```
    pub fn report(&self, clock: &Clock) -> AllocReport {
        let convert = |l: Latency| {
            if cfg!(target_arch = "x86_64") && clock.source() == Source::Tsc {
                l.to_ns(clock)
            } else {
                l
            }
        };
        AllocReport {
            alloc: convert(self.alloc_latency()).percentiles(),
            free: convert(self.free_latency()).percentiles(),
        }
    }

    #[inline(always)]
    fn on(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }
}

#[cfg(target_arch = "x86_64")]
const TICK_UNIT: Unit = Unit::Ticks;
#[cfg(not(target_arch = "x86_64"))]
const TICK_UNIT: Unit = Unit::Ns;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn t_start() -> u64 {
    handoff_clock::tsc::start()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn t_end() -> u64 {
    handoff_clock::tsc::end()
}

#[cfg(not(target_arch = "x86_64"))]
fn t_start() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(not(target_arch = "x86_64"))]
fn t_end() -> u64 {
    t_start()
}

// SAFETY: every call is passed to `inner` with the caller's arguments unchanged, and
// its result returned unchanged; the timing around it touches only atomics and
// allocates nothing.
unsafe impl<A: GlobalAlloc> GlobalAlloc for ProfiledAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let t0 = t_start();
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.alloc(layout) };
        let t1 = t_end();
        if self.on() {
            self.alloc.record(t1.saturating_sub(t0));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let t0 = t_start();
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        let t1 = t_end();
        if self.on() {
            self.alloc.record(t1.saturating_sub(t0));
        }
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let t0 = t_start();
        // SAFETY: the caller's contract, passed on (`ptr` came from `inner`, since
        // every block of this allocator did).
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        let t1 = t_end();
        if self.on() {
            self.alloc.record(t1.saturating_sub(t0));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let t0 = t_start();
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) };
        let t1 = t_end();
        if self.on() {
            self.free.record(t1.saturating_sub(t0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_index_and_value_agree() {
        for v in (0..5000u64).chain([1 << 20, (1 << 20) + 12345, u64::MAX / 3, u64::MAX]) {
            let i = AtomicBuckets::index(v);
            assert!(i < BUCKETS, "{v}");
            let mid = AtomicBuckets::value_of(i);
            if v < LINEAR as u64 {
                assert_eq!(mid, v);
            } else {
                // Within one sub-bucket: 1/16 of the power of two, so < 6.25%.
                let err = mid.abs_diff(v) as f64 / v as f64;
                assert!(err <= 1.0 / 16.0, "{v}: {mid}");
                assert_eq!(AtomicBuckets::index(mid), i, "{v}");
            }
        }
        // Monotone.
        let mut last = 0;
        for v in (0..64).map(|e| 1u64 << e).chain([u64::MAX]) {
            let i = AtomicBuckets::index(v);
            assert!(i >= last);
            last = i;
        }
    }

    #[test]
    fn snapshots_count_everything_with_exact_extremes() {
        let b = AtomicBuckets::new();
        for v in [3u64, 3, 900, 1500, 70_000, 123_456_789] {
            b.record(v);
        }
        let l = b.snapshot(Unit::Ticks);
        assert_eq!(l.count(), 6);
        assert_eq!((l.min(), l.max()), (3, 123_456_789));
        assert_eq!(l.value_at_quantile(0.3), 3);
        b.clear();
        assert_eq!(b.snapshot(Unit::Ticks).count(), 0);
    }

    #[test]
    fn the_wrapper_passes_every_call_through_and_counts_it() {
        let a = ProfiledAlloc::new(std::alloc::System);
        let layout = Layout::from_size_align(64, 16).unwrap();
        // SAFETY: a non-zero layout; each block is freed once with its layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null() && (p as usize).is_multiple_of(16));
            p.write_bytes(7, 64);
            let p = a.realloc(p, layout, 128);
            assert_eq!(*p.add(63), 7);
            a.dealloc(p, Layout::from_size_align(128, 16).unwrap());
            let z = a.alloc_zeroed(layout);
            assert_eq!(*z.add(10), 0);
            a.set_enabled(false);
            a.dealloc(z, layout);
        }
        assert_eq!(a.alloc_latency().count(), 3);
        assert_eq!(
            a.free_latency().count(),
            1,
            "the second free was not recorded"
        );
    }
}
