//! The measured parts of `runner patterns` that alternate contenders, one function per
//! section of document 003 (the parts measured once, memory, the profiler and NUMA,
//! are in `once.rs`). Every timed loop runs on a pinned thread through the lab's
//! harness and returns TSC ticks; the caller alternates contenders between repeats.

use super::Config;
use crate::lab::error::{Error, Result};
use crate::lab::harness::{on_core, together};
use crate::lab::stop;
use handoff_clock::Timer;
use handoff_pool::policy::{LockFree, Locked, Policy, ThreadCached};
use handoff_pool::{BumpArena, Capacity, Pool};
use handoff_stats::{Latency, Unit};
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Document 003's `Tick` (24 bytes). Written as the document writes it; the
/// measured loops only hold it.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub struct Tick {
    timestamp: u64,
    price: f64,
    volume: i32,
    flags: u32,
}

impl Tick {
    #[inline(always)]
    pub(super) fn new(i: u64) -> Tick {
        Tick {
            timestamp: i,
            price: 100.0 + i as f64 * 0.01,
            volume: 100 + i as i32,
            flags: 0,
        }
    }
}

/// Document 003's arena rounds every allocation up to 64 bytes: a tick so aligned.
#[derive(Clone, Copy)]
#[repr(align(64))]
pub(super) struct Tick64(#[allow(dead_code)] pub(super) Tick);

/// Document 003's `Order` (32 bytes); the risk check reads price, quantity and
/// symbol.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub struct Order {
    order_id: u64,
    symbol_id: u32,
    price: f64,
    quantity: i32,
    side: u8,
    kind: u8,
    flags: u16,
}

impl Order {
    #[inline(always)]
    pub(super) fn new(i: u64) -> Order {
        Order {
            order_id: i,
            symbol_id: (i % 64) as u32,
            price: 100.0 + (i % 1000) as f64 * 0.01,
            quantity: 1 + (i % 500) as i32,
            side: (i & 1) as u8,
            kind: 0,
            flags: 0,
        }
    }
}

const _: () = assert!(size_of::<Tick>() == 24 && size_of::<Order>() == 32);

pub(super) fn bug(e: impl std::fmt::Display) -> ! {
    panic!("pool sized for the loop failed: {e}")
}

// ---------------------------------------------------------------------------------
// Arena vs malloc: `iterations` batches of `per` ticks.

/// The arena part's malloc side: `iters` batches of `per` boxed ticks, each batch
/// freed together; ticks. Also run in the allocator contenders' child processes.
pub(super) fn arena_box_loop(timer: Timer, iters: usize, per: usize) -> u64 {
    let t0 = timer.now();
    for i in 0..iters {
        let mut ptrs: Vec<Box<Tick>> = Vec::with_capacity(per);
        for j in 0..per {
            ptrs.push(Box::new(Tick::new((i * per + j) as u64)));
        }
        black_box(&ptrs);
    }
    timer.now() - t0
}

/// The typed-pool part's `Box` side: `n` boxed orders, then all dropped; ticks. Also
/// run in the allocator contenders' child processes.
pub(super) fn typed_box_loop(timer: Timer, n: usize) -> u64 {
    let mut v: Vec<Box<Order>> = Vec::with_capacity(n);
    let t0 = timer.now();
    for i in 0..n as u64 {
        v.push(Box::new(Order::new(i)));
    }
    v.clear();
    timer.now() - t0
}

/// One repeat: (malloc ticks, arena ticks) of the whole loop.
pub fn arena_vs_malloc(cfg: &Config, timer: Timer, malloc_first: bool) -> Result<(u64, u64)> {
    let (iters, per) = (cfg.arena_iterations, cfg.arena_batch);
    let cpu = cfg.placement.first();
    let malloc = || {
        on_core(timer, stop::flag(), cpu, move || {
            arena_box_loop(timer, iters, per)
        })
    };
    let arena = || {
        on_core(timer, stop::flag(), cpu, move || {
            let t0 = timer.now();
            let mut arena = BumpArena::new(size_of::<Tick>() * per * 2).unwrap_or_else(|e| bug(e));
            for i in 0..iters {
                arena.reset();
                for j in 0..per {
                    let t = arena
                        .try_alloc(Tick::new((i * per + j) as u64))
                        .unwrap_or_else(|_| bug("arena full"));
                    black_box(t);
                }
            }
            timer.now() - t0
        })
    };
    if malloc_first {
        let m = malloc()?;
        Ok((m, arena()?))
    } else {
        let a = arena()?;
        Ok((malloc()?, a))
    }
}

