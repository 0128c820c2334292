//! Pool benchmarks: 64-byte objects (document 000's Order size).
//!
//! * `pool_pair`: one thread allocates and frees one object, again and again:
//!   `freelist` (`handoff::pool::Freelist`), `arena` (the rotating arena with both
//!   handles on one thread), `box_system` (`Box` on glibc malloc), `box_mimalloc` and
//!   `box_handoff_alloc` (the same through mimalloc and through handoff-alloc, called
//!   directly). Time per pair.
//! * `pool_cross_thread`: a producer thread allocates, hands each object through a
//!   `handoff_spsc` ring (capacity 1024) to a consumer thread that frees it:
//!   `return_queue`, `arena`, `box_system`, `box_mimalloc`, `box_handoff_alloc`.
//!   Objects per second. The consumer checks every sequence number.
//! * `policy_interleaved`: document 001's interleaved scenario, one thread allocating
//!   and releasing one object again and again from `handoff::pool::Pool` under each
//!   policy (`single_threaded`, `locked`, `lock_free`, `thread_cached`) and from
//!   `Box` (`box_system`, `box_mimalloc`, `box_handoff_alloc`). Time per alloc +
//!   release.
//! * `policy_concurrent`: the same loop on both cores at once, sharing one pool (the
//!   thread-safe policies) or the allocator; aggregate time per alloc + release
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

static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
static HANDOFF_ALLOC: handoff::alloc::HandoffAlloc = handoff::alloc::HandoffAlloc;

/// A `Box` whose memory comes from the allocator `A` while the bench's global
/// allocator stays the system one (stable Rust has no `Box::new_in`): mimalloc, or
/// handoff-alloc called directly. Holds `Copy` values only, so dropping it frees the
/// memory and nothing else.
struct HeapBox<T: Copy, A: GlobalAlloc + 'static> {
    ptr: std::ptr::NonNull<T>,
    heap: &'static A,
}

// SAFETY: `HeapBox` owns its `T` like a `Box`; both allocators free from any thread.
unsafe impl<T: Copy + Send, A: GlobalAlloc + Sync> Send for HeapBox<T, A> {}

impl<T: Copy, A: GlobalAlloc> HeapBox<T, A> {
    #[inline(always)]
    fn new(heap: &'static A, value: T) -> Self {
        let layout = Layout::new::<T>();
        // SAFETY: the bench's types have a non-zero size.
        let p = unsafe { heap.alloc(layout) }.cast::<T>();
        let ptr = std::ptr::NonNull::new(p).expect("allocator: out of memory");
        // SAFETY: `ptr` is a fresh allocation with `T`'s layout.
        unsafe { ptr.as_ptr().write(value) };
        HeapBox { ptr, heap }
    }
}

impl<T: Copy, A: GlobalAlloc> std::ops::Deref for HeapBox<T, A> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the box owns an initialised `T`.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Copy, A: GlobalAlloc> Drop for HeapBox<T, A> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: allocated by `self.heap` with this layout; `T: Copy` needs no drop.
        unsafe {
            self.heap
                .dealloc(self.ptr.as_ptr().cast(), Layout::new::<T>())
        };
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

