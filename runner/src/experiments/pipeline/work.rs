//! The four allocation strategies and one timed run of any of them: producer ->
//! `handoff_spsc` ring (capacity 1024) -> consumer (risk check, then free), with the
//! background heap thread(s) churning beside them.
//!
//! `malloc` and `mimalloc` run the same `Box` code; the process's global allocator
//! differs. `mimalloc` therefore runs in a child process: the runner re-executes
//! itself with `HANDOFF_ALLOCATOR=mimalloc` (see `main.rs`), the child runs the same
//! roles and sends the raw stamps back, and this process reduces them like any other.

use super::background::{self, BgReport};
use super::order::{self, Order, Risk};
use crate::lab;
use crate::lab::error::{Error, Result};
use crate::lab::harness::{self, wait_due, Role, Start};
use crate::lab::measure::{self, Stamps};
use crate::lab::paced;
use crate::lab::pacer::Schedule;
use crate::lab::stop;
use handoff_clock::{Clock, Timer};
use handoff_pool::{arena, return_queue, ArenaBox, PoolBox};
use handoff_stats::Latency;
use serde::{Deserialize, Serialize};
use std::ops::DerefMut;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// An allocation strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Variant {
    /// `Box<Order>` on the producer, dropped on the consumer, system allocator (glibc).
    Malloc,
    /// `handoff_pool::return_queue`: a local freelist refilled from a return ring.
    FreelistReturnQueue,
    /// `handoff_pool::arena`: four rotating bump arenas with drain counters.
    ArenaBatchHandoff,
    /// `Box<Order>` as `malloc`, with mimalloc as the process's allocator.
    Mimalloc,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 4] = [
        Variant::Malloc,
        Variant::FreelistReturnQueue,
        Variant::ArenaBatchHandoff,
        Variant::Mimalloc,
    ];

    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Malloc => "malloc",
            Variant::FreelistReturnQueue => "freelist-return-queue",
            Variant::ArenaBatchHandoff => "arena-batch-handoff",
            Variant::Mimalloc => "mimalloc",
        }
    }

    /// Looks a variant up by name.
    pub fn from_name(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// Parses `--variants` (comma-separated names, each once).
pub fn parse_variants(s: &str) -> Result<Vec<Variant>> {
    crate::lab::flags::names("variants", s, &Variant::ALL, Variant::name)
}

/// What one run needs (also sent to the mimalloc child, as JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSpec {
    /// Orders to send.
    pub items: usize,
    /// Forward ring capacity.
    pub capacity: usize,
    /// Offered rate; `None` is unpaced.
    pub rate_hz: Option<f64>,
    /// The calibrated clock: reads and conversions.
    pub timer: Timer,
    /// Producer, consumer and background cores (one per background thread).
    pub producer_cpu: usize,
    /// Consumer core.
    pub consumer_cpu: usize,
    /// Background cores, one per background thread (empty: no T_bg).
    pub bg_cpus: Vec<usize>,
    /// Background operations per second, per thread.
    pub bg_rate_hz: f64,
    /// The background threads share a core with the producer or the consumer (they
    /// then work in bursts and sleep between them).
    pub bg_shares_core: bool,
    /// Extra passes of the risk check (calibrated).
    pub risk_rounds: u32,
    /// The velocity window of the risk check, in TSC ticks.
    pub window_ticks: u64,
}

/// The raw result of one run.
#[derive(Debug)]
pub struct RunRaw {
    /// Create stamps (after allocation) and dequeue stamps, reduced by `lab::measure`.
    pub stamps: Stamps,
    /// Stamps just before each allocation.
    pub before_alloc: Vec<u64>,
    /// Stamps after each order was checked and freed.
    pub done: Vec<u64>,
    /// Each background thread's work.
    pub bg: Vec<BgReport>,
    /// Allocations the pool refused (retried until a slot came back).
    pub exhausted: u64,
}