// ---------------------------------------------------------------------------------
// Typed pool vs Box: `n` orders allocated, then all released.

/// One repeat of the typed-pool part, in ticks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TypedSample {
    /// `Box`: allocate all, then drop all.
    pub boxed: u64,
    /// A fresh `Pool<Order>` (made inside the timing, as document 003 does).
    pub pool_fresh: u64,
    /// The same pool's second pass (every block already made and touched).
    pub pool_warm: u64,
}

/// One repeat of the typed-pool part.
pub fn typed_pool_vs_box(cfg: &Config, timer: Timer, box_first: bool) -> Result<TypedSample> {
    let n = cfg.orders_typed;
    let cpu = cfg.placement.first();
    let boxed = || on_core(timer, stop::flag(), cpu, move || typed_box_loop(timer, n));
    let pooled = || {
        on_core(timer, stop::flag(), cpu, move || {
            let mut v = Vec::with_capacity(n);
            let t0 = timer.now();
            let pool =
                Pool::<Order>::new(Capacity::Grow { first_block: 4096 }).unwrap_or_else(|e| bug(e));
            let mut pass = || {
                for i in 0..n as u64 {
                    v.push(
                        pool.try_alloc_raw(Order::new(i))
                            .unwrap_or_else(|_| bug("full")),
                    );
                }
                for r in v.drain(..) {
                    let _ = pool.free(r);
                }
            };
            pass();
            let t1 = timer.now();
            pass();
            let t2 = timer.now();
            (t1 - t0, t2 - t1)
        })
    };
    let (boxed, (fresh, warm)) = if box_first {
        let b = boxed()?;
        (b, pooled()?)
    } else {
        let p = pooled()?;
        (boxed()?, p)
    };
    Ok(TypedSample {
        boxed,
        pool_fresh: fresh,
        pool_warm: warm,
    })
}

// ---------------------------------------------------------------------------------
// Many threads, one pool: each thread allocates `per` orders, then frees them all.

/// A contender of the multi-thread part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shared {
    /// `Pool<Order, LockFree>`: document 003's lock-free pool, ABA-safe.
    LockFree,
    /// `Pool<Order, ThreadCached>`: per-thread magazines.
    ThreadCached,
    /// `Pool<Order, Locked>`: one mutex.
    Locked,
    /// `Box` on the process allocator.
    Malloc,
}

impl Shared {
    /// Every contender, in table order.
    pub const ALL: [Shared; 4] = [
        Shared::LockFree,
        Shared::ThreadCached,
        Shared::Locked,
        Shared::Malloc,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Shared::LockFree => "lock_free",
            Shared::ThreadCached => "thread_cached",
            Shared::Locked => "locked",
            Shared::Malloc => "malloc",
        }
    }
}

/// Document 003's shared pool: one block of 4096 orders to start, growing.
fn shared_pool<P: Policy>() -> Result<Pool<Order, P>> {
    Pool::<Order, P>::new(Capacity::Grow { first_block: 4096 })
        .map_err(|e| Error::Run(format!("pool: {e}")))
}

/// Wall ticks of one repeat of `who`.
pub fn many_threads(cfg: &Config, timer: Timer, who: Shared) -> Result<u64> {
    let (t, per) = (cfg.threads, cfg.per_thread);
    fn shared<P: Policy>(cfg: &Config, timer: Timer, t: usize, per: usize) -> Result<u64>
    where
        Pool<Order, P>: Sync,
    {
        let pool = shared_pool::<P>()?;
        together(timer, stop::flag(), &cfg.placement.threads(), t, |k| {
            let mut held = Vec::with_capacity(per);
            for i in 0..per as u64 {
                held.push(
                    pool.try_alloc_raw(Order::new(k as u64 * 1_000_000_000 + i))
                        .unwrap_or_else(|_| bug("full")),
                );
            }
            for r in held {
                let _ = pool.free(r);
            }
        })
    }
    match who {
        Shared::LockFree => shared::<LockFree>(cfg, timer, t, per),
        Shared::ThreadCached => shared::<ThreadCached>(cfg, timer, t, per),
        Shared::Locked => shared::<Locked>(cfg, timer, t, per),
        Shared::Malloc => together(timer, stop::flag(), &cfg.placement.threads(), t, |k| {
            let mut held = Vec::with_capacity(per);
            for i in 0..per as u64 {
                held.push(Box::new(Order::new(k as u64 * 1_000_000_000 + i)));
            }
            black_box(&held);
        }),
    }
}

