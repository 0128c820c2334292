//! The measured loops of `runner pool`: each (scenario, contender) cell runs on pinned
//! threads through the lab's harness and returns nanoseconds per operation.

use super::Config;
use crate::lab::error::{Error, Result};
use crate::lab::harness::{on_core as one, together};
use crate::lab::measure::median_part;
use crate::lab::stop;
use handoff_clock::Timer;
use handoff_pool::policy::{
    contention, Contention, LockFree, Locked, Policy, SingleThreaded, ThreadCached,
};
use handoff_pool::{Capacity, Pool};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::mem::MaybeUninit;

/// Document 001's 64-byte block, with malloc's own alignment (8) so that `Box` takes
/// glibc's plain `malloc(64)` path. Allocating writes its first word only (the
/// document's pool hands out raw blocks; both sides touch the block's line once).
pub struct Block {
    first: u64,
    _rest: MaybeUninit<[u64; 7]>,
}

const _: () = assert!(size_of::<Block>() == 64);

impl Block {
    #[inline(always)]
    fn new(i: u64) -> Block {
        Block {
            first: i,
            _rest: MaybeUninit::uninit(),
        }
    }
}

/// A contender: a policy of `handoff_pool::Pool`, or the process allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contender {
    /// `Pool<_, SingleThreaded>` (document 001's NONE).
    SingleThreaded,
    /// `Pool<_, Locked>` (MUTEX).
    Locked,
    /// `Pool<_, LockFree>` (LOCKFREE).
    LockFree,
    /// `Pool<_, ThreadCached>` (the per-thread caches document 001 defers).
    ThreadCached,
    /// `Box` on the runner's allocator (glibc malloc).
    Malloc,
    /// `Box` on mimalloc: the malloc loops in a child runner whose allocator is
    /// mimalloc (`lab::child`).
    Mimalloc,
    /// `Box` on handoff-alloc: the malloc loops in a child runner whose allocator is
    /// handoff-alloc.
    HandoffAlloc,
}

impl Contender {
    /// Every contender, in table order.
    pub const ALL: [Contender; 7] = [
        Contender::SingleThreaded,
        Contender::Locked,
        Contender::LockFree,
        Contender::ThreadCached,
        Contender::Malloc,
        Contender::Mimalloc,
        Contender::HandoffAlloc,
    ];

    /// The general allocators, each a `Box` on it: glibc, mimalloc, handoff-alloc.
    pub const ALLOCATORS: [Contender; 3] = [
        Contender::Malloc,
        Contender::Mimalloc,
        Contender::HandoffAlloc,
    ];

    /// The child process allocator (`lab::child`) a `Box` contender other than glibc
    /// runs under, and `None` for the rest.
    fn child_allocator(self) -> Option<&'static str> {
        match self {
            Contender::Mimalloc => Some("mimalloc"),
            Contender::HandoffAlloc => Some("handoff"),
            _ => None,
        }
    }

    /// Our name.
    pub fn name(self) -> &'static str {
        match self {
            Contender::SingleThreaded => "single_threaded",
            Contender::Locked => "locked",
            Contender::LockFree => "lock_free",
            Contender::ThreadCached => "thread_cached",
            Contender::Malloc => "malloc",
            Contender::Mimalloc => "mimalloc",
            Contender::HandoffAlloc => "handoff_alloc",
        }
    }

    /// The document's name.
    pub fn doc_name(self) -> &'static str {
        match self {
            Contender::SingleThreaded => "NONE",
            Contender::Locked => "MUTEX",
            Contender::LockFree => "LOCKFREE",
            Contender::ThreadCached => "deferred",
            Contender::Malloc => "malloc",
            Contender::Mimalloc => "mimalloc",
            Contender::HandoffAlloc => "handoff-alloc",
        }
    }
}

/// A scenario of document 001.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// N allocations, then N releases, timed apart.
    Bulk,
    /// Allocate then release, N times.
    Interleaved,
    /// T threads each running the interleaved loop on one shared pool.
    Concurrent,
}

impl Scenario {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Bulk => "bulk",
            Scenario::Interleaved => "interleaved",
            Scenario::Concurrent => "concurrent",
        }
    }
}

/// One (scenario, contender) of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    /// Scenario.
    pub scenario: Scenario,
    /// Contender.
    pub contender: Contender,
    /// Threads (1 except concurrent; the single-threaded pool is not `Sync`, so its
    /// concurrent row is clamped to 1, as document 001's NONE row is).
    pub threads: usize,
}

