//! Pool benchmarks: 64-byte objects (document 000's Order size).
//!
//! * `pool_pair`: one thread allocates and frees one object, again and again:
//!   `freelist` (`handoff::pool::Freelist`), `arena` (the rotating arena with both
//!   handles on one thread), `box_system` (`Box` on glibc malloc), `box_mimalloc` (the
//!   same through mimalloc). Time per pair.
//! * `pool_cross_thread`: a producer thread allocates, hands each object through a
//!   `handoff_spsc` ring (capacity 1024) to a consumer thread that frees it:
//!   `return_queue`, `arena`, `box_system`, `box_mimalloc`. Objects per second. The
//!   consumer checks every sequence number.
//! * `policy_interleaved`: document 001's interleaved scenario, one thread allocating
//!   and releasing one object again and again from `handoff::pool::Pool` under each
//!   policy (`single_threaded`, `locked`, `lock_free`, `thread_cached`) and from
//!   `Box` (`box_system`). Time per alloc + release.
//! * `policy_concurrent`: the same loop on both cores at once, sharing one pool (the
//!   thread-safe policies) or the system allocator; aggregate time per alloc + release
//!   (wall time / both threads' operations), document 001's concurrent convention.
//! * After criterion's groups, a paired section alternates contenders back to back and
//!   prints the median per-pair ratio (see benches/spsc.rs for why).
//!
//! Cores: the first two of the process's allowed CPUs, or `HANDOFF_PIN=P,C`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod common;

use common::{both_cores, paired, two_threads, Run};
use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use handoff::pool::policy::{LockFree, Locked, Policy, SingleThreaded, ThreadCached};
use handoff::pool::{arena, return_queue, Capacity, Freelist, Pool};
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A 64-byte, 64-aligned object.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Order {
    seq: u64,
    fill: [u64; 7],
}

const _: () = assert!(std::mem::size_of::<Order>() == 64);

#[inline(always)]
fn order(seq: u64) -> Order {
    Order {
        seq,
        fill: [seq; 7],
    }
}

/// A `Box` whose memory comes from mimalloc while the bench's global allocator stays
/// the system one (stable Rust has no `Box::new_in`).
struct MiBox(std::ptr::NonNull<Order>);

// SAFETY: `MiBox` owns its `Order` like a `Box`; mimalloc frees from any thread.
unsafe impl Send for MiBox {}

impl MiBox {
    #[inline(always)]
    fn new(o: Order) -> MiBox {
        let layout = Layout::new::<Order>();
        // SAFETY: `Order` has a non-zero size.
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) }.cast::<Order>();
        let p = std::ptr::NonNull::new(p).expect("mimalloc: out of memory");
        // SAFETY: `p` is a fresh allocation with `Order`'s layout.
        unsafe { p.as_ptr().write(o) };
        MiBox(p)
    }

    #[inline(always)]
    fn seq(&self) -> u64 {
        // SAFETY: the box owns an initialised `Order`.
        unsafe { self.0.as_ref() }.seq
    }
}

impl Drop for MiBox {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: allocated by `MiMalloc.alloc` with this layout; `Order` needs no drop.
        unsafe { mimalloc::MiMalloc.dealloc(self.0.as_ptr().cast(), Layout::new::<Order>()) };
    }
}

// ---------------------------------------------------------------------- one thread

fn pair_freelist(n: u64) -> Duration {
    let pool = Freelist::<Order>::new(4096).unwrap();
    let t = Instant::now();
    for i in 0..n {
        let o = pool.try_alloc(order(i)).expect("one object live at a time");
        black_box(&*o);
    }
    t.elapsed()
}

fn pair_arena(n: u64) -> Duration {
    let (mut a, mut r) = arena::new::<Order>(arena::Config::default()).unwrap();
    let t = Instant::now();
    for i in 0..n {
        let o = a.try_alloc(order(i)).expect("released at once");
        black_box(&*o);
        r.free(o).expect("same arena");
    }
    t.elapsed()
}

fn pair_box_system(n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        black_box(Box::new(order(i)));
    }
    t.elapsed()
}

fn pair_box_mimalloc(n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        black_box(MiBox::new(order(i)));
    }
    t.elapsed()
}

