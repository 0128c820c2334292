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

use super::turns::{Link, Turn, REST};
use super::workload::{
    layout, one_thread, one_thread_probed, read_once, size, write_once, Blocks, Live, Real, Rng,
    Void,
};
use crate::lab::error::{Error, Result};
use crate::lab::{harness, stop};
use handoff_alloc::takes::{Single, Take1, Take2, Take3, Take3Pow2};
use handoff_clock::Timer;
use serde::{Deserialize, Serialize};
use std::alloc::{GlobalAlloc, System};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
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
    /// tcmalloc (gperftools, the system's shared library, preloaded into the child).
    Tcmalloc,
    /// Hoard (a shared library built from its sources, preloaded into the child).
    Hoard,
    /// The document's Take 1: a header before every block (`handoff_alloc::takes`).
    Take1,
    /// The document's Take 2: a header per 4 KiB page.
    Take2,
    /// The document's Take 3: the class in the pointer's bits, single-threaded.
    Take3,
    /// Take 3 with power-of-two classes.
    Take3Pow2,
    /// No allocator: the test's own cost (see `Void`).
    Void,
}

impl Contender {
    /// Every contender, in table order: the allocators, the document's takes, then
    /// the baseline.
    pub const ALL: [Contender; 11] = [
        Contender::Handoff,
        Contender::System,
        Contender::Mimalloc,
        Contender::Jemalloc,
        Contender::Tcmalloc,
        Contender::Hoard,
        Contender::Take1,
        Contender::Take2,
        Contender::Take3,
        Contender::Take3Pow2,
        Contender::Void,
    ];

    /// The general allocators and handoff-alloc: process allocators any thread may use.
    pub const ALLOCATORS: [Contender; 6] = [
        Contender::Handoff,
        Contender::System,
        Contender::Mimalloc,
        Contender::Jemalloc,
        Contender::Tcmalloc,
        Contender::Hoard,
    ];

    /// The general-purpose allocators handoff-alloc is compared with.
    pub const GENERAL: [Contender; 5] = [
        Contender::System,
        Contender::Mimalloc,
        Contender::Jemalloc,
        Contender::Tcmalloc,
        Contender::Hoard,
    ];

    /// The document's designs (`handoff_alloc::takes`), one allocator per thread.
    pub const TAKES: [Contender; 4] = [
        Contender::Take1,
        Contender::Take2,
        Contender::Take3,
        Contender::Take3Pow2,
    ];

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Contender::Handoff => "handoff-alloc",
            Contender::System => "system",
            Contender::Mimalloc => "mimalloc",
            Contender::Jemalloc => "jemalloc",
            Contender::Tcmalloc => "tcmalloc",
            Contender::Hoard => "hoard",
            Contender::Take1 => "take1-header-per-block",
            Contender::Take2 => "take2-header-per-page",
            Contender::Take3 => "take3-class-in-pointer",
            Contender::Take3Pow2 => "take3-pow2-classes",
            Contender::Void => "no allocator",
        }
    }

    /// The `HANDOFF_ALLOCATOR` value of its child process.
    fn env(self) -> &'static str {
        match self {
            Contender::Handoff => "handoff",
            Contender::Mimalloc => "mimalloc",
            Contender::Jemalloc => "jemalloc",
            _ => "system",
        }
    }

    /// For a contender that replaces the C library's `malloc` in its child
    /// (`LD_PRELOAD`): the shared library, or why it is unavailable and how to get it.
    /// `None` for the others.
    pub fn preload(self) -> Option<std::result::Result<PathBuf, String>> {
        match self {
            Contender::Tcmalloc => Some(crate::lab::contenders::find_library(
                "HANDOFF_TCMALLOC_LIB",
                &["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
                None,
                "install gperftools' tcmalloc (Debian, Ubuntu: apt-get install \
                 libgoogle-perftools-dev) or set HANDOFF_TCMALLOC_LIB to a libtcmalloc .so",
            )),
            Contender::Hoard => Some(crate::lab::contenders::find_library(
                "HANDOFF_HOARD_LIB",
                &["libhoard.so"],
                hoard_build_dir(),
                "no distribution ships Hoard: run runner/contenders/build-hoard.sh (it \
                 builds libhoard.so from the Hoard sources in the alloc_hoard crate on \
                 crates.io) or set HANDOFF_HOARD_LIB to a libhoard.so",
            )),
            _ => None,
        }
    }
}