impl Cell {
    /// For the progress line.
    pub fn label(&self) -> String {
        format!("{} {}", self.scenario.name(), self.contender.name())
    }
}

/// The run's cells: every scenario for every contender.
pub fn cells(cfg: &Config) -> Vec<Cell> {
    let mut out = Vec::new();
    for scenario in [Scenario::Bulk, Scenario::Interleaved, Scenario::Concurrent] {
        for contender in Contender::ALL {
            let threads = match (scenario, contender) {
                (Scenario::Concurrent, Contender::SingleThreaded) => 1,
                (Scenario::Concurrent, _) => cfg.threads,
                _ => 1,
            };
            out.push(Cell {
                scenario,
                contender,
                threads,
            });
        }
    }
    out
}

/// One repeat of one cell: ns per operation (bulk: allocation, and release apart).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Sample {
    /// ns per allocation (bulk) or per allocate + release (the other scenarios).
    pub ns: f64,
    /// Bulk only: ns per release.
    pub free_ns: Option<f64>,
    /// Concurrent `lock_free` and `locked` only: failed compare-and-swaps of the head
    /// (`lock_free`) or lock acquisitions that found the mutex held (`locked`), per
    /// allocate + release, all threads (`handoff_pool::policy::contention`).
    #[serde(default)]
    pub contended_per_op: Option<f64>,
    /// Concurrent scenario on two or more cores: the round trip of a cache line between
    /// the first two threads' cores, probed just before and just after the repeat
    /// (`lab::harness::link_probe`), ns; it tags the repeat with the host's placement
    /// of the cores.
    #[serde(default)]
    pub around_ns: Option<(f64, f64)>,
    /// Interleaved `single_threaded` only: ns per allocate + release of a bare,
    /// unsynchronised free list of the same blocks (a `Vec` of slots and a stack of
    /// free indices, no policy), timed on the same core just before and just after
    /// the pool in the same repeat: what document 001's "NONE adds nothing" is judged
    /// against.
    #[serde(default)]
    pub bare_ns: Option<f64>,
}

/// Slots of a pool for the interleaved and concurrent loops: far more than is live,
/// plus what the per-thread magazines can park (two magazines of 64 per thread).
fn loop_slots(threads: usize) -> usize {
    4096 + threads * 2 * handoff_pool::policy::DEFAULT_MAGAZINE
}

fn exhausted() -> ! {
    panic!("the pool ran out of slots: it is sized for the loop, so this is a bug")
}

/// What the allocator's child needs to run one repeat of a cell.
#[derive(Serialize, Deserialize)]
struct ChildSpec {
    cell: Cell,
    cfg: Config,
    timer: Timer,
}

/// The child task that runs the malloc loops under mimalloc or handoff-alloc.
pub const CHILD_TASK: &str = "pool";

/// The child's side: one repeat of the cell's malloc loops with this process's
/// allocator (mimalloc or handoff-alloc), the sample back as JSON.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let spec: ChildSpec = serde_json::from_slice(input).map_err(|e| format!("bad spec: {e}"))?;
    let cell = Cell {
        contender: Contender::Malloc,
        ..spec.cell
    };
    let sample = measure(&cell, &spec.cfg, spec.timer).map_err(|e| e.to_string())?;
    serde_json::to_vec(&sample).map_err(|e| e.to_string())
}