/// Runs `spec.items` orders through `variant` once.
pub fn run_once(variant: Variant, spec: &RunSpec, stop: &AtomicU8) -> Result<RunRaw> {
    match variant {
        Variant::Malloc => roles(spec, stop, BoxAlloc, BoxFree),
        Variant::FreelistReturnQueue => {
            let (a, releaser) = return_queue::new::<Order>(return_queue::Config::default())
                .map_err(|e| Error::Run(format!("return-queue pool: {e}")))?;
            roles(spec, stop, a, FreelistFree { releaser, idle: 0 })
        }
        Variant::ArenaBatchHandoff => {
            let (a, r) = arena::new::<Order>(arena::Config::default())
                .map_err(|e| Error::Run(format!("arena: {e}")))?;
            roles(spec, stop, a, r)
        }
        Variant::Mimalloc => super::child::in_child(spec, stop),
    }
}

/// The producer side of a strategy.
trait Alloc: Send {
    type Obj: DerefMut<Target = Order> + Send;
    /// The object, or the order back when the pool is exhausted.
    fn alloc(&mut self, o: Order) -> std::result::Result<Self::Obj, Order>;
    /// Pool misses so far.
    fn exhausted(&self) -> u64 {
        0
    }
}

/// The consumer side of a strategy.
trait Free: Send {
    type Obj;
    fn free(&mut self, o: Self::Obj);
    /// Called while the consumer waits for the next order.
    fn idle(&mut self) {}
}

struct BoxAlloc;
struct BoxFree;

impl Alloc for BoxAlloc {
    type Obj = Box<Order>;
    #[inline(always)]
    fn alloc(&mut self, o: Order) -> std::result::Result<Box<Order>, Order> {
        Ok(Box::new(o))
    }
}

impl Free for BoxFree {
    type Obj = Box<Order>;
    #[inline(always)]
    fn free(&mut self, o: Box<Order>) {
        drop(o);
    }
}

impl Alloc for return_queue::Allocator<Order> {
    type Obj = PoolBox<Order>;
    #[inline(always)]
    fn alloc(&mut self, o: Order) -> std::result::Result<PoolBox<Order>, Order> {
        self.try_alloc(o).map_err(|e| e.into_inner())
    }
    fn exhausted(&self) -> u64 {
        self.stats().exhausted
    }
}

/// Empty polls in a row after which the freelist's consumer sends back its part batch.
///
/// Sending it on every empty poll cost the forward path 15-30 ns at p50 with the cores
/// ~90 ns apart (four alternated `runner pipeline --headline` runs, 2026-11-24: the
/// freelist 94-104 ns against 74-79 ns without), because at 1 MHz every order then went
/// back on its own. A thousand empty polls (several microseconds) means the producer
/// has stopped sending, which is when a part batch would keep it short.
pub const IDLE_FLUSH_POLLS: u32 = 1024;

/// The freelist's consumer side: the releaser, and the empty polls since the last order.
struct FreelistFree {
    releaser: return_queue::Releaser<Order>,
    idle: u32,
}

impl Free for FreelistFree {
    type Obj = PoolBox<Order>;
    #[inline(always)]
    fn free(&mut self, o: PoolBox<Order>) {
        self.idle = 0;
        if self.releaser.free(o).is_err() {
            unreachable!("one pool per run");
        }
    }
    #[inline(always)]
    fn idle(&mut self) {
        self.idle = self.idle.saturating_add(1);
        if self.idle == IDLE_FLUSH_POLLS {
            self.releaser.flush();
        }
    }
}

impl Alloc for arena::Allocator<Order> {
    type Obj = ArenaBox<Order>;
    #[inline(always)]
    fn alloc(&mut self, o: Order) -> std::result::Result<ArenaBox<Order>, Order> {
        let mut b = self.try_alloc(o).map_err(|e| e.into_inner())?;
        b.arena_idx = b.arena() as u8;
        Ok(b)
    }
    fn exhausted(&self) -> u64 {
        self.stats().exhausted
    }
}

impl Free for arena::Releaser<Order> {
    type Obj = ArenaBox<Order>;
    #[inline(always)]
    fn free(&mut self, o: ArenaBox<Order>) {
        if arena::Releaser::free(self, o).is_err() {
            unreachable!("one arena set per run");
        }
    }
}

enum Out {
    Producer { off: u64, exhausted: u64 },
    Consumer { off: u64, bad: u64 },
    Bg(BgReport),
}

