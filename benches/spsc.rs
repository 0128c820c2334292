//! SPSC ring benchmarks: handoff against rtrb and crossbeam's `ArrayQueue`, measured in
//! the same run on the same two pinned cores.
//!
//! * `spsc_throughput`: 16-byte items, capacity 1024, a producer thread and a consumer
//!   thread pinned to two different cores; time from the producer's start to the
//!   consumer's last item, reported per item and as items/s. The consumer checks every
//!   sequence number, so a lost, duplicated or reordered item fails the bench.
//! * `spsc_round_trip`: ping-pong through two rings (one each way); time per round trip.
//! * After criterion's groups, a paired comparison: handoff and rtrb run alternately,
//!   back to back, many times, and the median of the per-pair ratios is printed. On a
//!   shared or virtualised host the speed of cross-core traffic drifts within seconds,
//!   so ratios of neighbouring runs are steadier than two separate criterion groups.
//!
//! Both sides spin on a failed push or pop without `pause`, as the source document's
//! harness does (`while (!q.try_push(tick)) { /* spin */ }`). (On KVM guests a tight
//! `pause` loop triggers pause-loop exits that collapse every ring's throughput.)
//!
//! Cores: the first two of the process's allowed CPUs, or `HANDOFF_PIN=P,C`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::hint::black_box;
mod common;

use common::{paired, two_threads, Run};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, BenchmarkId, Criterion, SamplingMode, Throughput};

const CAPACITY: usize = 1024;
/// Items per batch for `handoff_batch`.
const BATCH: usize = 64;

/// The documents' 16-byte market tick.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Tick {
    seq: u64,
    price: u64,
}

const _: () = assert!(std::mem::size_of::<Tick>() == 16);

#[inline(always)]
fn tick(seq: u64) -> Tick {
    Tick {
        seq,
        price: seq ^ 0x5a5a,
    }
}

#[inline(always)]
fn check(t: &Tick, expected: u64) {
    assert!(
        t.seq == expected,
        "item {} arrived where {expected} was due",
        t.seq
    );
}

// ---------------------------------------------------------------------- contenders

/// The sending half of a contender. Implementations only forward to the queue, so every
/// contender runs the same generic harness code around its own push.
trait Tx: Send {
    fn push(&mut self, t: Tick) -> Result<(), Tick>;
}

/// The receiving half of a contender.
trait Rx: Send {
    fn pop(&mut self) -> Option<Tick>;
}

impl Tx for handoff::spsc::Producer<Tick> {
    #[inline(always)]
    fn push(&mut self, t: Tick) -> Result<(), Tick> {
        self.try_push(t).map_err(|e| e.into_inner())
    }
}

impl Rx for handoff::spsc::Consumer<Tick> {
    #[inline(always)]
    fn pop(&mut self) -> Option<Tick> {
        self.try_pop()
    }
}

impl Tx for rtrb::Producer<Tick> {
    #[inline(always)]
    fn push(&mut self, t: Tick) -> Result<(), Tick> {
        rtrb::Producer::push(self, t).map_err(|rtrb::PushError::Full(t)| t)
    }
}

impl Rx for rtrb::Consumer<Tick> {
    #[inline(always)]
    fn pop(&mut self) -> Option<Tick> {
        rtrb::Consumer::pop(self).ok()
    }
}

/// crossbeam's `ArrayQueue` is multi-producer multi-consumer: both halves are an `Arc`.
struct Crossbeam(Arc<crossbeam_queue::ArrayQueue<Tick>>);

impl Tx for Crossbeam {
    #[inline(always)]
    fn push(&mut self, t: Tick) -> Result<(), Tick> {
        self.0.push(t)
    }
}

impl Rx for Crossbeam {
    #[inline(always)]
    fn pop(&mut self) -> Option<Tick> {
        self.0.pop()
    }
}

fn handoff_ring() -> (handoff::spsc::Producer<Tick>, handoff::spsc::Consumer<Tick>) {
    handoff::spsc::channel(CAPACITY)
}

fn rtrb_ring() -> (rtrb::Producer<Tick>, rtrb::Consumer<Tick>) {
    rtrb::RingBuffer::new(CAPACITY)
}

fn crossbeam_ring() -> (Crossbeam, Crossbeam) {
    let q = Arc::new(crossbeam_queue::ArrayQueue::new(CAPACITY));
    (Crossbeam(Arc::clone(&q)), Crossbeam(q))
}

#[inline(always)]
fn push_spin(tx: &mut impl Tx, mut t: Tick) {
    while let Err(back) = tx.push(t) {
        t = back;
    }
}