/// The floor: a plain `Vec` of slot addresses, popped and pushed around each object,
/// with no ownership handle, no exhaustion count and no drop guard.
fn pair_vec_stack(n: u64) -> Duration {
    let slab: Vec<std::mem::MaybeUninit<Order>> =
        (0..4096).map(|_| std::mem::MaybeUninit::uninit()).collect();
    let mut free: Vec<*mut Order> = slab.iter().map(|s| s.as_ptr().cast_mut()).collect();
    let t = Instant::now();
    for i in 0..n {
        let p = free.pop().expect("one object live at a time");
        // SAFETY: `p` is a free slot of `slab`, which outlives the loop.
        unsafe { p.write(order(i)) };
        // SAFETY: as above; the slot was just written.
        black_box(unsafe { &*p });
        free.push(p);
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

fn pair_heap<A: GlobalAlloc>(heap: &'static A, n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        black_box(HeapBox::new(heap, order(i)));
    }
    t.elapsed()
}

fn pair_box_mimalloc(n: u64) -> Duration {
    pair_heap(&MIMALLOC, n)
}

fn pair_box_handoff_alloc(n: u64) -> Duration {
    pair_heap(&HANDOFF_ALLOC, n)
}

const PAIR: [(&str, Run); 6] = [
    ("freelist", pair_freelist),
    ("vec_stack", pair_vec_stack),
    ("arena", pair_arena),
    ("box_system", pair_box_system),
    ("box_mimalloc", pair_box_mimalloc),
    ("box_handoff_alloc", pair_box_handoff_alloc),
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
                    if let Ok(o) = rx.try_pop() {
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
    cross(n, |o| Some(HeapBox::new(&MIMALLOC, o)), |b| b.seq)
}

fn cross_box_handoff_alloc(n: u64) -> Duration {
    cross(n, |o| Some(HeapBox::new(&HANDOFF_ALLOC, o)), |b| b.seq)
}

const CROSS: [(&str, Run); 5] = [
    ("return_queue", cross_return_queue),
    ("arena", cross_arena),
    ("box_system", cross_box_system),
    ("box_mimalloc", cross_box_mimalloc),
    ("box_handoff_alloc", cross_box_handoff_alloc),
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

fn interleaved_heap<A: GlobalAlloc>(heap: &'static A, n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        black_box(HeapBox::new(heap, block(i)));
    }
    t.elapsed()
}

fn interleaved_mimalloc(n: u64) -> Duration {
    interleaved_heap(&MIMALLOC, n)
}

fn interleaved_handoff_alloc(n: u64) -> Duration {
    interleaved_heap(&HANDOFF_ALLOC, n)
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

fn concurrent_heap<A: GlobalAlloc + Sync>(heap: &'static A, n: u64) -> Duration {
    let per = n / 2;
    both_cores(|| {
        for i in 0..per {
            black_box(HeapBox::new(heap, block(i)));
        }
    })
}

fn concurrent_mimalloc(n: u64) -> Duration {
    concurrent_heap(&MIMALLOC, n)
}

fn concurrent_handoff_alloc(n: u64) -> Duration {
    concurrent_heap(&HANDOFF_ALLOC, n)
}

const INTERLEAVED: [(&str, Run); 7] = [
    ("single_threaded", interleaved::<SingleThreaded>),
    ("locked", interleaved::<Locked>),
    ("lock_free", interleaved::<LockFree>),
    ("thread_cached", interleaved::<ThreadCached>),
    ("box_system", interleaved_box),
    ("box_mimalloc", interleaved_mimalloc),
    ("box_handoff_alloc", interleaved_handoff_alloc),
];

const CONCURRENT: [(&str, Run); 6] = [
    ("locked", concurrent::<Locked>),
    ("lock_free", concurrent::<LockFree>),
    ("thread_cached", concurrent::<ThreadCached>),
    ("box_system", concurrent_box),
    ("box_mimalloc", concurrent_mimalloc),
    ("box_handoff_alloc", concurrent_handoff_alloc),
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

/// The contender called `name` in `list`.
fn by_name(list: &[(&'static str, Run)], name: &str) -> (&'static str, Run) {
    *list
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no contender {name}"))
}

fn policy_paired() {
    if !common::wanted("policy_paired") {
        return;
    }
    println!("\npolicy_paired: alternating back-to-back runs, medians of per-pair ratios (ns per alloc + release)");
    let n = 20_000_000;
    let one = "interleaved, one thread";
    let both = "concurrent, 2 threads";
    for [a, b] in [
        ["single_threaded", "box_system"],
        ["single_threaded", "box_mimalloc"],
        ["single_threaded", "box_handoff_alloc"],
        ["lock_free", "locked"],
        ["lock_free", "box_system"],
        ["lock_free", "box_mimalloc"],
        ["thread_cached", "box_system"],
        ["thread_cached", "box_mimalloc"],
    ] {
        let (a, b) = (by_name(&INTERLEAVED, a), by_name(&INTERLEAVED, b));
        paired(one, "ns", a, b, n, 21, true);
    }
    for [a, b] in [
        ["lock_free", "locked"],
        ["locked", "box_system"],
        ["lock_free", "box_system"],
        ["lock_free", "box_mimalloc"],
        ["thread_cached", "box_system"],
        ["thread_cached", "box_mimalloc"],
        ["thread_cached", "box_handoff_alloc"],
    ] {
        let (a, b) = (by_name(&CONCURRENT, a), by_name(&CONCURRENT, b));
        paired(both, "ns", a, b, n / 4, 21, true);
    }
}

fn paired_comparison() {
    if !common::wanted("pool_paired") {
        return;
    }
    println!("\npool_paired: alternating back-to-back runs, medians of per-pair ratios");
    for [a, b] in [
        ["return_queue", "box_system"],
        ["return_queue", "box_mimalloc"],
        ["return_queue", "box_handoff_alloc"],
        ["arena", "box_system"],
        ["arena", "box_mimalloc"],
        ["arena", "box_handoff_alloc"],
    ] {
        let (a, b) = (by_name(&CROSS, a), by_name(&CROSS, b));
        paired(
            "across threads (M objects/s)",
            "M/s",
            a,
            b,
            2_000_000,
            21,
            false,
        );
    }
    for [a, b] in [
        ["freelist", "box_system"],
        ["freelist", "box_mimalloc"],
        ["freelist", "box_handoff_alloc"],
    ] {
        let (a, b) = (by_name(&PAIR, a), by_name(&PAIR, b));
        paired("one thread (ns per pair)", "ns", a, b, 20_000_000, 21, true);
    }
}

criterion_group!(
    benches,
    pool_pair,
    pool_cross_thread,
    policy_interleaved,
    policy_concurrent
);

/// `HANDOFF_POOL_COUNT=GROUP/NAME:N` runs that one contender once for `N` items and
/// exits, for instruction counts: under `valgrind --tool=callgrind`, the difference of
/// two runs with different `N`, divided by the difference of the `N`s, is the
/// instructions per item without the setup (docs/pool.md). Groups: `pair`, `cross`,
/// `interleaved`, `concurrent`.
fn count_one(spec: &str) {
    let (what, n) = spec
        .split_once(':')
        .expect("HANDOFF_POOL_COUNT=GROUP/NAME:N");
    let (group, name) = what
        .split_once('/')
        .expect("HANDOFF_POOL_COUNT=GROUP/NAME:N");
    let n: u64 = n.parse().expect("N: a whole number");
    let list: &[(&'static str, Run)] = match group {
        "pair" => &PAIR,
        "cross" => &CROSS,
        "interleaved" => &INTERLEAVED,
        "concurrent" => &CONCURRENT,
        _ => panic!("group {group:?}: one of pair, cross, interleaved, concurrent"),
    };
    let d = by_name(list, name).1(n);
    println!("{group}/{name}: {n} items in {d:?}");
}

fn main() {
    if let Ok(spec) = std::env::var("HANDOFF_POOL_COUNT") {
        count_one(&spec);
        return;
    }
    benches();
    paired_comparison();
    policy_paired();
    Criterion::default().configure_from_args().final_summary();
}