/// The producer, the consumer and the background threads as the harness's roles.
fn roles<A: Alloc, F: Free<Obj = A::Obj>>(
    spec: &RunSpec,
    stop: &AtomicU8,
    mut alloc: A,
    mut free: F,
) -> Result<RunRaw> {
    let n = spec.items;
    let (mut send, mut recv) = (lab::prefaulted(n), lab::prefaulted(n));
    let (mut before, mut done) = (lab::prefaulted(n), lab::prefaulted(n));
    let (mut tx, mut rx) = handoff_spsc::try_channel::<A::Obj>(spec.capacity)
        .map_err(|e| Error::Run(format!("forward ring: {e}")))?;
    let finished = AtomicBool::new(false);
    // The background heaps are filled before the origin, on this thread; each is then
    // moved to its role.
    let heaps: Vec<_> = (0..spec.bg_cpus.len())
        .map(|i| background::prefill(0x9E37 + i as u64))
        .collect();
    let rate = spec.rate_hz;
    let window = spec.window_ticks;
    let rounds = spec.risk_rounds;
    let mut list: Vec<Role<'_, Out>> = Vec::new();
    let (send_ref, before_ref) = (&mut send, &mut before);
    list.push(Role::new(spec.producer_cpu, move |s: Start<'_>| {
        let at = s.stamper();
        let mut sched = s.schedule(rate);
        let mut off = 0;
        for (i, (slot, pre)) in send_ref.iter_mut().zip(before_ref.iter_mut()).enumerate() {
            wait_due(i, &mut sched, s.stop);
            let (t_pre, o1) = at.take();
            let mut order = Order::new(i as u64);
            let mut obj = loop {
                match alloc.alloc(order) {
                    Ok(obj) => break obj,
                    Err(back) => order = back,
                }
            };
            let (t, o2) = at.take();
            obj.ts_create_tsc = t;
            *pre = t_pre;
            *slot = t;
            off += o1 + o2;
            while let Err(full) = tx.try_push(obj) {
                obj = full.into_inner();
            }
        }
        Out::Producer {
            off,
            exhausted: alloc.exhausted(),
        }
    }));
    let (recv_ref, done_ref, finished_ref) = (&mut recv, &mut done, &finished);
    list.push(Role::new(spec.consumer_cpu, move |s: Start<'_>| {
        let at = s.stamper();
        let mut risk = Risk::new(rounds);
        let (mut off, mut bad) = (0, 0);
        for (k, (slot, fin)) in recv_ref.iter_mut().zip(done_ref.iter_mut()).enumerate() {
            let mut obj = loop {
                if let Ok(o) = rx.try_pop() {
                    break o;
                }
                free.idle();
            };
            let (t, o1) = at.take();
            if !obj.is(k as u64) {
                bad += 1;
            }
            risk.check(&mut obj, window);
            free.free(obj);
            let (t_done, o2) = at.take();
            *slot = t;
            *fin = t_done;
            off += o1 + o2;
        }
        finished_ref.store(true, Ordering::Relaxed);
        std::hint::black_box(risk.rejects);
        Out::Consumer { off, bad }
    }));
    for (i, (heap, &cpu)) in heaps.into_iter().zip(&spec.bg_cpus).enumerate() {
        let (bg_rate, shared) = (spec.bg_rate_hz, spec.bg_shares_core);
        list.push(Role::new(cpu, move |s: Start<'_>| {
            Out::Bg(background::churn(
                s,
                heap,
                bg_rate,
                0xB6 + i as u64,
                finished_ref,
                shared,
            ))
        }));
    }
    let (t0, outs) = harness::run(spec.timer, stop, list)?;
    let (mut off_core, mut bad_items, mut exhausted, mut bg) = (0, 0, 0, Vec::new());
    for o in outs {
        match o {
            Out::Producer { off, exhausted: e } => {
                off_core += off;
                exhausted = e;
            }
            Out::Consumer { off, bad } => {
                off_core += off;
                bad_items = bad;
            }
            Out::Bg(r) => bg.push(r),
        }
    }
    Ok(RunRaw {
        stamps: Stamps {
            schedule: Schedule::new(t0, spec.rate_hz, spec.timer),
            send,
            recv,
            off_core,
            bad_items,
        },
        before_alloc: before,
        done,
        bg,
        exhausted,
    })
}

/// One (mode, variant, background rate) cell: its merged runs (`lab::measure`, through
/// `Deref`) and the pipeline's own figures.
pub type Cell = paced::Cell<Variant, Load>;

impl paced::Named for Variant {
    fn name(self) -> &'static str {
        Variant::name(self)
    }
}

