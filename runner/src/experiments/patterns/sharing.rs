//! Two of document 003's lessons measured: cache-line alignment against false sharing
//! (lesson 8: two counters, each written by its own thread, in one cache line and then
//! in two), and jemalloc as a better default than glibc malloc (lesson 6: the same
//! batches of orders allocated and freed in a child process whose allocator is glibc,
//! then one whose allocator is jemalloc). Also the arena's and the typed pool's `Box`
//! loops under mimalloc and handoff-alloc, each in a child process of its own (the
//! pools against the best general allocators; a project addition).

use super::fragment;
use super::work::{arena_box_loop, typed_box_loop, Order};
use super::Config;
use crate::lab::error::{Error, Result};
use crate::lab::harness::{on_core, together};
use crate::lab::measure::median_part;
use crate::lab::{child, stop};
use crossbeam_utils::CachePadded;
use handoff_clock::Timer;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Two counters in one cache line.
#[repr(C, align(64))]
#[derive(Default)]
struct Packed {
    counters: [AtomicU64; 2],
}

/// Two counters, each on a cache line of its own.
#[derive(Default)]
struct Padded {
    counters: [CachePadded<AtomicU64>; 2],
}

/// Wall ticks for two threads (on the placement's first two cores) to each increment
/// its own counter `n` times, the counters `padded` onto lines of their own or packed
/// into one. Each increment is a load and a store of the thread's own counter (no
/// read-modify-write instruction): what a plain per-thread statistic does. Checks
/// that every increment landed.
pub fn false_sharing(cfg: &Config, timer: Timer, n: u64, padded: bool) -> Result<u64> {
    let pins = cfg.placement.threads();
    let bump = |c: &AtomicU64| {
        for _ in 0..n {
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    };
    let (ticks, got) = if padded {
        let p = Padded::default();
        let t = together(timer, stop::flag(), &pins, 2, |k| bump(&p.counters[k]))?;
        (t, [0, 1].map(|k| p.counters[k].load(Ordering::Relaxed)))
    } else {
        let p = Packed::default();
        let t = together(timer, stop::flag(), &pins, 2, |k| bump(&p.counters[k]))?;
        (t, [0, 1].map(|k| p.counters[k].load(Ordering::Relaxed)))
    };
    if got != [n, n] {
        return Err(Error::Run(format!(
            "false sharing: counters ended at {got:?}, expected {n} each"
        )));
    }
    Ok(ticks)
}

/// The child task that runs [`general_batches`] under the child's allocator.
pub const CHILD_TASK: &str = "patterns";

/// `orders` orders allocated in batches of 1000 and freed in allocation order, with
/// this process's allocator; the ticks the whole loop takes at its median pace. The loop
/// (about 15 ms) is timed in parts that end on a whole batch
/// (`lab::measure::median_part`) and the median part's ticks per order, times `orders`,
/// is the figure: a host pause (0.3-4 ms, several a second on a VM) lengthens the part
/// it falls in, not the repeat (one pair of a run of 2026-12-05 read 1.74x against
/// 1.09-1.16x for the other eleven).
fn general_batches(timer: Timer, orders: u64) -> u64 {
    const BATCH: u64 = 1000;
    let mut held: Vec<Box<Order>> = Vec::with_capacity(BATCH as usize);
    let mut i = 0;
    // Every batch but the last is 1000 orders, as in one pass.
    let pace = median_part(
        || timer.now(),
        orders,
        BATCH,
        |m| {
            let end = i + m;
            while i < end {
                for _ in 0..BATCH.min(end - i) {
                    held.push(Box::new(Order::new(i)));
                    i += 1;
                }
                black_box(&held);
                held.clear();
            }
        },
    );
    (pace * orders as f64).round() as u64
}

/// What the child is asked: [`general_batches`] (timed), the fragmentation workload,
/// one of the two passes of the simulated L1 count (run under callgrind), or the
/// arena's and the typed pool's `Box` loops (timed, [`boxes`]).
const JOB_BATCHES: u64 = 0;
const JOB_FRAGMENTATION: u64 = 1;
const JOB_L1_POOL: u64 = 2;
const JOB_L1_BOX: u64 = 3;
const JOB_BOXES: u64 = 4;

/// The functions whose cache events callgrind collects (`--toggle-collect`), by name.
pub const L1_COUNTED: &str = "*l1_counted_*";

/// `n` orders allocated from `pool` and released.
#[inline(always)]
fn pool_pass<'p>(
    pool: &'p handoff_pool::Pool<Order>,
    held: &mut Vec<handoff_pool::PooledRaw<'p, Order>>,
    n: u64,
) {
    for i in 0..n {
        held.push(
            pool.try_alloc_raw(Order::new(i))
                .unwrap_or_else(|_| super::work::bug("full")),
        );
    }
    for r in held.drain(..) {
        let _ = pool.free(r);
    }
}

