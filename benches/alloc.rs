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
//!   Two lines compare handoff-alloc's pair of `Layout(64, 64)` with over-aligned ones
//!   (`Layout(64, 256)`, `Layout(64, 4096)`, served inside a bigger class's block). One
//!   compares handoff-alloc's pair in its full arena with the same pair in
//!   a reduced arena: each in a child process (this binary again), the second under a
//!   4 GiB address-space limit (`RLIMIT_AS`, as `ulimit -v 4194304` sets), where the
//!   16 TiB arena cannot be reserved and a 1 GiB one is.
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
                    if let Ok(x) = rx.try_pop() {
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

/// One thread allocates a 64-byte block of `layout`, writes it, frees it, `n` times.
#[inline(always)]
fn pair_layout(layout: Layout, n: u64) -> Duration {
    let a = handoff::alloc::HandoffAlloc;
    let t = Instant::now();
    for i in 0..n {
        // SAFETY: a valid, non-zero layout.
        let p = unsafe { a.alloc(layout) }.cast::<u64>();
        assert!(!p.is_null(), "out of memory");
        // SAFETY: a fresh block of at least 64 bytes, aligned to at least 8: eight words.
        unsafe {
            for w in 0..8 {
                p.add(w).write(i + w as u64);
            }
        }
        black_box(p);
        // SAFETY: allocated just above with `layout`.
        unsafe { a.dealloc(p.cast(), layout) };
    }
    t.elapsed()
}
fn pair_align_64(n: u64) -> Duration {
    pair_layout(Layout::from_size_align(64, 64).unwrap(), n)
}
fn pair_align_256(n: u64) -> Duration {
    pair_layout(Layout::from_size_align(64, 256).unwrap(), n)
}
fn pair_align_4096(n: u64) -> Duration {
    pair_layout(Layout::from_size_align(64, 4096).unwrap(), n)
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

/// Set in a child of this bench: run that many handoff-alloc pairs and print the time.
const PAIR_CHILD: &str = "HANDOFF_BENCH_PAIR_CHILD";

/// `pair_handoff(n)` in a child process of this bench, under an address-space limit
/// of `limit` bytes (none: `None`); the pairs' time as the child measured it.
fn pair_in_child(n: u64, limit: Option<u64>) -> Duration {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.env(PAIR_CHILD, n.to_string());
    if let Some(bytes) = limit {
        // SAFETY: between fork and exec the closure makes one system call, which
        // neither allocates nor takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    let out = cmd.output().expect("the bench runs again as a child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child failed: {text}");
    let want = if limit.is_some() {
        "ARENA Reduced"
    } else {
        "ARENA Full"
    };
    assert!(text.contains(want), "the child's arena: {text}");
    let ns: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("PAIR_NS "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no PAIR_NS line from the child: {text}"));
    Duration::from_nanos(ns)
}

/// The child's side of [`pair_in_child`]: the pairs, after a warm-up, and their time.
fn pair_child(n: u64) {
    pair_handoff(n / 10);
    let mode = handoff::alloc::stats().arena_mode;
    let d = pair_handoff(n);
    println!("PAIR_NS {}", d.as_nanos());
    println!("ARENA {mode:?}");
}

fn pair_full_arena(n: u64) -> Duration {
    pair_in_child(n, None)
}
fn pair_reduced_arena(n: u64) -> Duration {
    pair_in_child(n, Some(4 << 30))
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
    for aligned in [
        ("align 256", pair_align_256 as Run),
        ("align 4096", pair_align_4096),
    ] {
        paired(
            "one thread, Layout(64, _)",
            "ns",
            ("align 64", pair_align_64),
            aligned,
            20_000_000,
            21,
            true,
        );
    }
    paired(
        "one thread, arena (ns/pair)",
        "ns",
        ("full", pair_full_arena),
        ("reduced", pair_reduced_arena),
        20_000_000,
        21,
        true,
    );
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
    if let Some(n) = std::env::var(PAIR_CHILD).ok().and_then(|n| n.parse().ok()) {
        pair_child(n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    alloc_paired();
}