/// Where runner/contenders/build-hoard.sh puts libhoard.so: `contenders/` in the
/// runner binary's target folder (`target/contenders/` for `target/release/runner`).
pub fn hoard_build_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("contenders"))
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
    /// Thread counts of the scaling run (the main test again, split among them).
    pub scaling: Vec<usize>,
    /// Whether to time a thread-local read (handoff-alloc only: `tls_read_ns`).
    pub tls: bool,
    /// The library preloaded into the child, which it checks it runs on.
    pub preloaded: Option<PathBuf>,
    /// TSC ticks per second.
    pub timer: Timer,
    /// Where the child takes turns with its pass's other children (`runner alloc
    /// --turns`); `None`: it runs alone.
    #[serde(default)]
    pub turns: Option<Turn>,
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
    /// The cores' round trip (ns) probed before and after the producer/consumer run:
    /// the placement it ran in (`probed_cross`).
    #[serde(default)]
    pub handoff_around_ns: Option<(f64, f64)>,
    /// Each pass's number with its producer/consumer run's rate and probes, in pass
    /// order: filled where a repeat's passes are merged (`passes::of_passes`), empty in a
    /// child's.
    #[serde(default)]
    pub handoff_passes: Vec<(usize, Cross)>,
    /// (threads, seconds, ns per pair per thread) of the scaling run.
    #[serde(default)]
    pub scaling: Vec<(usize, f64, f64)>,
    /// handoff-alloc only: its slow-path counters over the replacements of each sweep
    /// point (the filling and the final frees left out), in the sweep's order.
    #[serde(default)]
    pub sweep_counters: Vec<SlowPath>,
    /// handoff-alloc only: ns one read of a thread-local costs beyond one read of a
    /// plain static, each through a call the compiler may not inline, on the main
    /// test's core (`tls_read_ns`): what finding the thread's heap adds to a call.
    #[serde(default)]
    pub tls_ns: Option<f64>,
}

thread_local! {
    /// What [`tls_read_ns`] reads: a thread-local as handoff-alloc's heap pointer is one
    /// (const-initialised, no destructor: one `%fs`-relative load in an executable).
    static SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
}

/// The plain static [`tls_read_ns`] reads beside [`SLOT`].
static PLAIN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

#[inline(never)]
fn read_slot() -> usize {
    SLOT.with(std::cell::Cell::get)
}

#[inline(never)]
fn read_plain() -> usize {
    PLAIN.load(std::sync::atomic::Ordering::Relaxed)
}

/// ns one thread-local read costs beyond one read of a plain static: 5 alternated
/// pairs of 2 M calls of each (every call a real call, so the thread-local's address is
/// found again each time, as every `malloc` and `free` finds its heap), the medians'
/// difference, never below 0.
pub fn tls_read_ns(timer: handoff_clock::Timer) -> f64 {
    const CALLS: usize = 2_000_000;
    let time = |read: fn() -> usize| {
        let t0 = timer.now();
        let mut acc = 0usize;
        for _ in 0..CALLS {
            acc = acc.wrapping_add(std::hint::black_box(read)());
        }
        std::hint::black_box(acc);
        timer.ns(timer.now() - t0) / CALLS as f64
    };
    let (mut tls, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        tls.push(time(read_slot));
        plain.push(time(read_plain));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(tls) - median(plain)).max(0.0)
}

/// handoff-alloc's slow-path events over one run of the test, from its statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SlowPath {
    /// Replacements of the run.
    pub pairs: u64,
    /// Allocations that found the magazine empty.
    pub refills: u64,
    /// Frees that found the magazine full.
    pub spills: u64,
    /// Blocks moved from magazines to depots.
    pub to_depot: u64,
    /// Blocks moved from depots to magazines.
    pub from_depot: u64,
}

impl SlowPath {
    /// The events between two readings of handoff-alloc's statistics.
    fn between(a: &handoff_alloc::Stats, b: &handoff_alloc::Stats, pairs: usize) -> SlowPath {
        SlowPath {
            pairs: pairs as u64,
            refills: b.magazine_refills.saturating_sub(a.magazine_refills),
            spills: b.magazine_spills.saturating_sub(a.magazine_spills),
            to_depot: b.depot_blocks_in.saturating_sub(a.depot_blocks_in),
            from_depot: b.depot_blocks_out.saturating_sub(a.depot_blocks_out),
        }
    }

    /// Adds `o`'s events and replacements to these.
    pub fn add(&mut self, o: &SlowPath) {
        self.pairs += o.pairs;
        self.refills += o.refills;
        self.spills += o.spills;
        self.to_depot += o.to_depot;
        self.from_depot += o.from_depot;
    }