/// A pipeline cell's own figures: its background load and the costs on each side.
#[derive(Clone, Debug, Default)]
pub struct Load {
    /// Background operations per second per thread (`None`: no background thread).
    pub bg_rate_hz: Option<f64>,
    /// Background threads.
    pub bg_threads: usize,
    /// Stamp before the allocation -> stamp after it (the producer's allocation cost), ns.
    pub alloc_ns: Latency,
    /// Dequeue -> checked and freed (the consumer's work per order), ns.
    pub service_ns: Latency,
    /// Achieved background operations per second (all threads), per run.
    pub bg_achieved: Vec<f64>,
    /// Pool allocations refused (retried), all runs.
    pub exhausted: u64,
    /// The background work of the run in progress: operations of all threads, and
    /// seconds (each slice's longest-running thread), summed over its slices.
    bg_open: (u64, f64),
}

impl Load {
    /// Nothing measured yet, with `bg_threads` background threads at `bg_rate_hz`
    /// operations per second each (`None`: none).
    pub fn new(bg_rate_hz: Option<f64>, bg_threads: usize) -> Load {
        Load {
            bg_rate_hz,
            bg_threads,
            ..Load::default()
        }
    }
}

impl Cell {
    /// Median achieved background rate over the runs.
    pub fn bg_achieved_hz(&self) -> Option<f64> {
        measure::median(self.extra.bg_achieved.clone())
    }

    /// Adds one slice's allocation and check+free costs, pool misses and background
    /// work to the pipeline's own figures, and returns its stamps for `lab::measure`.
    /// `ends_run`: the slice is its run's last (the run's background rate is kept).
    pub fn add_slice(&mut self, raw: RunRaw, clock: &Clock, ends_run: bool) -> Stamps {
        let load = &mut self.extra;
        for (&pre, &t) in raw.before_alloc.iter().zip(&raw.stamps.send) {
            load.alloc_ns
                .record(clock.ticks_to_ns(t.saturating_sub(pre)));
        }
        for (&r, &d) in raw.stamps.recv.iter().zip(&raw.done) {
            load.service_ns
                .record(clock.ticks_to_ns(d.saturating_sub(r)));
        }
        if !raw.bg.is_empty() {
            load.bg_open.0 += raw.bg.iter().map(|b| b.ops).sum::<u64>();
            load.bg_open.1 += raw.bg.iter().map(|b| b.seconds).fold(0.0, f64::max);
        }
        if ends_run {
            let (ops, seconds) = std::mem::take(&mut load.bg_open);
            if seconds > 0.0 {
                load.bg_achieved.push(ops as f64 / seconds);
            }
        }
        load.exhausted += raw.exhausted;
        raw.stamps
    }
}

/// Measures the risk check on the consumer's core and returns (rounds, ns per check).
pub fn calibrate(cfg: &super::Config, clock: &Clock) -> Result<(u32, f64)> {
    let target = cfg.work_ns;
    let (_, mut out) = harness::run(
        clock.timer(),
        stop::flag(),
        vec![Role::new(cfg.placement.consumer(), |_s| {
            order::calibrate(target, clock)
        })],
    )?;
    Ok(out.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_in_process_variant_delivers_every_order() {
        let cpus = crate::lab::topology::Topology::read().allowed;
        let spec = RunSpec {
            items: 20_000,
            capacity: 64,
            rate_hz: None,
            timer: handoff_clock::Clock::quick().timer(),
            producer_cpu: cpus[0],
            consumer_cpu: cpus[cpus.len() - 1],
            bg_cpus: vec![cpus[0]],
            bg_rate_hz: 1e5,
            bg_shares_core: true,
            risk_rounds: 0,
            window_ticks: 1000,
        };
        let stop = AtomicU8::new(0);
        for v in [
            Variant::Malloc,
            Variant::FreelistReturnQueue,
            Variant::ArenaBatchHandoff,
        ] {
            let raw = run_once(v, &spec, &stop).unwrap();
            assert_eq!(raw.stamps.bad_items, 0, "{v:?}");
            assert!(raw.stamps.recv.iter().all(|&r| r > 0), "{v:?}");
            assert!(
                raw.done.iter().zip(&raw.stamps.recv).all(|(d, r)| d >= r),
                "{v:?}"
            );
            assert_eq!(raw.bg.len(), 1);
        }
    }
}