const PAIR: [(&str, Run); 4] = [
    ("freelist", pair_freelist),
    ("arena", pair_arena),
    ("box_system", pair_box_system),
    ("box_mimalloc", pair_box_mimalloc),
];

fn pool_pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool_pair");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    for (name, run) in PAIR {
        g.bench_function(name, |b| b.iter_custom(run));
    }
    g.finish();
}

// ---------------------------------------------------------------------- across threads

const RING: usize = 1024;

/// The producer allocates with `alloc` (spinning while the pool is exhausted) and
/// pushes; the consumer pops, checks the sequence number and frees with `free`.
fn cross<O: Send, A: FnMut(Order) -> Option<O> + Send, F: FnMut(O) -> u64 + Send>(
    n: u64,
    mut alloc: A,
    mut free: F,
) -> Duration {
    let (mut tx, mut rx) = handoff::spsc::channel::<O>(RING);
    two_threads(
        move || {
            for i in 0..n {
                let mut obj = loop {
                    if let Some(o) = alloc(order(i)) {
                        break o;
                    }
                };
                while let Err(full) = tx.try_push(obj) {
                    obj = full.into_inner();
                }
            }
        },
        move || {
            for i in 0..n {
                let obj = loop {
                    if let Some(o) = rx.try_pop() {
                        break o;
                    }
                };
                let seq = free(obj);
                assert_eq!(seq, i, "object {seq} arrived where {i} was due");
            }
        },
    )
}

fn cross_return_queue(n: u64) -> Duration {
    let (mut a, mut r) = return_queue::new::<Order>(return_queue::Config::default()).unwrap();
    cross(
        n,
        move |o| a.try_alloc(o).ok(),
        move |b| {
            let seq = b.seq;
            r.free(b).expect("same pool");
            seq
        },
    )
}

fn cross_arena(n: u64) -> Duration {
    let (mut a, mut r) = arena::new::<Order>(arena::Config::default()).unwrap();
    cross(
        n,
        move |o| a.try_alloc(o).ok(),
        move |b| {
            let seq = b.seq;
            r.free(b).expect("same arena");
            seq
        },
    )
}

fn cross_box_system(n: u64) -> Duration {
    cross(n, |o| Some(Box::new(o)), |b| b.seq)
}

fn cross_box_mimalloc(n: u64) -> Duration {
    cross(n, |o| Some(MiBox::new(o)), |b| b.seq())
}

const CROSS: [(&str, Run); 4] = [
    ("return_queue", cross_return_queue),
    ("arena", cross_arena),
    ("box_system", cross_box_system),
    ("box_mimalloc", cross_box_mimalloc),
];

fn pool_cross_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool_cross_thread");
    g.throughput(Throughput::Elements(1));
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(4));
    for (name, run) in CROSS {
        g.bench_function(name, |b| b.iter_custom(|iters| run(iters.max(10_000))));
    }
    g.finish();
}

// ---------------------------------------------------------------------- policies

/// Slots of the policy pools: fixed, far more than the loops keep live.
const POLICY_SLOTS: usize = 4096;

/// Document 001's block: 64 bytes with malloc's own alignment, so `Box` takes
/// glibc's plain `malloc(64)` path (an `align(64)` type would take its slower
/// `memalign` path and flatter the pools).
type Block = [u64; 8];

#[inline(always)]
fn block(seq: u64) -> Block {
    [seq; 8]
}

/// One thread: allocate, touch, release, `n` times.
fn interleaved<P: Policy>(n: u64) -> Duration {
    let pool = Pool::<Block, P>::new(Capacity::Fixed(POLICY_SLOTS)).unwrap();
    let t = Instant::now();
    for i in 0..n {
        let Ok(o) = pool.try_alloc(block(i)) else {
            panic!("one object live at a time")
        };
        black_box(&*o);
    }
    t.elapsed()
}

fn interleaved_box(n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        black_box(Box::new(block(i)));
    }
    t.elapsed()
}

/// Both cores at once, `n` operations each, on one shared pool; the time per
/// operation is then wall time / 2n, so the paired section runs `n / 2` per thread.
fn concurrent<P: Policy>(n: u64) -> Duration
where
    Pool<Block, P>: Sync,
{
    let pool = Pool::<Block, P>::new(Capacity::Fixed(POLICY_SLOTS)).unwrap();
    let per = n / 2;
    both_cores(|| {
        for i in 0..per {
            let Ok(o) = pool.try_alloc(block(i)) else {
                panic!("two objects live at a time")
            };
            black_box(&*o);
        }
    })
}