    /// Per 1000 replacements: refills, spills, blocks to the depot, blocks from it.
    pub fn per_1000(&self) -> [f64; 4] {
        let k = 1000.0 / self.pairs.max(1) as f64;
        [
            self.refills as f64 * k,
            self.spills as f64 * k,
            self.to_depot as f64 * k,
            self.from_depot as f64 * k,
        ]
    }
}

/// The task name of the child runner.
pub const CHILD_TASK: &str = "alloc";

/// Runs `spec` in a child runner with the contender's allocator.
pub fn measure(spec: &Spec) -> Result<Sample> {
    let who = spec.contender.name();
    let input = serde_json::to_vec(spec).map_err(|e| Error::Run(e.to_string()))?;
    let preload: Vec<(&str, &OsStr)> = spec
        .preloaded
        .iter()
        .map(|p| ("LD_PRELOAD", p.as_os_str()))
        .collect();
    let out =
        crate::lab::child::run_with_env(who, CHILD_TASK, spec.contender.env(), &preload, &input)?;
    serde_json::from_slice(&out).map_err(|e| Error::Run(format!("{who}: the child's sample: {e}")))
}

/// The child's side.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let spec: Spec = serde_json::from_slice(input).map_err(|e| format!("bad spec: {e}"))?;
    if let Some(lib) = &spec.preloaded {
        check_preloaded(lib)?;
    }
    let sample = match spec.contender {
        Contender::Handoff => real(&handoff_alloc::HandoffAlloc, &spec),
        // tcmalloc and Hoard replace the C library's malloc, which `System` calls.
        Contender::System | Contender::Tcmalloc | Contender::Hoard => real(&System, &spec),
        #[cfg(feature = "contenders")]
        Contender::Mimalloc => real(&mimalloc::MiMalloc, &spec),
        #[cfg(feature = "contenders")]
        Contender::Jemalloc => real(&tikv_jemallocator::Jemalloc, &spec),
        #[cfg(not(feature = "contenders"))]
        Contender::Mimalloc | Contender::Jemalloc => {
            return Err(format!(
                "{} is linked only into {}",
                spec.contender.env(),
                crate::lab::contenders::BINARY
            ))
        }
        Contender::Take1 => run(|| Taken(Take1::new()), &spec, || Ok(None)),
        Contender::Take2 => run(|| Taken(Take2::new()), &spec, || Ok(None)),
        Contender::Take3 => run(|| Taken(Take3::new()), &spec, || Ok(None)),
        Contender::Take3Pow2 => run(|| Taken(Take3Pow2::new()), &spec, || Ok(None)),
        Contender::Void => run(Void::new, &spec, || Ok(None)),
    }
    .map_err(|e| e.to_string())?;
    serde_json::to_vec(&sample).map_err(|e| e.to_string())
}

/// Fails unless `lib` is mapped into this process: a preload the loader skipped (a
/// wrong architecture, a missing dependency) would otherwise measure glibc under
/// another name.
fn check_preloaded(lib: &Path) -> std::result::Result<(), String> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| e.to_string())?;
    let real = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.to_path_buf());
    let name = real.file_name().map(|n| n.to_string_lossy().into_owned());
    match name {
        Some(n) if maps.lines().any(|l| l.ends_with(n.as_str())) => Ok(()),
        _ => Err(format!(
            "{} was not loaded into the child (LD_PRELOAD); the loader skipped it",
            lib.display()
        )),
    }
}

/// One of the document's takes, one per test thread (`None`: its reservation of
/// address space was refused, and every block is out of memory).
struct Taken<T>(Option<T>);

impl<const L: u8, const P: bool> Blocks for Taken<Single<L, P>> {
    const DISTINCT: bool = true;
    #[inline(always)]
    fn get(&mut self, size: usize) -> *mut u8 {
        self.0
            .as_mut()
            .map_or(std::ptr::null_mut(), |t| t.alloc(size))
    }
    #[inline(always)]
    unsafe fn put(&mut self, p: *mut u8, _size: usize) {
        if let Some(t) = self.0.as_mut() {
            // SAFETY: `p` came from `get` on this value (the caller's contract), so
            // from `t.alloc`; the take finds its class from `p` alone.
            unsafe { t.free(p) };
        }
    }
}

