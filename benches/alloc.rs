//! Allocator benchmarks: 64-byte blocks (document 000's Order size) through four
//! allocators called directly as `GlobalAlloc` values, so one binary compares them
//! (the bench's own global allocator stays the system one):
//! `handoff` (handoff-alloc), `system` (glibc malloc), `mimalloc`, `jemalloc`
//! (tikv-jemallocator).
//!
//! * `alloc_pair`: one thread allocates a block, writes it, frees it, again and again.
//!   Time per alloc + free pair.
//! * `alloc_cross_thread`: a producer thread allocates and writes each block and hands
//!   it through a `handoff_spsc` ring (capacity 1024) to a consumer thread, which
//!   checks its sequence number and frees it: every free is a remote free. Blocks per
//!   second.
//! * After criterion's groups, a paired section alternates `handoff` with each other
//!   allocator back to back and prints the median per-pair ratio (see benches/spsc.rs
//!   for why: this VM's speed drifts between runs, a pair's two halves share the drift).
//!
//! Cores: the first two of the process's allowed CPUs, or `HANDOFF_PIN=P,C`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod common;

use common::{paired, two_threads, Run};
use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::{Duration, Instant};

const LAYOUT: Layout = match Layout::from_size_align(64, 8) {
    Ok(l) => l,
    Err(_) => panic!("a valid layout"),
};

#[inline(always)]
fn make<A: GlobalAlloc>(a: &A, seq: u64) -> *mut u64 {
    // SAFETY: a valid, non-zero layout.
    let p = unsafe { a.alloc(LAYOUT) }.cast::<u64>();
    assert!(!p.is_null(), "out of memory");
    // SAFETY: a fresh 64-byte block, 8-aligned: eight words.
    unsafe {
        for w in 0..8 {
            p.add(w).write(seq + w as u64);
        }
    }
    p
}

fn pair<A: GlobalAlloc>(a: A, n: u64) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        let p = make(&a, i);
        black_box(p);
        // SAFETY: allocated just above with `LAYOUT`.
        unsafe { a.dealloc(p.cast(), LAYOUT) };
    }
    t.elapsed()
}

/// The block's address as a plain number, so it can cross threads in the ring.
struct Handed(usize);

fn cross<A: GlobalAlloc + Sync>(a: &'static A, n: u64) -> Duration {
    let (mut tx, mut rx) = handoff::spsc::channel::<Handed>(1024);
    two_threads(
        move || {
            for i in 0..n {
                let mut item = Handed(make(a, i) as usize);
                while let Err(full) = tx.try_push(item) {
                    item = full.into_inner();
                }
            }
        },
        move || {
            for i in 0..n {
                let Handed(p) = loop {
                    if let Some(x) = rx.try_pop() {
                        break x;
                    }
                };
                let p = p as *mut u64;
                // SAFETY: the producer wrote the block before pushing its address; the
                // ring's pop orders this read after that write.
                let seq = unsafe { p.read() };
                assert_eq!(seq, i, "block {seq} arrived where {i} was due");
                // SAFETY: allocated by the producer with `LAYOUT`; nobody else has it.
                unsafe { a.dealloc(p.cast(), LAYOUT) };
            }
        },
    )
}

fn pair_handoff(n: u64) -> Duration {
    pair(handoff::alloc::HandoffAlloc, n)
}
fn pair_system(n: u64) -> Duration {
    pair(System, n)
}
fn pair_mimalloc(n: u64) -> Duration {
    pair(mimalloc::MiMalloc, n)
}
fn pair_jemalloc(n: u64) -> Duration {
    pair(tikv_jemallocator::Jemalloc, n)
}
fn cross_handoff(n: u64) -> Duration {
    cross(&handoff::alloc::HandoffAlloc, n)
}
fn cross_system(n: u64) -> Duration {
    cross(&System, n)
}
fn cross_mimalloc(n: u64) -> Duration {
    cross(&mimalloc::MiMalloc, n)
}
fn cross_jemalloc(n: u64) -> Duration {
    cross(&tikv_jemallocator::Jemalloc, n)
}

const PAIR: [(&str, Run); 4] = [
    ("handoff", pair_handoff),
    ("system", pair_system),
    ("mimalloc", pair_mimalloc),
    ("jemalloc", pair_jemalloc),
];

const CROSS: [(&str, Run); 4] = [
    ("handoff", cross_handoff),
    ("system", cross_system),
    ("mimalloc", cross_mimalloc),
    ("jemalloc", cross_jemalloc),
];

fn alloc_pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc_pair");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    for (name, run) in PAIR {
        g.bench_function(name, |b| b.iter_custom(run));
    }
    g.finish();
}

fn alloc_cross_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc_cross_thread");
    g.throughput(Throughput::Elements(1));
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    for (name, run) in CROSS {
        g.bench_function(name, |b| b.iter_custom(run));
    }
    g.finish();
}

fn alloc_paired() {
    if !common::wanted("alloc_paired") {
        return;
    }
    println!("\nalloc_paired: alternating back-to-back runs, medians of per-pair ratios");
    for other in &PAIR[1..] {
        paired(
            "one thread (ns per pair)",
            "ns",
            PAIR[0],
            *other,
            20_000_000,
            21,
            true,
        );
    }
    for other in &CROSS[1..] {
        paired(
            "across threads (M blocks/s)",
            "M/s",
            CROSS[0],
            *other,
            2_000_000,
            21,
            false,
        );
    }
}

criterion_group!(benches, alloc_pair, alloc_cross_thread);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    alloc_paired();
}
