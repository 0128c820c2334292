//! The allocator contenders' work, run in a child runner whose process allocator is
//! the contender (`lab::child`), so the resident memory it reports is that
//! allocator's. Every loop calls the contender directly as a `GlobalAlloc` value.
//!
//! The workload is document 004's real-world-like test: sizes with probability ~ 1/size
//! (a uniform octave from 8 B to 4 KiB, then a uniform size within it), lifetimes with a
//! Pareto-like tail (a slot is picked for replacement with probability ~ 1/index, so
//! most blocks die young and a few live for the whole run), each block written once
//! (one word, in its middle, as the test the document cites does) and read once (that
//! word, checked) before its free. The same loop with no allocator behind it (`Void`,
//! the cited test's "void allocator") measures the test's own cost.

use crate::lab::error::{Error, Result};
use crate::lab::{harness, stop};
use handoff_clock::Timer;
use serde::{Deserialize, Serialize};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::time::Instant;

/// A contender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Contender {
    /// handoff-alloc.
    Handoff,
    /// glibc malloc.
    System,
    /// mimalloc (its crate).
    Mimalloc,
    /// jemalloc (tikv-jemallocator).
    Jemalloc,
    /// No allocator: the test's own cost (see `Void`).
    Void,
}

impl Contender {
    /// Every contender, in table order: the allocators, then the baseline.
    pub const ALL: [Contender; 5] = [
        Contender::Handoff,
        Contender::System,
        Contender::Mimalloc,
        Contender::Jemalloc,
        Contender::Void,
    ];

    /// The allocators.
    pub const ALLOCATORS: [Contender; 4] = [
        Contender::Handoff,
        Contender::System,
        Contender::Mimalloc,
        Contender::Jemalloc,
    ];

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Contender::Handoff => "handoff-alloc",
            Contender::System => "system",
            Contender::Mimalloc => "mimalloc",
            Contender::Jemalloc => "jemalloc",
            Contender::Void => "no allocator",
        }
    }

    /// The `HANDOFF_ALLOCATOR` value of its child process.
    fn env(self) -> &'static str {
        match self {
            Contender::Handoff => "handoff",
            Contender::System => "system",
            Contender::Mimalloc => "mimalloc",
            Contender::Jemalloc => "jemalloc",
            Contender::Void => "system",
        }
    }
}

/// What a child is asked to do.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// Whose allocator.
    pub contender: Contender,
    /// Requested bytes the main test keeps live (split among the threads).
    pub working_set: usize,
    /// Replacements of the main test (split among the threads).
    pub ops: usize,
    /// Threads of the main test.
    pub threads: usize,
    /// Cores, cycled.
    pub pins: Vec<usize>,
    /// Working sets of the sweep (empty: no sweep).
    pub sweep: Vec<usize>,
    /// Replacements per sweep point.
    pub sweep_ops: usize,
    /// Blocks of the producer/consumer run (0: none).
    pub handoff_items: usize,
    /// TSC ticks per second.
    pub timer: Timer,
}

/// What a child measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds of the main test, filling included.
    pub seconds: f64,
    /// ns per replacement (free + alloc) of the main test's steady part, per thread.
    pub ns_per_pair: f64,
    /// The largest requested bytes live at once.
    pub peak_requested: usize,
    /// Peak resident memory of the main test, less the child's resident memory before it.
    pub peak_resident: usize,
    /// (working set bytes, TSC ticks per pair) of the sweep.
    pub sweep: Vec<(usize, f64)>,
    /// Blocks per second of the producer/consumer run.
    pub handoff_per_s: Option<f64>,
}

/// The task name of the child runner.
pub const CHILD_TASK: &str = "alloc";

/// Runs `spec` in a child runner with the contender's allocator.
pub fn measure(spec: &Spec) -> Result<Sample> {
    let who = spec.contender.name();
    let input = serde_json::to_vec(spec).map_err(|e| Error::Run(e.to_string()))?;
    let out = crate::lab::child::run(who, CHILD_TASK, spec.contender.env(), &input)?;
    serde_json::from_slice(&out).map_err(|e| Error::Run(format!("{who}: the child's sample: {e}")))
}