/// A contender's test, sweep and producer/consumer run.
fn real<A: GlobalAlloc + Sync>(a: &A, spec: &Spec) -> Result<Sample> {
    run(
        || Real(a),
        spec,
        || {
            (spec.handoff_items > 0)
                .then(|| probed_cross(a, spec))
                .transpose()
        },
    )
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

/// The main test, its scaling run, `between` (the producer/consumer run: before the
/// sweep, which only a repeat's first pass runs, so that every pass measures it after the
/// same work) and the sweep, each thread with its own `new()`.
fn run<B: Blocks, F: Fn() -> B + Sync>(
    new: F,
    spec: &Spec,
    between: impl FnOnce() -> Result<Option<Cross>>,
) -> Result<Sample> {
    let stop = stop::flag();
    let link = spec
        .turns
        .as_ref()
        .map(Link::connect)
        .transpose()?
        .map(Mutex::new);
    let link = link.as_ref();
    let (_, before) = resident();
    let (seconds, ns_per_pair, peak_requested) = main_test(&new, spec, spec.threads.max(1), link)?;
    let (hwm, _) = resident();
    let mut scaling = Vec::new();
    for &t in &spec.scaling {
        let (s, ns, _) = main_test(&new, spec, t, link)?;
        scaling.push((t, s, ns));
    }
    if let Some(l) = link {
        l.lock().unwrap_or_else(|e| e.into_inner()).wait(REST)?;
    }
    let handoff = between()?;
    let mut sweep = Vec::new();
    let mut sweep_counters = Vec::new();
    let counted = spec.contender == Contender::Handoff;
    for &ws in &spec.sweep {
        let mut readings = Vec::with_capacity(2);
        let (s, _) = harness::on_core(spec.timer, stop, spec.pins[0], || {
            let mut probe = || {
                if counted {
                    readings.push(handoff_alloc::stats());
                }
            };
            one_thread_probed(&mut new(), ws, spec.sweep_ops, 0x5eed, &mut probe)
        })??;
        if let [before, after] = readings.as_slice() {
            sweep_counters.push(SlowPath::between(before, after, spec.sweep_ops));
        }
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
        handoff_per_s: handoff.map(|h| h.0),
        handoff_around_ns: handoff.and_then(|h| h.1),
        handoff_passes: Vec::new(),
        scaling,
        sweep_counters,
        tls_ns: if counted && spec.tls {
            Some(harness::on_core(spec.timer, stop, spec.pins[0], || {
                tls_read_ns(spec.timer)
            })?)
        } else {
            None
        },
    })
}

/// The main test on `t` threads, the working set and the replacements split among
/// them: (seconds, filling included; ns per pair of the steady part, per thread; peak
/// requested bytes). With a `link`, in turns (`turns::turned_test`).
fn main_test<B: Blocks, F: Fn() -> B + Sync>(
    new: &F,
    spec: &Spec,
    t: usize,
    link: Option<&Mutex<Link>>,
) -> Result<(f64, f64, usize)> {
    if let (Some(link), Some(turn)) = (link, &spec.turns) {
        return super::turns::turned_test(new, spec, t, link, turn.parts);
    }
    let results: Vec<Slot> = (0..t).map(|_| Mutex::new(None)).collect();
    let start = Instant::now();
    harness::together(spec.timer, stop::flag(), &spec.pins, t, |k| {
        let r = one_thread(
            &mut new(),
            spec.working_set / t,
            spec.ops / t,
            0x5eed + k as u64,
        );
        *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    })?;
    let seconds = start.elapsed().as_secs_f64();
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
    Ok((seconds, ns_per_pair, peak_requested))
}

/// [`cross`], with the cores' cache-line round trip probed just before and just after
/// it ([`harness::link_probe`]; `None` on one core): the rate depends on where the host
/// put the two vCPUs, about 3 times higher with them ~110 ns apart than ~390 ns apart
/// here, for handoff-alloc and mimalloc alike (2026-12-05).
fn probed_cross<A: GlobalAlloc + Sync>(a: &A, spec: &Spec) -> Result<Cross> {
    let pins = (spec.pins[0], *spec.pins.get(1).unwrap_or(&spec.pins[0]));
    let probe = || harness::link_probe(spec.timer, stop::flag(), pins.0, pins.1);
    let before = probe()?;
    let rate = cross(a, spec)?;
    Ok((rate, before.zip(probe()?)))
}

/// A producer/consumer run's rate (blocks per second) and the cores' round trips (ns)
/// probed before and after it.
pub type Cross = (f64, Option<(f64, f64)>);

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
                    if let Ok(x) = rx.try_pop() {
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