/// Runs one repeat of `cell`.
pub fn measure(cell: &Cell, cfg: &Config, timer: Timer) -> Result<Sample> {
    if let Some(allocator) = cell.contender.child_allocator() {
        let spec = ChildSpec {
            cell: cell.clone(),
            cfg: cfg.clone(),
            timer,
        };
        let json = serde_json::to_vec(&spec).map_err(|e| Error::Run(e.to_string()))?;
        let who = cell.contender.doc_name();
        let out = crate::lab::child::run(who, CHILD_TASK, allocator, &json)?;
        return serde_json::from_slice(&out)
            .map_err(|e| Error::Run(format!("{who}: the child's sample: {e}")));
    }
    let n = cfg.items;
    let cpu = cfg.placement.first();
    let to_ns = |ticks: u64, ops: usize| timer.ns(ticks) / ops as f64;
    match cell.scenario {
        Scenario::Bulk => {
            let (a, f) = one(timer, stop::flag(), cpu, move || match cell.contender {
                Contender::SingleThreaded => bulk::<SingleThreaded>(timer, n),
                Contender::Locked => bulk::<Locked>(timer, n),
                Contender::LockFree => bulk::<LockFree>(timer, n),
                Contender::ThreadCached => bulk::<ThreadCached>(timer, n),
                Contender::Malloc | Contender::Mimalloc | Contender::HandoffAlloc => {
                    bulk_malloc(timer, n)
                }
            })?;
            Ok(Sample {
                ns: to_ns(a, n),
                free_ns: Some(to_ns(f, n)),
                contended_per_op: None,
                around_ns: None,
                bare_ns: None,
            })
        }
        Scenario::Interleaved if cell.contender == Contender::SingleThreaded => {
            // NONE beside a bare free list in the same repeat, on the same core: the
            // list once before and once after, so that neither order is favoured.
            let (before, t, after) = one(timer, stop::flag(), cpu, move || {
                let before = interleaved_bare(timer, n);
                let t = interleaved::<SingleThreaded>(timer, n);
                (before, t, interleaved_bare(timer, n))
            })?;
            Ok(Sample {
                ns: to_ns(t, n),
                free_ns: None,
                contended_per_op: None,
                around_ns: None,
                bare_ns: Some(to_ns(before + after, 2 * n)),
            })
        }
        Scenario::Interleaved => {
            let t = one(timer, stop::flag(), cpu, move || match cell.contender {
                Contender::SingleThreaded => interleaved::<SingleThreaded>(timer, n),
                Contender::Locked => interleaved::<Locked>(timer, n),
                Contender::LockFree => interleaved::<LockFree>(timer, n),
                Contender::ThreadCached => interleaved::<ThreadCached>(timer, n),
                Contender::Malloc | Contender::Mimalloc | Contender::HandoffAlloc => {
                    interleaved_malloc(timer, n)
                }
            })?;
            Ok(Sample {
                ns: to_ns(t, n),
                free_ns: None,
                contended_per_op: None,
                around_ns: None,
                bare_ns: None,
            })
        }
        Scenario::Concurrent => {
            let pins = &cfg.placement.threads();
            let t = cell.threads;
            let (wall, contended) = match cell.contender {
                Contender::SingleThreaded => (
                    one(timer, stop::flag(), cpu, move || {
                        interleaved::<SingleThreaded>(timer, n)
                    })?,
                    None,
                ),
                Contender::Locked => {
                    let (w, c) = concurrent::<Locked>(timer, pins, t, n)?;
                    (w, Some(c.waited_locks))
                }
                Contender::LockFree => {
                    let (w, c) = concurrent::<LockFree>(timer, pins, t, n)?;
                    (w, Some(c.failed_swaps))
                }
                Contender::ThreadCached => (concurrent::<ThreadCached>(timer, pins, t, n)?.0, None),
                Contender::Malloc | Contender::Mimalloc | Contender::HandoffAlloc => {
                    (concurrent_malloc(timer, pins, t, n)?, None)
                }
            };
            Ok(Sample {
                ns: to_ns(wall, n * t),
                free_ns: None,
                contended_per_op: contended.map(|c| c as f64 / (n * t) as f64),
                around_ns: None,
                bare_ns: None,
            })
        }
    }
}

/// The bulk scenario on one pool: every allocation, then every release, each pass timed
/// in chunks ([`chunked`]) so that a host pause inside a pass of a few milliseconds
/// moves one chunk, not the repeat.
fn bulk<P: Policy>(timer: Timer, n: usize) -> (u64, u64) {
    let pool = Pool::<Block, P>::new(Capacity::Fixed(n)).unwrap_or_else(|e| panic!("{e}"));
    let mut held = Vec::with_capacity(n);
    // Document 001's pools are preallocated: every slot is in memory before the timed
    // bulk. One untimed pass takes and returns every slot, so the timed one measures
    // the policy, not the first touch of each page.
    for i in 0..n as u64 {
        match pool.try_alloc_raw(Block::new(i)) {
            Ok(r) => held.push(r),
            Err(_) => exhausted(),
        }
    }
    for r in held.drain(..) {
        // Always `Ok`: every handle is this pool's.
        let _ = pool.free(r);
    }
    let mut i = 0u64;
    let a = chunked(timer, n, |m| {
        for _ in 0..m {
            match pool.try_alloc_raw(Block::new(i)) {
                Ok(r) => held.push(r),
                Err(_) => exhausted(),
            }
            i += 1;
        }
    });
    // Released in the order they were taken, as one pass over `held` would.
    let mut taken = held.drain(..);
    let f = chunked(timer, n, |m| {
        for r in taken.by_ref().take(m) {
            // Always `Ok`: every handle is this pool's.
            let _ = pool.free(r);
        }
    });
    (a, f)
}