#[inline(always)]
fn pop_spin(rx: &mut impl Rx) -> Tick {
    loop {
        if let Some(t) = rx.pop() {
            return t;
        }
    }
}

// ---------------------------------------------------------------------- throughput

/// `n` single items from a producer thread to a consumer thread.
fn single<P: Tx, C: Rx>((mut tx, mut rx): (P, C), n: u64) -> Duration {
    two_threads(
        move || {
            for i in 0..n {
                push_spin(&mut tx, tick(i));
            }
        },
        move || {
            for i in 0..n {
                check(&pop_spin(&mut rx), i);
            }
        },
    )
}

/// Zero-copy batches of up to `BATCH`: the producer writes ticks straight into the
/// slots and publishes once per chunk; the consumer checks them in place and releases
/// once per chunk.
fn handoff_batch(n: u64) -> Duration {
    let (mut tx, mut rx) = handoff_ring();
    two_threads(
        move || {
            let mut next = 0u64;
            while next < n {
                let want = BATCH.min((n - next) as usize);
                let mut chunk = tx.write_chunk(want);
                let k = chunk.extend((next..next + chunk.len() as u64).map(tick)) as u64;
                chunk.commit();
                next += k;
            }
        },
        move || {
            let mut next = 0u64;
            while next < n {
                let mut chunk = rx.read_chunk(BATCH);
                let (a, b) = chunk.as_slices();
                for t in a.iter().chain(b) {
                    check(t, next);
                    next += 1;
                }
                let len = chunk.len();
                chunk.consume(len);
            }
        },
    )
}

fn handoff_single(n: u64) -> Duration {
    single(handoff_ring(), n)
}

fn rtrb_single(n: u64) -> Duration {
    single(rtrb_ring(), n)
}

fn crossbeam_single(n: u64) -> Duration {
    single(crossbeam_ring(), n)
}

const THROUGHPUT: [(&str, Run); 4] = [
    ("handoff", handoff_single),
    ("handoff_batch", handoff_batch),
    ("rtrb", rtrb_single),
    ("crossbeam_array_queue", crossbeam_single),
];

fn configure<M: criterion::measurement::Measurement>(g: &mut criterion::BenchmarkGroup<'_, M>) {
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
}

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_throughput");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));
    for (name, run) in THROUGHPUT {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| black_box(run(iters)))
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------- round trip

/// Ping-pong: the pinger sends tick `i` through one ring, the echo thread sends it back
/// through the other, `n` times.
fn round_trip_through<P: Tx, C: Rx>(make: fn() -> (P, C), n: u64) -> Duration {
    let (mut ping_tx, mut ping_rx) = make();
    let (mut pong_tx, mut pong_rx) = make();
    two_threads(
        move || {
            for i in 0..n {
                push_spin(&mut ping_tx, tick(i));
                check(&pop_spin(&mut pong_rx), i);
            }
        },
        move || {
            for _ in 0..n {
                let t = pop_spin(&mut ping_rx);
                push_spin(&mut pong_tx, t);
            }
        },
    )
}

fn handoff_round_trip(n: u64) -> Duration {
    round_trip_through(handoff_ring, n)
}

fn rtrb_round_trip(n: u64) -> Duration {
    round_trip_through(rtrb_ring, n)
}

fn round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_round_trip");
    configure(&mut g);
    for (name, run) in [
        ("handoff", handoff_round_trip as Run),
        ("rtrb", rtrb_round_trip),
    ] {
        g.bench_function(name, |b| b.iter_custom(|iters| black_box(run(iters))));
    }
    g.finish();
}

// ---------------------------------------------------------------------- paired

fn paired_comparison() {
    // Honour a criterion name filter: run the paired section only when asked for, or
    // when no filter is given.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = filter.is_empty() || filter.iter().any(|f| "spsc_paired".contains(f.as_str()));
    if !wanted || std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    println!("\nspsc_paired: alternating back-to-back runs, medians of per-pair ratios");
    paired(
        "throughput (M items/s)",
        "M/s",
        ("handoff", handoff_single),
        ("rtrb", rtrb_single),
        20_000_000,
        21,
        false,
    );
    paired(
        "throughput (M items/s)",
        "M/s",
        ("handoff_batch", handoff_batch),
        ("rtrb", rtrb_single),
        20_000_000,
        21,
        false,
    );
    paired(
        "round trip (ns)",
        "ns",
        ("handoff", handoff_round_trip),
        ("rtrb", rtrb_round_trip),
        500_000,
        21,
        true,
    );
}

criterion_group!(benches, throughput, round_trip);

fn main() {
    benches();
    paired_comparison();
    Criterion::default().configure_from_args().final_summary();
}
