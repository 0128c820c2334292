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
//! * After criterion's groups, a paired section alternates contenders back to back and
//!   prints the median per-pair ratio (see benches/spsc.rs for why).
//!
//! Cores: the first two of the process's allowed CPUs, or `HANDOFF_PIN=P,C`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod common;

use common::{paired, two_threads, Run};
use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use handoff::pool::{arena, return_queue, Freelist};
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
        r.release(o).expect("same arena");
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
            r.release(b).expect("same pool");
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
            r.release(b).expect("same arena");
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

// ---------------------------------------------------------------------- paired

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

criterion_group!(benches, pool_pair, pool_cross_thread);

fn main() {
    benches();
    paired_comparison();
    Criterion::default().configure_from_args().final_summary();
}