/// The child's side.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let spec: Spec = serde_json::from_slice(input).map_err(|e| format!("bad spec: {e}"))?;
    let sample = match spec.contender {
        Contender::Handoff => real(&handoff_alloc::HandoffAlloc, &spec),
        Contender::System => real(&System, &spec),
        Contender::Mimalloc => real(&mimalloc::MiMalloc, &spec),
        Contender::Jemalloc => real(&tikv_jemallocator::Jemalloc, &spec),
        Contender::Void => run(Void::new, &spec),
    }
    .map_err(|e| e.to_string())?;
    serde_json::to_vec(&sample).map_err(|e| e.to_string())
}

/// A contender's test, sweep and producer/consumer run.
fn real<A: GlobalAlloc + Sync>(a: &A, spec: &Spec) -> Result<Sample> {
    let mut sample = run(|| Real(a), spec)?;
    if spec.handoff_items > 0 {
        sample.handoff_per_s = Some(cross(a, spec)?);
    }
    Ok(sample)
}

/// wyrand: a fast 64-bit generator, the same stream for every contender.
struct Rng(u64);

impl Rng {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    }
}

/// Smallest and largest octave of the sizes: 8 B .. 4 KiB.
const MIN_OCTAVE: u32 = 3;
const OCTAVES: u64 = 9;
/// Sizes are below this.
const MAX_SIZE: usize = 1 << (MIN_OCTAVE + OCTAVES as u32);

/// A size with probability ~ 1/size.
#[inline(always)]
fn size(r: u64) -> usize {
    let o = MIN_OCTAVE + (r % OCTAVES) as u32;
    let base = 1usize << o;
    base + ((r >> 8) as usize & (base - 1))
}

/// A slot in `0..2^levels` picked with probability ~ 1/index: a uniform level, then
/// a uniform slot below 2^level. The level comes from the low 32 bits scaled by
/// multiplication (no division), the slot from the high bits.
#[inline(always)]
fn slot(r: u64, levels: u32) -> usize {
    let l = ((r & 0xffff_ffff) * u64::from(levels + 1)) >> 32;
    ((r >> 32) & ((1u64 << l) - 1)) as usize
}

/// A live block and what was written into it: 16 bytes, as the document's test keeps
/// them, so the test's own table adds little cache traffic of its own.
#[derive(Clone, Copy)]
struct Live {
    p: *mut u8,
    size: u32,
    tag: u32,
}

impl Live {
    fn new(p: *mut u8, size: usize, tag: u64) -> Live {
        Live {
            p,
            size: size as u32,
            tag: tag as u32,
        }
    }

    fn size(&self) -> usize {
        self.size as usize
    }

    /// Where the block is written and read: the word in its middle.
    #[inline(always)]
    fn word(&self) -> *mut u64 {
        let off = (self.size() / 2) & !7;
        self.p.wrapping_add(off).cast()
    }

    /// The word written: the tag and the size.
    #[inline(always)]
    fn stamp(&self) -> u64 {
        u64::from(self.tag) << 32 | u64::from(self.size)
    }
}

/// Writes the block once: its stamp into the word in its middle.
#[inline(always)]
fn write_once(b: &Live) {
    // SAFETY: the block is live, `size >= 8` bytes long and 8-aligned, and its middle
    // word, rounded down to 8, ends inside it.
    unsafe { b.word().write(b.stamp()) };
}

/// Reads the block once: false if its word changed while it was live.
#[inline(always)]
fn read_once(b: &Live) -> bool {
    // SAFETY: as in `write_once`.
    unsafe { b.word().read() == b.stamp() }
}

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).expect("sizes are small")
}

/// Where the test gets its blocks: a contender, or the baseline that measures the test's
/// own cost. Each test thread has its own.
trait Blocks {
    /// Whether blocks are distinct, so that what was written into one must read back.
    const DISTINCT: bool;
    /// A block of `size` bytes, 8-aligned; null when out of memory.
    fn get(&mut self, size: usize) -> *mut u8;
    /// Gives back a block.
    ///
    /// # Safety
    /// `p` came from `get(size)` on this value and has not been given back since.
    unsafe fn put(&mut self, p: *mut u8, size: usize);
}

/// A contender, called directly as a `GlobalAlloc`.
struct Real<'a, A>(&'a A);

impl<A: GlobalAlloc> Blocks for Real<'_, A> {
    const DISTINCT: bool = true;
    #[inline(always)]
    fn get(&mut self, size: usize) -> *mut u8 {
        // SAFETY: a valid layout of non-zero size.
        unsafe { self.0.alloc(layout(size)) }
    }
    #[inline(always)]
    unsafe fn put(&mut self, p: *mut u8, size: usize) {
        // SAFETY: the caller's block, allocated by `get(size)` with this layout.
        unsafe { self.0.dealloc(p, layout(size)) }
    }
}