/// Operations at least this long are the document's "200 us+ outliers".
pub const OUTLIER_NS: f64 = 200_000.0;

/// Per-operation latency of the multi-thread part: every allocation and every release
/// timed on its own, in a pass of its own beside the timed part in every run (the clock
/// reads would slow the timed part), the contenders alternated with it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outliers {
    /// Operations timed (allocations and releases, all threads, all kept runs).
    pub ops: u64,
    /// Operations that took [`OUTLIER_NS`] or more.
    pub over_200us: u64,
    /// The longest, ns.
    pub max_ns: f64,
    /// `over_200us` of each kept run.
    pub per_run: Vec<u64>,
}

impl Outliers {
    /// Adds one run's pass.
    pub fn add(&mut self, run: &Outliers) {
        self.ops += run.ops;
        self.over_200us += run.over_200us;
        self.max_ns = self.max_ns.max(run.max_ns);
        self.per_run.push(run.over_200us);
    }

    /// Outliers per million operations.
    pub fn per_million(&self) -> f64 {
        self.over_200us as f64 * 1e6 / self.ops.max(1) as f64
    }
}

/// One thread's count of operations of `limit` ticks or more, and its longest, added
/// to the shared totals when the thread is done.
struct Tally<'a> {
    timer: Timer,
    limit: u64,
    over: u64,
    longest: u64,
    totals: &'a (AtomicU64, AtomicU64),
}

impl<'a> Tally<'a> {
    fn new(timer: Timer, totals: &'a (AtomicU64, AtomicU64)) -> Tally<'a> {
        Tally {
            timer,
            limit: timer.ticks_for_ns(OUTLIER_NS),
            over: 0,
            longest: 0,
            totals,
        }
    }

    /// Runs `op`, timed.
    #[inline(always)]
    fn time<R>(&mut self, op: impl FnOnce() -> R) -> R {
        let t0 = self.timer.now();
        let r = op();
        let d = self.timer.now().saturating_sub(t0);
        self.over += u64::from(d >= self.limit);
        self.longest = self.longest.max(d);
        r
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.totals.0.fetch_add(self.over, Ordering::Relaxed);
        self.totals.1.fetch_max(self.longest, Ordering::Relaxed);
    }
}

fn nth_order(k: usize, i: usize) -> Order {
    Order::new(k as u64 * 1_000_000_000 + i as u64)
}

/// The multi-thread part of `who` again, every operation timed: how many took 200 us
/// or more.
pub fn outliers(cfg: &Config, timer: Timer, who: Shared) -> Result<Outliers> {
    let (t, per) = (cfg.threads, cfg.per_thread);
    let totals = (AtomicU64::new(0), AtomicU64::new(0));
    fn pooled<P: Policy>(cfg: &Config, timer: Timer, totals: &(AtomicU64, AtomicU64)) -> Result<u64>
    where
        Pool<Order, P>: Sync,
    {
        let pool = shared_pool::<P>()?;
        let (t, per) = (cfg.threads, cfg.per_thread);
        together(timer, stop::flag(), &cfg.placement.threads(), t, |k| {
            let mut tl = Tally::new(timer, totals);
            let held: Vec<_> = (0..per)
                .map(|i| {
                    tl.time(|| {
                        pool.try_alloc_raw(nth_order(k, i))
                            .unwrap_or_else(|_| bug("full"))
                    })
                })
                .collect();
            for r in held {
                tl.time(|| {
                    let _ = pool.free(r);
                });
            }
        })
    }
    match who {
        Shared::LockFree => pooled::<LockFree>(cfg, timer, &totals)?,
        Shared::ThreadCached => pooled::<ThreadCached>(cfg, timer, &totals)?,
        Shared::Locked => pooled::<Locked>(cfg, timer, &totals)?,
        Shared::Malloc => together(timer, stop::flag(), &cfg.placement.threads(), t, |k| {
            let mut tl = Tally::new(timer, &totals);
            let held: Vec<Box<Order>> = (0..per)
                .map(|i| tl.time(|| Box::new(nth_order(k, i))))
                .collect();
            for b in held {
                tl.time(|| drop(b));
            }
        })?,
    };
    let (over, longest) = totals;
    Ok(Outliers {
        ops: (2 * t * per) as u64,
        over_200us: over.into_inner(),
        max_ns: timer.ns(longest.into_inner()),
        per_run: Vec::new(),
    })
}

// ---------------------------------------------------------------------------------
// Order processing: allocate, check, rest on a book, cancel the oldest.

/// Orders resting on the book at once.
pub const BOOK: usize = 4096;

/// One order-processing repeat: per-order latency in ticks and the loop's ticks.
pub struct Processed {
    /// Per-order latency, ticks.
    pub latency: Latency,
    /// Ticks for all orders, in a pass without per-order clock reads.
    pub total: u64,
}

/// Where orders come from in the order-processing part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `Box<Order>` (malloc/free).
    Malloc,
    /// `Pool<Order>`.
    Pool,
}

