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

use super::workload::{
    layout, one_thread, read_once, size, write_once, Blocks, Live, Real, Rng, Void,
};
use crate::lab::error::{Error, Result};
use crate::lab::{harness, stop};
use handoff_clock::Timer;
use serde::{Deserialize, Serialize};
use std::alloc::{GlobalAlloc, System};
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