/// The test's own cost (the document's test calls it the void allocator): every block
/// is the same small buffer, always in cache, and a free does nothing. What a contender
/// takes beyond it is the allocator's: its code and the cache misses its placement of
/// blocks causes.
struct Void(Box<[u64]>);

impl Void {
    fn new() -> Void {
        Void(vec![0u64; MAX_SIZE / 8].into_boxed_slice())
    }
}

impl Blocks for Void {
    const DISTINCT: bool = false;
    #[inline(always)]
    fn get(&mut self, _size: usize) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    #[inline(always)]
    unsafe fn put(&mut self, _p: *mut u8, _size: usize) {}
}

/// A new block of `size` bytes with `tag` written into it.
#[inline(always)]
fn make<B: Blocks>(b: &mut B, size: usize, tag: u64) -> Result<Live> {
    let p = b.get(size);
    if p.is_null() {
        return Err(Error::Run("out of memory".into()));
    }
    let l = Live::new(p, size, tag);
    write_once(&l);
    Ok(l)
}

/// The test on one thread: fill `working_set` requested bytes, then `ops`
/// replacements. Returns (steady-part seconds, peak requested bytes).
fn one_thread<B: Blocks>(
    b: &mut B,
    working_set: usize,
    ops: usize,
    seed: u64,
) -> Result<(f64, usize)> {
    let mut rng = Rng(seed);
    let mut live: Vec<Live> = Vec::new();
    let mut requested = 0usize;
    let mut tag = 0u64;
    while requested < working_set {
        let s = size(rng.next());
        tag += 1;
        live.push(make(b, s, tag)?);
        requested += s;
    }
    let mut peak = requested;
    let levels = usize::BITS - 1 - live.len().leading_zeros();
    let start = Instant::now();
    let mut bad = 0usize;
    for _ in 0..ops {
        let i = slot(rng.next(), levels);
        let s = size(rng.next());
        let old = live[i];
        bad += usize::from(!read_once(&old));
        // SAFETY: from `get(old.size())` and not given back since.
        unsafe { b.put(old.p, old.size()) };
        tag += 1;
        live[i] = make(b, s, tag)?;
        requested = requested - old.size() + s;
        peak = peak.max(requested);
    }
    let secs = start.elapsed().as_secs_f64();
    for l in live.drain(..) {
        bad += usize::from(!read_once(&l));
        // SAFETY: as above.
        unsafe { b.put(l.p, l.size()) };
    }
    if B::DISTINCT && bad > 0 {
        return Err(Error::Run(format!(
            "{bad} blocks were overwritten while live"
        )));
    }
    Ok((secs, peak))
}

/// Peak and current resident memory of this process, in bytes (`VmHWM`, `VmRSS`).
fn resident() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// One main-test thread's (steady seconds, peak requested bytes), once it is done.
type Slot = Mutex<Option<Result<(f64, usize)>>>;