/// The counted pass of the pool: [`pool_pass`] in a function of its own, whose name
/// callgrind's `--toggle-collect` matches.
#[inline(never)]
fn l1_counted_pool<'p>(
    pool: &'p handoff_pool::Pool<Order>,
    held: &mut Vec<handoff_pool::PooledRaw<'p, Order>>,
    n: u64,
) {
    pool_pass(pool, held, n);
}

/// `n` orders boxed and dropped: the counted pass of malloc (one heap block per order
/// is the point, hence `Vec<Box<_>>`).
#[inline(never)]
#[allow(clippy::vec_box)]
fn l1_counted_box(boxes: &mut Vec<Box<Order>>, n: u64) {
    for i in 0..n {
        boxes.push(Box::new(Order::new(i)));
    }
    black_box(&boxes);
    boxes.clear();
}

/// One side of the simulated L1 count: a warm pass (not collected), then the counted
/// one, as `once::l1_misses` does with the CPU's counters.
fn l1_job(pool_side: bool, n: u64) {
    if pool_side {
        let pool =
            handoff_pool::Pool::<Order>::new(handoff_pool::Capacity::Grow { first_block: 4096 })
                .unwrap_or_else(|e| super::work::bug(e));
        let mut held = Vec::with_capacity(n as usize);
        // The warm pass, inlined here, outside the counted function.
        pool_pass(&pool, &mut held, n);
        l1_counted_pool(&pool, &mut held, n);
    } else {
        let mut boxes = Vec::with_capacity(n as usize);
        l1_counted_box(&mut boxes, n);
    }
}

/// The child's side: the job (8 bytes), a count (8 bytes: orders, ticks, or the
/// arena's batches), the timer's frequency bits (8 bytes) and its source (8 bytes: 0
/// the TSC, 1 monotonic), and for [`JOB_BOXES`] three more words (the arena's batch,
/// the typed part's orders, the core); the wall ticks out, or the fragmentation
/// figures.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let word = |k: usize| -> std::result::Result<u64, String> {
        input
            .get(k * 8..k * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| "patterns child: expected 32 bytes (56 for the Box loops)".to_string())
    };
    let (job, count, freq) = (word(0)?, word(1)?, f64::from_bits(word(2)?));
    let source = match word(3)? {
        0 => handoff_clock::Source::Tsc,
        1 => handoff_clock::Source::Monotonic,
        s => return Err(format!("patterns child: unknown clock source {s}")),
    };
    match job {
        JOB_BATCHES => {
            let timer = Timer::with_frequency(source, freq);
            // A first pass warms the allocator's caches and the process's pages; the
            // second is timed.
            general_batches(timer, count);
            Ok(general_batches(timer, count).to_le_bytes().to_vec())
        }
        JOB_BOXES => {
            let timer = Timer::with_frequency(source, freq);
            let (iters, per, n, cpu) = (
                count as usize,
                word(4)? as usize,
                word(5)? as usize,
                word(6)? as usize,
            );
            // As in the parent, on the placement's first core; a first pass of each loop
            // warms the allocator's caches and the process's pages, the second is timed.
            let (arena, typed) = on_core(timer, stop::flag(), cpu, move || {
                arena_box_loop(timer, iters, per);
                let arena = arena_box_loop(timer, iters, per);
                typed_box_loop(timer, n);
                (arena, typed_box_loop(timer, n))
            })
            .map_err(|e| e.to_string())?;
            Ok([arena, typed]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect())
        }
        JOB_FRAGMENTATION => Ok(fragment::tick_processing(count).to_bytes()),
        JOB_L1_POOL | JOB_L1_BOX => {
            l1_job(job == JOB_L1_POOL, count);
            Ok(Vec::new())
        }
        _ => Err(format!("patterns child: unknown job {job}")),
    }
}