/// The bulk scenario on the global allocator, timed as [`bulk`] is.
fn bulk_malloc(timer: Timer, n: usize) -> (u64, u64) {
    let mut held = Vec::with_capacity(n);
    let mut i = 0u64;
    let a = chunked(timer, n, |m| {
        for _ in 0..m {
            held.push(Box::new(Block::new(i)));
            i += 1;
        }
    });
    let mut taken = held.drain(..);
    let f = chunked(timer, n, |m| {
        for b in taken.by_ref().take(m) {
            drop(b);
        }
    });
    drop(taken);
    black_box(&held);
    (a, f)
}

#[inline(always)]
fn interleaved_loop<P: Policy>(pool: &Pool<Block, P>, n: usize) {
    for i in 0..n as u64 {
        match pool.try_alloc(Block::new(i)) {
            Ok(o) => {
                black_box(&o.first);
            }
            Err(_) => exhausted(),
        }
    }
}

/// Times `n` iterations of `run` (called with a count) in parts and returns the median
/// part's ticks per iteration times `n` (`lab::measure::median_part`): a host pause
/// (0.3-4 ms, several a second here, against a loop of 1-15 ms) lengthens the part it
/// falls in, not the figure.
fn chunked(timer: Timer, n: usize, mut run: impl FnMut(usize)) -> u64 {
    let pace = median_part(|| timer.now(), n as u64, 1, |m| run(m as usize));
    (pace * n as f64).round() as u64
}

fn interleaved<P: Policy>(timer: Timer, n: usize) -> u64 {
    let pool =
        Pool::<Block, P>::new(Capacity::Fixed(loop_slots(1))).unwrap_or_else(|e| panic!("{e}"));
    chunked(timer, n, |m| interleaved_loop(&pool, m))
}

/// The interleaved loop on a bare free list: `loop_slots(1)` blocks in a `Vec`, the
/// free ones' indices on a stack; allocating pops an index and writes the block,
/// releasing pushes the index back. No policy, no handle, no synchronisation. Timed as
/// the pools' loops are ([`chunked`]).
fn interleaved_bare(timer: Timer, n: usize) -> u64 {
    let slots_n = loop_slots(1);
    let mut slots: Vec<Block> = (0..slots_n as u64).map(Block::new).collect();
    let mut free: Vec<usize> = (0..slots_n).rev().collect();
    let t = chunked(timer, n, |m| {
        for i in 0..m as u64 {
            let Some(k) = free.pop() else { exhausted() };
            slots[k] = Block::new(i);
            black_box(&slots[k].first);
            free.push(k);
        }
    });
    black_box(&slots);
    t
}

#[inline(always)]
fn malloc_loop(n: usize) {
    for i in 0..n as u64 {
        let b = Box::new(Block::new(i));
        black_box(&b.first);
    }
}

fn interleaved_malloc(timer: Timer, n: usize) -> u64 {
    chunked(timer, n, malloc_loop)
}

/// The concurrent loop on one pool shared by `threads` threads: the wall time, and the
/// contention all threads met (`handoff_pool::policy::contention`, read by each thread
/// around its loop).
fn concurrent<P: Policy>(
    timer: Timer,
    pins: &[usize],
    threads: usize,
    n: usize,
) -> Result<(u64, Contention)>
where
    Pool<Block, P>: Sync,
{
    let pool = Pool::<Block, P>::new(Capacity::Fixed(loop_slots(threads)))
        .map_err(|e| Error::Run(format!("pool: {e}")))?;
    let total = std::sync::Mutex::new(Contention::default());
    let wall = together(timer, stop::flag(), pins, threads, |_| {
        let before = contention();
        interleaved_loop(&pool, n);
        let met = contention().since(before);
        let mut t = total
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        t.failed_swaps += met.failed_swaps;
        t.waited_locks += met.waited_locks;
    })?;
    let met = total
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok((wall, met))
}

fn concurrent_malloc(timer: Timer, pins: &[usize], threads: usize, n: usize) -> Result<u64> {
    together(timer, stop::flag(), pins, threads, |_| malloc_loop(n))
}