impl Source {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Source::Malloc => "malloc",
            Source::Pool => "pool",
        }
    }
}

/// The risk check: notional within the symbol's limit.
#[inline(always)]
fn accept(o: &Order, limits: &[f64; 64]) -> bool {
    o.price * o.quantity as f64 <= limits[o.symbol_id as usize] && o.quantity > 0
}

/// The order-processing loop over `n` orders from `source`: each order allocated,
/// filled, risk-checked, rested on a book of [`BOOK`] orders whose oldest is
/// cancelled (released) to make room. With `latency`, each order is timed from its
/// allocation to the end of the cancel.
#[inline(always)]
fn orders_loop(
    timer: Timer,
    source: Source,
    n: usize,
    limits: &[f64; 64],
    mut latency: Option<&mut Latency>,
) {
    let mut rejected = 0u64;
    macro_rules! run {
        ($book:ident, $make:expr) => {
            for i in 0..n as u64 {
                let t0 = if latency.is_some() { timer.now() } else { 0 };
                let o = $make(i);
                if accept(&o, limits) {
                    if $book.len() == BOOK {
                        drop($book.pop_front());
                    }
                    $book.push_back(o);
                } else {
                    rejected += 1;
                }
                if let Some(l) = latency.as_deref_mut() {
                    l.record(timer.now() - t0);
                }
            }
        };
    }
    match source {
        Source::Malloc => {
            let mut book = std::collections::VecDeque::with_capacity(BOOK);
            run!(book, |i| Box::new(Order::new(i)));
        }
        Source::Pool => {
            let pool = Pool::<Order>::new(Capacity::Fixed(BOOK + 1)).unwrap_or_else(|e| bug(e));
            let mut book = std::collections::VecDeque::with_capacity(BOOK);
            run!(book, |i| pool
                .try_alloc(Order::new(i))
                .unwrap_or_else(|_| bug("full")));
        }
    }
    black_box(rejected);
}

/// One repeat: a pass with every order timed (latency), then a pass without the
/// clock reads (throughput).
pub fn process(cfg: &Config, timer: Timer, source: Source) -> Result<Processed> {
    let n = cfg.orders;
    let cpu = cfg.placement.first();
    let mut limits = [0.0f64; 64];
    for (i, l) in limits.iter_mut().enumerate() {
        *l = 50_000.0 + i as f64 * 1000.0;
    }
    on_core(timer, stop::flag(), cpu, move || {
        let mut latency = Latency::with_unit(Unit::Ticks);
        orders_loop(timer, source, n, &limits, Some(&mut latency));
        let start = timer.now();
        orders_loop(timer, source, n, &limits, None);
        Processed {
            latency,
            total: timer.now() - start,
        }
    })
}