/// The input of a child job.
fn job(job: u64, count: u64, timer: Timer) -> Vec<u8> {
    let source = match timer.source() {
        handoff_clock::Source::Tsc => 0,
        handoff_clock::Source::Monotonic => 1,
    };
    [job, count, timer.freq_hz().to_bits(), source]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// The ticks of [`general_batches`] (the whole loop at its median part's pace) in a child whose allocator is `allocator`
/// (`"system"`: glibc malloc, or `"jemalloc"`).
pub fn general(cfg: &Config, timer: Timer, allocator: &str) -> Result<u64> {
    let input = job(JOB_BATCHES, cfg.orders as u64, timer);
    let out = child::run(allocator, CHILD_TASK, allocator, &input)?;
    out.get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| {
            Error::Run(format!(
                "{allocator}: the child returned {} bytes",
                out.len()
            ))
        })
}

/// The arena part's and the typed-pool part's `Box` loops (wall ticks of each) in a
/// child whose allocator is `allocator` (`"mimalloc"` or `"handoff"`), pinned to the
/// placement's first core as the parent's loops are.
pub fn boxes(cfg: &Config, timer: Timer, allocator: &str) -> Result<(u64, u64)> {
    let mut input = job(JOB_BOXES, cfg.arena_iterations as u64, timer);
    for w in [cfg.arena_batch, cfg.orders_typed, cfg.placement.first()] {
        input.extend((w as u64).to_le_bytes());
    }
    let out = child::run(allocator, CHILD_TASK, allocator, &input)?;
    let word = |k: usize| {
        out.get(k * 8..k * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    match (word(0), word(1)) {
        (Some(a), Some(t)) if out.len() == 16 => Ok((a, t)),
        _ => Err(Error::Run(format!(
            "{allocator}: the child returned {} bytes",
            out.len()
        ))),
    }
}

/// Runs one side of the simulated L1 count (the pool's when `pool_side`) in a child
/// under `wrapper` (callgrind); glibc's malloc.
pub fn l1_child(
    wrapper: &[std::ffi::OsString],
    pool_side: bool,
    n: u64,
    timer: Timer,
) -> Result<()> {
    let which = if pool_side { JOB_L1_POOL } else { JOB_L1_BOX };
    child::run_wrapped(
        "callgrind",
        wrapper,
        CHILD_TASK,
        "system",
        &[],
        &job(which, n, timer),
    )?;
    Ok(())
}

/// The fragmentation workload (`fragment`) over `ticks` ticks in a child whose
/// allocator is glibc's.
pub fn fragmentation(timer: Timer, ticks: u64) -> Result<fragment::Fragmentation> {
    let out = child::run(
        "glibc",
        CHILD_TASK,
        "system",
        &job(JOB_FRAGMENTATION, ticks, timer),
    )?;
    fragment::Fragmentation::from_bytes(&out)
        .ok_or_else(|| Error::Run(format!("glibc: the child returned {} bytes", out.len())))
}