fn concurrent_box(n: u64) -> Duration {
    let per = n / 2;
    both_cores(|| {
        for i in 0..per {
            black_box(Box::new(block(i)));
        }
    })
}

const INTERLEAVED: [(&str, Run); 5] = [
    ("single_threaded", interleaved::<SingleThreaded>),
    ("locked", interleaved::<Locked>),
    ("lock_free", interleaved::<LockFree>),
    ("thread_cached", interleaved::<ThreadCached>),
    ("box_system", interleaved_box),
];

const CONCURRENT: [(&str, Run); 4] = [
    ("locked", concurrent::<Locked>),
    ("lock_free", concurrent::<LockFree>),
    ("thread_cached", concurrent::<ThreadCached>),
    ("box_system", concurrent_box),
];

fn policy_interleaved(c: &mut Criterion) {
    let mut g = c.benchmark_group("policy_interleaved");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    for (name, run) in INTERLEAVED {
        g.bench_function(name, |b| b.iter_custom(run));
    }
    g.finish();
}

fn policy_concurrent(c: &mut Criterion) {
    let mut g = c.benchmark_group("policy_concurrent");
    // One iteration is one operation of either thread.
    g.throughput(Throughput::Elements(1));
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    for (name, run) in CONCURRENT {
        g.bench_function(name, |b| b.iter_custom(|iters| run(iters.max(100_000))));
    }
    g.finish();
}

// ---------------------------------------------------------------------- paired

fn policy_paired() {
    if !common::wanted("policy_paired") {
        return;
    }
    println!("\npolicy_paired: alternating back-to-back runs, medians of per-pair ratios (ns per alloc + release)");
    let n = 20_000_000;
    let one = "interleaved, one thread";
    let both = "concurrent, 2 threads";
    let interleaved_pairs: [[(&str, Run); 2]; 4] = [
        [INTERLEAVED[0], INTERLEAVED[4]],
        [INTERLEAVED[2], INTERLEAVED[1]],
        [INTERLEAVED[3], INTERLEAVED[4]],
        [INTERLEAVED[2], INTERLEAVED[4]],
    ];
    for [a, b] in interleaved_pairs {
        paired(one, "ns", a, b, n, 21, true);
    }
    let concurrent_pairs: [[(&str, Run); 2]; 4] = [
        [CONCURRENT[1], CONCURRENT[0]],
        [CONCURRENT[2], CONCURRENT[3]],
        [CONCURRENT[1], CONCURRENT[3]],
        [CONCURRENT[0], CONCURRENT[3]],
    ];
    for [a, b] in concurrent_pairs {
        paired(both, "ns", a, b, n / 4, 21, true);
    }
}

fn paired_comparison() {
    if !common::wanted("pool_paired") {
        return;
    }
    println!("\npool_paired: alternating back-to-back runs, medians of per-pair ratios");
    let n = 2_000_000;
    paired(
        "across threads (M objects/s)",
        "M/s",
        ("return_queue", cross_return_queue),
        ("box_system", cross_box_system),
        n,
        21,
        false,
    );
    paired(
        "across threads (M objects/s)",
        "M/s",
        ("return_queue", cross_return_queue),
        ("box_mimalloc", cross_box_mimalloc),
        n,
        21,
        false,
    );
    paired(
        "across threads (M objects/s)",
        "M/s",
        ("arena", cross_arena),
        ("box_system", cross_box_system),
        n,
        21,
        false,
    );
    paired(
        "one thread (ns per pair)",
        "ns",
        ("freelist", pair_freelist),
        ("box_system", pair_box_system),
        20_000_000,
        21,
        true,
    );
    paired(
        "one thread (ns per pair)",
        "ns",
        ("freelist", pair_freelist),
        ("box_mimalloc", pair_box_mimalloc),
        20_000_000,
        21,
        true,
    );
}

criterion_group!(
    benches,
    pool_pair,
    pool_cross_thread,
    policy_interleaved,
    policy_concurrent
);

fn main() {
    benches();
    paired_comparison();
    policy_paired();
    Criterion::default().configure_from_args().final_summary();
}