/// The main test and the sweep, each thread with its own `new()`.
fn run<B: Blocks, F: Fn() -> B + Sync>(new: F, spec: &Spec) -> Result<Sample> {
    let stop = stop::flag();
    let (_, before) = resident();
    let t = spec.threads.max(1);
    let results: Vec<Slot> = (0..t).map(|_| Mutex::new(None)).collect();
    let start = Instant::now();
    harness::together(spec.timer, stop, &spec.pins, t, |k| {
        let r = one_thread(
            &mut new(),
            spec.working_set / t,
            spec.ops / t,
            0x5eed + k as u64,
        );
        *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let (hwm, _) = resident();
    let mut steady = 0.0;
    let mut peak_requested = 0;
    for r in results {
        let (s, p) = r
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| Error::Run("a test thread returned nothing".into()))??;
        steady += s;
        peak_requested += p;
    }
    let ns_per_pair = steady * 1e9 / t as f64 / (spec.ops / t).max(1) as f64;
    let mut sweep = Vec::new();
    for &ws in &spec.sweep {
        let (s, _) = harness::on_core(spec.timer, stop, spec.pins[0], || {
            one_thread(&mut new(), ws, spec.sweep_ops, 0x5eed)
        })??;
        sweep.push((
            ws,
            spec.timer.ticks_for_seconds(s) / spec.sweep_ops.max(1) as f64,
        ));
    }
    Ok(Sample {
        seconds,
        ns_per_pair,
        peak_requested,
        peak_resident: hwm.saturating_sub(before),
        sweep,
        handoff_per_s: None,
    })
}

/// One thread allocates blocks of the test's sizes and writes them; another, through a
/// `handoff_spsc` ring, reads and frees them. Blocks per second.
fn cross<A: GlobalAlloc + Sync>(a: &A, spec: &Spec) -> Result<f64> {
    let n = spec.handoff_items;
    let (tx, rx) = handoff_spsc::channel::<(usize, u32, u32)>(1024);
    let tx = Mutex::new(Some(tx));
    let rx = Mutex::new(Some(rx));
    let bad = std::sync::atomic::AtomicUsize::new(0);
    let pins = [spec.pins[0], *spec.pins.get(1).unwrap_or(&spec.pins[0])];
    let ticks = harness::together(spec.timer, stop::flag(), &pins, 2, |k| {
        if k == 0 {
            let mut tx = tx
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("once");
            let mut rng = Rng(0xc0ffee);
            for tag in 0..n as u64 {
                let s = size(rng.next());
                // SAFETY: a valid, non-zero layout.
                let p = unsafe { a.alloc(layout(s)) };
                assert!(!p.is_null(), "out of memory");
                let b = Live::new(p, s, tag);
                write_once(&b);
                let mut item = (p as usize, b.size, b.tag);
                while let Err(full) = tx.try_push(item) {
                    item = full.into_inner();
                    std::hint::spin_loop();
                }
            }
        } else {
            let mut rx = rx
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("once");
            for _ in 0..n {
                let (p, s, tag) = loop {
                    if let Some(x) = rx.try_pop() {
                        break x;
                    }
                    std::hint::spin_loop();
                };
                let b = Live {
                    p: p as *mut u8,
                    size: s,
                    tag,
                };
                if !read_once(&b) {
                    bad.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                // SAFETY: allocated by the producer with this layout; only this thread has it.
                unsafe { a.dealloc(b.p, layout(b.size())) };
            }
        }
    })?;
    if bad.into_inner() > 0 {
        return Err(Error::Run("a handed-off block was overwritten".into()));
    }
    Ok(spec.timer.per_second(n, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_in_every_octave_with_equal_odds() {
        let mut rng = Rng(1);
        let mut per_octave = [0usize; 16];
        for _ in 0..90_000 {
            let s = size(rng.next());
            assert!((8..4096).contains(&s), "{s}");
            per_octave[(usize::BITS - 1 - s.leading_zeros()) as usize] += 1;
        }
        for &n in &per_octave[3..12] {
            assert!((9_000..11_000).contains(&n), "{per_octave:?}");
        }
    }

    #[test]
    fn low_slots_are_replaced_far_more_often() {
        let mut rng = Rng(2);
        let mut hits = vec![0usize; 1024];
        for _ in 0..200_000 {
            hits[slot(rng.next(), 10)] += 1;
        }
        assert!(
            hits[0] > 20 * hits[1000].max(1),
            "{} vs {}",
            hits[0],
            hits[1000]
        );
        assert!(
            hits[512..].iter().sum::<usize>() > 0,
            "the old half is never replaced"
        );
    }

    #[test]
    fn the_test_checks_every_block_and_frees_everything() {
        let (secs, peak) = one_thread(&mut Real(&System), 1 << 20, 10_000, 3).unwrap();
        assert!(secs > 0.0);
        assert!(peak >= 1 << 20);
        let (_, peak2) =
            one_thread(&mut Real(&handoff_alloc::HandoffAlloc), 1 << 20, 10_000, 3).unwrap();
        assert_eq!(peak, peak2, "the same stream for every allocator");
        let (_, peak3) = one_thread(&mut Void::new(), 1 << 20, 10_000, 3).unwrap();
        assert_eq!(peak, peak3, "and for the baseline");
    }

    /// An allocator that hands every block out again while it is live.
    struct Overlapping(Void);

    impl Blocks for Overlapping {
        const DISTINCT: bool = true;
        fn get(&mut self, size: usize) -> *mut u8 {
            self.0.get(size)
        }
        unsafe fn put(&mut self, _p: *mut u8, _size: usize) {}
    }

    #[test]
    fn the_test_catches_an_allocator_that_hands_out_live_blocks() {
        let e = one_thread(&mut Overlapping(Void::new()), 1 << 16, 1_000, 3).unwrap_err();
        assert!(e.to_string().contains("overwritten"), "{e}");
    }
}
