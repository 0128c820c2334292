//! SPSC ring benchmarks: handoff (the default ring, the ring with slipping asked for,
//! and `handoff_spsc::stamped`) against rtrb and crossbeam's `ArrayQueue`, measured in
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
//!   The paired section's parts, each selectable by name (criterion's substring
//!   filter: `spsc_paired/single` selects all four single-item parts):
//!   `spsc_paired/single` and `spsc_paired/single_u64` (the default ring, whose calls
//!   never wait, against rtrb, on the 16-byte tick and on a bare `u64`),
//!   `spsc_paired/single_slipping` and `spsc_paired/single_u64_slipping` (the ring made
//!   with `Options::slipping`, whose streaming calls wait up to about 5 us),
//!   `spsc_paired/observed` (the default ring read by a monitor thread once a
//!   millisecond, against the same ring unwatched), `spsc_paired/fan_in` (`FanIn` with
//!   two producers against crossbeam's `ArrayQueue`), `spsc_paired/batch` (handoff's
//!   chunks against rtrb's chunks, with the chunk sizes each side actually got),
//!   `spsc_paired/batch_vs_single` (handoff's chunks against rtrb's single items: what
//!   any chunk API gains), `spsc_paired/round_trip`, and the stamped ring against rtrb,
//!   `spsc_paired/stamped_single` and `spsc_paired/stamped_round_trip`. Under each
//!   result a second line gives the median ratio per placement of the two cores (the
//!   round trip of a cache line between them, probed before and after every pair) and
//!   the pairs during which the host moved them.
//! * Every single-item run also counts failed pushes and failed pops per item and samples
//!   the ring's occupancy; the medians are printed under the single-item pair (and after
//!   `spsc_throughput` for all three contenders). `HANDOFF_SPSC_WORK=P,C` adds busy work
//!   per item on either side to put the pair at one end of the ring on purpose
//!   (docs/spsc-notebook.md, "Regimes").
//!
//! The bench's loops retry a failed push or pop at once, with no `pause` of their own, as
//! the source document's harness does (`while (!q.try_push(tick)) { /* spin */ }`).
//! handoff-spsc's consumer calls spend one `pause` themselves when they find the ring
//! empty. What a `pause` in these loops does was measured on the KVM guests
//! (docs/spsc-notebook.md, "Regimes" and "The empty poll's pause"): per failed call it cut failed
//! calls to 0.02-0.10 per item and left single-item throughput where it was; per empty
//! poll, inside the ring, it made round trips 1.3x faster. One earlier run with
//! `spin_loop()` in both retry loops gave about 250 M items/s for every ring
//! (docs/methodology.md).
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
/// Items per chunk for `handoff_batch` and `rtrb_batch`.
const BATCH: usize = 64;

/// The documents' 16-byte market tick.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Tick {
    seq: u64,
    price: u64,
}

const _: () = assert!(std::mem::size_of::<Tick>() == 16);

/// What the single-item runs carry: the 16-byte tick, or a bare `u64`. Each item
/// carries its sequence number, which the consumer checks.
trait Item: Copy + Send + 'static {
    fn make(seq: u64) -> Self;
    fn seq(&self) -> u64;
}

impl Item for Tick {
    #[inline(always)]
    fn make(seq: u64) -> Self {
        Tick {
            seq,
            price: seq ^ 0x5a5a,
        }
    }
    #[inline(always)]
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl Item for u64 {
    #[inline(always)]
    fn make(seq: u64) -> Self {
        seq
    }
    #[inline(always)]
    fn seq(&self) -> u64 {
        *self
    }
}

#[inline(always)]
fn tick(seq: u64) -> Tick {
    Tick::make(seq)
}

#[inline(always)]
fn check<T: Item>(t: &T, expected: u64) {
    assert!(
        t.seq() == expected,
        "item {} arrived where {expected} was due",
        t.seq()
    );
}

// ---------------------------------------------------------------------- contenders

/// The sending half of a contender. Implementations only forward to the queue, so every
/// contender runs the same generic harness code around its own push.
trait Tx<T>: Send {
    fn push(&mut self, t: T) -> Result<(), T>;
}

/// The receiving half of a contender.
trait Rx<T>: Send {
    fn pop(&mut self) -> Option<T>;
    /// Items in the queue now (loads the producer's index).
    fn occupancy(&self) -> usize;
}

impl<T: Send> Tx<T> for handoff::spsc::Producer<T> {
    #[inline(always)]
    fn push(&mut self, t: T) -> Result<(), T> {
        self.try_push(t).map_err(|e| e.into_inner())
    }
}

impl<T: Send> Rx<T> for handoff::spsc::Consumer<T> {
    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }

    fn occupancy(&self) -> usize {
        self.len()
    }
}

impl<T: Send> Tx<T> for handoff::spsc::stamped::Producer<T> {
    #[inline(always)]
    fn push(&mut self, t: T) -> Result<(), T> {
        self.try_push(t).map_err(|e| e.into_inner())
    }
}

impl<T: Send> Rx<T> for handoff::spsc::stamped::Consumer<T> {
    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }

    fn occupancy(&self) -> usize {
        self.len()
    }
}

impl<T: Send> Tx<T> for rtrb::Producer<T> {
    #[inline(always)]
    fn push(&mut self, t: T) -> Result<(), T> {
        rtrb::Producer::push(self, t).map_err(|rtrb::PushError::Full(t)| t)
    }
}

impl<T: Send> Rx<T> for rtrb::Consumer<T> {
    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        rtrb::Consumer::pop(self).ok()
    }

    fn occupancy(&self) -> usize {
        self.slots()
    }
}

/// crossbeam's `ArrayQueue` is multi-producer multi-consumer: both halves are an `Arc`.
struct Crossbeam<T>(Arc<crossbeam_queue::ArrayQueue<T>>);

impl<T: Send> Tx<T> for Crossbeam<T> {
    #[inline(always)]
    fn push(&mut self, t: T) -> Result<(), T> {
        self.0.push(t)
    }
}

impl<T: Send> Rx<T> for Crossbeam<T> {
    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        self.0.pop()
    }

    fn occupancy(&self) -> usize {
        self.0.len()
    }
}

/// The default ring: no call waits.
fn handoff_ring<T>() -> (handoff::spsc::Producer<T>, handoff::spsc::Consumer<T>) {
    handoff::spsc::channel(CAPACITY)
}

/// The ring with temporal slipping asked for (`Options::slipping`): a streaming
/// handle waits up to about 5 us inside `try_push` / `try_pop` for the other side to
/// get ahead.
fn slipping_ring<T>() -> (handoff::spsc::Producer<T>, handoff::spsc::Consumer<T>) {
    let (tx, rx) =
        handoff::spsc::channel_with(CAPACITY, handoff::spsc::Options::new().slipping(true));
    assert!(tx.slips() && rx.slips());
    (tx, rx)
}

fn stamped_ring<T>() -> (
    handoff::spsc::stamped::Producer<T>,
    handoff::spsc::stamped::Consumer<T>,
) {
    handoff::spsc::stamped::channel(CAPACITY)
}

fn rtrb_ring<T>() -> (rtrb::Producer<T>, rtrb::Consumer<T>) {
    rtrb::RingBuffer::new(CAPACITY)
}

fn crossbeam_ring<T>() -> (Crossbeam<T>, Crossbeam<T>) {
    let q = Arc::new(crossbeam_queue::ArrayQueue::new(CAPACITY));
    (Crossbeam(Arc::clone(&q)), Crossbeam(q))
}

/// Pushes `t`, retrying until it fits; returns how many attempts failed.
#[inline(always)]
fn push_spin<T>(tx: &mut impl Tx<T>, mut t: T) -> u64 {
    let mut failed = 0;
    while let Err(back) = tx.push(t) {
        t = back;
        failed += 1;
    }
    failed
}

/// Pops one item, retrying until there is one; also returns how many attempts failed.
#[inline(always)]
fn pop_spin<T>(rx: &mut impl Rx<T>) -> (T, u64) {
    let mut failed = 0;
    loop {
        if let Some(t) = rx.pop() {
            return (t, failed);
        }
        failed += 1;
    }
}

// ---------------------------------------------------------------------- diagnostics

/// Extra work per item on the producer and the consumer side of the single-item runs,
/// in iterations of an empty loop (about 1 ns each): `HANDOFF_SPSC_WORK=P,C`, default
/// `0,0`. Slowing one side on purpose decides which end of the ring the pair settles
/// at (a slower consumer keeps it near full, a slower producer near empty), so each
/// regime can be measured for every contender; see docs/spsc-notebook.md.
fn work_per_item() -> [u32; 2] {
    static WORK: std::sync::OnceLock<[u32; 2]> = std::sync::OnceLock::new();
    *WORK.get_or_init(|| match std::env::var("HANDOFF_SPSC_WORK") {
        Err(_) => [0, 0],
        Ok(spec) => {
            let v: Vec<u32> = spec
                .split(',')
                .map(|s| {
                    s.trim().parse().unwrap_or_else(|_| {
                        panic!("HANDOFF_SPSC_WORK={spec:?}: expected two counts, e.g. 0,16")
                    })
                })
                .collect();
            let [p, c] = v[..] else {
                panic!("HANDOFF_SPSC_WORK={spec:?}: expected two counts, e.g. 0,16")
            };
            eprintln!("bench: extra work per item: producer {p}, consumer {c} loop iterations");
            [p, c]
        }
    })
}

#[inline(always)]
fn busy(iterations: u32) {
    for i in 0..iterations {
        black_box(i);
    }
}

/// What one single-item run saw: failed calls on each side and the queue's occupancy,
/// sampled by the consumer every `OCCUPANCY_EVERY` items. Counting a failure is one
/// register increment on the retry path; the sample is one load of the producer's index
/// per 4096 items, so both are left on in every run.
///
/// Occupancy is bimodal (see docs/spsc-notebook.md): a pair spends most of a run either near
/// empty or near full, so besides the mean the share of samples at each end is kept.
#[derive(Clone, Copy, Default)]
struct Diag {
    items: u64,
    failed_push: u64,
    failed_pop: u64,
    occupancy_sum: u64,
    occupancy_samples: u64,
    /// Samples with fewer than `CAPACITY / 16` items.
    near_empty: u64,
    /// Samples with more than `CAPACITY - CAPACITY / 16` items.
    near_full: u64,
}

const OCCUPANCY_EVERY: u64 = 4096;

/// The diagnostics of every single-item run, with the contender's name, in run order.
static DIAG: std::sync::Mutex<Vec<(&str, Diag)>> = std::sync::Mutex::new(Vec::new());

fn clear_diagnostics() {
    DIAG.lock().unwrap().clear();
}

impl Diag {
    fn per_item(count: u64, items: u64) -> f64 {
        count as f64 / items.max(1) as f64
    }

    /// Failed pushes per item, failed pops per item, mean occupancy, share of samples
    /// near empty, share near full.
    fn figures(&self) -> [f64; 5] {
        let samples = self.occupancy_samples.max(1) as f64;
        [
            Self::per_item(self.failed_push, self.items),
            Self::per_item(self.failed_pop, self.items),
            self.occupancy_sum as f64 / samples,
            self.near_empty as f64 / samples,
            self.near_full as f64 / samples,
        ]
    }
}

/// Prints the medians (and ranges) of each contender's per-run diagnostics.
fn print_diagnostics(contenders: &[&str]) {
    for name in contenders {
        let runs: Vec<Diag> = DIAG
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, d)| *d)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let column = |k: usize| {
            let mut v: Vec<f64> = runs.iter().map(|d| d.figures()[k]).collect();
            let m = common::median(&mut v);
            (m, v[0], v[v.len() - 1])
        };
        let (push, pop, occ) = (column(0), column(1), column(2));
        let (empty, full) = (column(3), column(4));
        println!(
            "  {name:<14} failed pushes/item {:.3} ({:.3}-{:.3})   failed pops/item {:.3} ({:.3}-{:.3})   occupancy mean {:.0} ({:.0}-{:.0}) of {CAPACITY}, near empty {:.0}%, near full {:.0}%   ({} runs, medians and ranges)",
            push.0, push.1, push.2, pop.0, pop.1, pop.2, occ.0, occ.1, occ.2, empty.0 * 100.0, full.0 * 100.0, runs.len()
        );
    }
}

// ---------------------------------------------------------------------- throughput

/// `n` single items from a producer thread to a consumer thread; the run's failed calls
/// and occupancy samples are logged under `name`.
fn single<T: Item, P: Tx<T>, C: Rx<T>>(
    (mut tx, mut rx): (P, C),
    n: u64,
    name: &'static str,
) -> Duration {
    let [producer_work, consumer_work] = work_per_item();
    let diag = std::sync::Mutex::new(Diag {
        items: n,
        ..Diag::default()
    });
    let shared = &diag;
    let elapsed = two_threads(
        move || {
            let mut failed = 0;
            for i in 0..n {
                busy(producer_work);
                failed += push_spin(&mut tx, T::make(i));
            }
            shared.lock().unwrap().failed_push = failed;
        },
        move || {
            let (mut failed, mut occupancy, mut samples) = (0, 0, 0);
            let (mut near_empty, mut near_full) = (0, 0);
            for i in 0..n {
                if i % OCCUPANCY_EVERY == 0 {
                    let now = rx.occupancy();
                    occupancy += now as u64;
                    samples += 1;
                    near_empty += u64::from(now < CAPACITY / 16);
                    near_full += u64::from(now > CAPACITY - CAPACITY / 16);
                }
                let (t, f) = pop_spin(&mut rx);
                failed += f;
                check(&t, i);
                busy(consumer_work);
            }
            let mut d = shared.lock().unwrap();
            d.failed_pop = failed;
            d.occupancy_sum = occupancy;
            d.occupancy_samples = samples;
            d.near_empty = near_empty;
            d.near_full = near_full;
        },
    );
    DIAG.lock()
        .unwrap()
        .push((name, diag.into_inner().unwrap()));
    elapsed
}

/// What each side of a chunked run got from its chunk calls: how many calls, how many
/// came back empty, and the items they carried (so the mean chunk size each side
/// actually worked with).
#[derive(Clone, Copy, Default)]
struct ChunkDiag {
    items: u64,
    producer_calls: u64,
    producer_empty: u64,
    consumer_calls: u64,
    consumer_empty: u64,
}

/// The chunk diagnostics of every batched run of one contender, in run order.
type ChunkLog = std::sync::Mutex<Vec<ChunkDiag>>;

static HANDOFF_CHUNKS: ChunkLog = ChunkLog::new(Vec::new());
static RTRB_CHUNKS: ChunkLog = ChunkLog::new(Vec::new());

/// Prints the medians (and ranges) of each batched contender's per-run chunk figures.
fn print_chunk_diagnostics(contenders: &[(&str, &ChunkLog)]) {
    for (name, log) in contenders {
        let runs = log.lock().unwrap().clone();
        if runs.is_empty() {
            continue;
        }
        let column = |f: &dyn Fn(&ChunkDiag) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            let m = common::median(&mut v);
            (m, v[0], v[v.len() - 1])
        };
        let full =
            |calls: u64, empty: u64, items: u64| items as f64 / (calls - empty).max(1) as f64;
        let p = column(&|d| full(d.producer_calls, d.producer_empty, d.items));
        let c = column(&|d| full(d.consumer_calls, d.consumer_empty, d.items));
        let pe = column(&|d| d.producer_empty as f64 / d.producer_calls.max(1) as f64);
        let ce = column(&|d| d.consumer_empty as f64 / d.consumer_calls.max(1) as f64);
        println!(
            "  {name:<14} items per producer chunk {:.1} ({:.1}-{:.1}), empty {:.0}%   items per consumer chunk {:.1} ({:.1}-{:.1}), empty {:.0}%   (of up to {BATCH}; {} runs, medians and ranges)",
            p.0, p.1, p.2, pe.0 * 100.0, c.0, c.1, c.2, ce.0 * 100.0, runs.len()
        );
    }
}

/// Zero-copy batches of up to `BATCH`: the producer writes ticks straight into the
/// slots and publishes once per chunk; the consumer checks them in place and releases
/// once per chunk.
fn handoff_batch(n: u64) -> Duration {
    let (mut tx, mut rx) = handoff_ring();
    let diag = std::sync::Mutex::new(ChunkDiag {
        items: n,
        ..ChunkDiag::default()
    });
    let shared = &diag;
    let elapsed = two_threads(
        move || {
            let (mut next, mut calls, mut empty) = (0u64, 0u64, 0u64);
            while next < n {
                let want = BATCH.min((n - next) as usize);
                let mut chunk = tx.write_chunk(want);
                let k = chunk.extend((next..next + chunk.len() as u64).map(tick)) as u64;
                chunk.commit();
                calls += 1;
                empty += u64::from(k == 0);
                next += k;
            }
            let mut d = shared.lock().unwrap();
            (d.producer_calls, d.producer_empty) = (calls, empty);
        },
        move || {
            let (mut next, mut calls, mut empty) = (0u64, 0u64, 0u64);
            while next < n {
                let mut chunk = rx.read_chunk(BATCH);
                let (a, b) = chunk.as_slices();
                for t in a.iter().chain(b) {
                    check(t, next);
                    next += 1;
                }
                let len = chunk.len();
                chunk.consume(len);
                calls += 1;
                empty += u64::from(len == 0);
            }
            let mut d = shared.lock().unwrap();
            (d.consumer_calls, d.consumer_empty) = (calls, empty);
        },
    );
    HANDOFF_CHUNKS
        .lock()
        .unwrap()
        .push(diag.into_inner().unwrap());
    elapsed
}

/// rtrb's own chunk API the way its documentation shows it, with the same chunk size
/// and the same per-item check as `handoff_batch`: `write_chunk_uninit` (asking again
/// for what is free when fewer than `BATCH` slots are) and `fill_from_iter`, which
/// commits; `read_chunk`, `as_slices`, `commit_all`.
fn rtrb_batch(n: u64) -> Duration {
    use rtrb::chunks::ChunkError::TooFewSlots;
    let (mut tx, mut rx) = rtrb_ring();
    let diag = std::sync::Mutex::new(ChunkDiag {
        items: n,
        ..ChunkDiag::default()
    });
    let shared = &diag;
    let elapsed = two_threads(
        move || {
            let (mut next, mut calls, mut empty) = (0u64, 0u64, 0u64);
            while next < n {
                let want = BATCH.min((n - next) as usize);
                let chunk = match tx.write_chunk_uninit(want) {
                    Ok(chunk) => chunk,
                    Err(TooFewSlots(k)) => tx.write_chunk_uninit(k).unwrap(),
                };
                let k = chunk.fill_from_iter((next..next + want as u64).map(tick)) as u64;
                calls += 1;
                empty += u64::from(k == 0);
                next += k;
            }
            let mut d = shared.lock().unwrap();
            (d.producer_calls, d.producer_empty) = (calls, empty);
        },
        move || {
            let (mut next, mut calls, mut empty) = (0u64, 0u64, 0u64);
            while next < n {
                let chunk = match rx.read_chunk(BATCH) {
                    Ok(chunk) => chunk,
                    Err(TooFewSlots(k)) => rx.read_chunk(k).unwrap(),
                };
                let (a, b) = chunk.as_slices();
                let len = a.len() + b.len();
                for t in a.iter().chain(b) {
                    check(t, next);
                    next += 1;
                }
                chunk.commit_all();
                calls += 1;
                empty += u64::from(len == 0);
            }
            let mut d = shared.lock().unwrap();
            (d.consumer_calls, d.consumer_empty) = (calls, empty);
        },
    );
    RTRB_CHUNKS.lock().unwrap().push(diag.into_inner().unwrap());
    elapsed
}

fn handoff_single(n: u64) -> Duration {
    single::<Tick, _, _>(handoff_ring(), n, "handoff")
}

fn slipping_single(n: u64) -> Duration {
    single::<Tick, _, _>(slipping_ring(), n, "handoff_slipping")
}

fn stamped_single(n: u64) -> Duration {
    single::<Tick, _, _>(stamped_ring(), n, "stamped")
}

fn rtrb_single(n: u64) -> Duration {
    single::<Tick, _, _>(rtrb_ring(), n, "rtrb")
}

fn crossbeam_single(n: u64) -> Duration {
    single::<Tick, _, _>(crossbeam_ring(), n, "crossbeam")
}

/// The default ring with a monitor thread (unpinned) that reads its `Observer` once a
/// millisecond, sleeping between: what watching a ring costs the two threads.
fn observed_single(n: u64) -> Duration {
    let (tx, rx) = handoff_ring::<Tick>();
    let watch = tx.observer();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let done = &done;
        s.spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(black_box(watch.stats()).len);
                std::thread::sleep(Duration::from_millis(1));
            }
            black_box(most)
        });
        let elapsed = single::<Tick, _, _>((tx, rx), n, "handoff_observed");
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        elapsed
    })
}

fn handoff_single_u64(n: u64) -> Duration {
    single::<u64, _, _>(handoff_ring(), n, "handoff u64")
}

fn slipping_single_u64(n: u64) -> Duration {
    single::<u64, _, _>(slipping_ring(), n, "handoff_slipping u64")
}

fn rtrb_single_u64(n: u64) -> Duration {
    single::<u64, _, _>(rtrb_ring(), n, "rtrb u64")
}

const THROUGHPUT: [(&str, Run); 7] = [
    ("handoff", handoff_single),
    ("handoff_slipping", slipping_single),
    ("handoff_batch", handoff_batch),
    ("rtrb_batch", rtrb_batch),
    ("handoff_stamped", stamped_single),
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
    clear_diagnostics();
    let mut g = c.benchmark_group("spsc_throughput");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));
    for (name, run) in THROUGHPUT {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| black_box(run(iters)))
        });
    }
    g.finish();
    println!("spsc_throughput: failed calls and occupancy over every run criterion made (warm-up included)");
    print_diagnostics(&[
        "handoff",
        "handoff_slipping",
        "stamped",
        "rtrb",
        "crossbeam",
    ]);
}

// ---------------------------------------------------------------------- fan-in

/// Producers of the fan-in runs (the bench machine has two cores: they share one,
/// the consumer has the other).
const FAN_IN_PRODUCERS: usize = 2;

/// `n` items from `FAN_IN_PRODUCERS` producer threads (pinned to the first core) to
/// one consumer (the second), each producer sending `n / FAN_IN_PRODUCERS` ticks whose
/// `price` names it; the consumer checks each producer's sequence. `pop` is the
/// contender's consuming call; `pushers` its producing ends.
fn fan_in_run<P: Tx<Tick>>(
    pushers: Vec<P>,
    mut pop: impl FnMut() -> Option<Tick> + Send,
    n: u64,
) -> Duration {
    let per = n / FAN_IN_PRODUCERS as u64;
    let pins = common::cores();
    let barrier = std::sync::Barrier::new(FAN_IN_PRODUCERS + 1);
    std::thread::scope(|s| {
        let b = &barrier;
        let consumer = s.spawn(move || {
            common::pin(pins.map(|p| p.1));
            b.wait();
            let start = std::time::Instant::now();
            let mut next = [0u64; FAN_IN_PRODUCERS];
            for _ in 0..per * FAN_IN_PRODUCERS as u64 {
                let t = loop {
                    if let Some(t) = pop() {
                        break t;
                    }
                };
                let id = t.price as usize;
                assert_eq!(
                    t.seq, next[id],
                    "producer {id}: lost, duplicated or reordered"
                );
                next[id] += 1;
            }
            start.elapsed()
        });
        for (id, mut tx) in pushers.into_iter().enumerate() {
            s.spawn(move || {
                common::pin(pins.map(|p| p.0));
                b.wait();
                for seq in 0..per {
                    push_spin(
                        &mut tx,
                        Tick {
                            seq,
                            price: id as u64,
                        },
                    );
                }
            });
        }
        consumer.join().expect("consumer panicked")
    })
}

/// handoff's `FanIn`: one SPSC ring per producer, polled round-robin.
fn handoff_fan_in(n: u64) -> Duration {
    let (txs, mut rx) = handoff::spsc::fan_in::<Tick>(FAN_IN_PRODUCERS, CAPACITY);
    fan_in_run(txs, move || rx.try_pop().ok(), n)
}

/// crossbeam's `ArrayQueue` shared by every producer and the consumer.
fn array_queue_fan_in(n: u64) -> Duration {
    let q = Arc::new(crossbeam_queue::ArrayQueue::new(CAPACITY));
    let txs = (0..FAN_IN_PRODUCERS)
        .map(|_| Crossbeam(Arc::clone(&q)))
        .collect();
    fan_in_run(txs, move || q.pop(), n)
}

// ---------------------------------------------------------------------- round trip

/// Ping-pong: the pinger sends tick `i` through one ring, the echo thread sends it back
/// through the other, `n` times.
fn round_trip_through<P: Tx<Tick>, C: Rx<Tick>>(make: fn() -> (P, C), n: u64) -> Duration {
    let (mut ping_tx, mut ping_rx) = make();
    let (mut pong_tx, mut pong_rx) = make();
    two_threads(
        move || {
            for i in 0..n {
                push_spin(&mut ping_tx, tick(i));
                check(&pop_spin(&mut pong_rx).0, i);
            }
        },
        move || {
            for _ in 0..n {
                let (t, _) = pop_spin(&mut ping_rx);
                push_spin(&mut pong_tx, t);
            }
        },
    )
}

fn handoff_round_trip(n: u64) -> Duration {
    round_trip_through(handoff_ring, n)
}

fn stamped_round_trip(n: u64) -> Duration {
    round_trip_through(stamped_ring, n)
}

fn rtrb_round_trip(n: u64) -> Duration {
    round_trip_through(rtrb_ring, n)
}

fn round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_round_trip");
    configure(&mut g);
    for (name, run) in [
        ("handoff", handoff_round_trip as Run),
        ("handoff_stamped", stamped_round_trip),
        ("rtrb", rtrb_round_trip),
    ] {
        g.bench_function(name, |b| b.iter_custom(|iters| black_box(run(iters))));
    }
    g.finish();
}

// ---------------------------------------------------------------------- paired

fn paired_comparison() {
    // Honour a criterion name filter: run a part of the paired section only when asked
    // for, or when no filter is given.
    let wanted = common::wanted;
    if ![
        "spsc_paired/single",
        "spsc_paired/single_slipping",
        "spsc_paired/single_u64",
        "spsc_paired/single_u64_slipping",
        "spsc_paired/observed",
        "spsc_paired/fan_in",
        "spsc_paired/batch",
        "spsc_paired/batch_vs_single",
        "spsc_paired/round_trip",
        "spsc_paired/stamped_single",
        "spsc_paired/stamped_round_trip",
    ]
    .iter()
    .any(|s| wanted(s))
    {
        return;
    }
    println!("\nspsc_paired: alternating back-to-back runs, medians of per-pair ratios");
    // Single items: the default ring (no call waits) and the ring with slipping asked
    // for, each against rtrb, on the 16-byte tick and on a bare u64.
    let singles: [(&str, &str, Run, &str, Run, &str); 5] = [
        (
            "spsc_paired/single",
            "16-byte ticks, the default ring (no call waits):",
            handoff_single,
            "handoff",
            rtrb_single,
            "rtrb",
        ),
        (
            "spsc_paired/single_slipping",
            "16-byte ticks, the ring with slipping asked for (try_push/try_pop may wait up to ~5 us):",
            slipping_single,
            "handoff_slipping",
            rtrb_single,
            "rtrb",
        ),
        (
            "spsc_paired/observed",
            "16-byte ticks, the default ring read by a monitor thread once a millisecond, against the same ring unwatched:",
            observed_single,
            "handoff_observed",
            handoff_single,
            "handoff",
        ),
        (
            "spsc_paired/single_u64",
            "u64 items, the default ring (no call waits):",
            handoff_single_u64,
            "handoff u64",
            rtrb_single_u64,
            "rtrb u64",
        ),
        (
            "spsc_paired/single_u64_slipping",
            "u64 items, the ring with slipping asked for:",
            slipping_single_u64,
            "handoff_slipping u64",
            rtrb_single_u64,
            "rtrb u64",
        ),
    ];
    for (section, title, ours, our_name, theirs, their_name) in singles {
        // By substring, as criterion's filters: `spsc_paired/single` selects all four,
        // `spsc_paired/single_u64` the two on u64.
        if !wanted(section) {
            continue;
        }
        clear_diagnostics();
        println!("{title}");
        paired(
            "throughput (M items/s)",
            "M/s",
            (our_name, ours),
            (their_name, theirs),
            20_000_000,
            21,
            false,
        );
        print_diagnostics(&[our_name, their_name]);
    }
    if wanted("spsc_paired/fan_in") {
        println!("fan-in: {FAN_IN_PRODUCERS} producers (sharing the first core) into one consumer, handoff's FanIn (a ring per producer) against crossbeam's ArrayQueue (one queue for all):");
        paired(
            "throughput (M items/s)",
            "M/s",
            ("handoff_fan_in", handoff_fan_in),
            ("array_queue", array_queue_fan_in),
            4_000_000,
            21,
            false,
        );
    }
    if wanted("spsc_paired/batch") {
        for log in [&HANDOFF_CHUNKS, &RTRB_CHUNKS] {
            log.lock().unwrap().clear();
        }
        println!("chunks against chunks (both rings' chunk APIs, up to {BATCH} items per chunk):");
        paired(
            "throughput (M items/s)",
            "M/s",
            ("handoff_batch", handoff_batch),
            ("rtrb_batch", rtrb_batch),
            20_000_000,
            21,
            false,
        );
        print_chunk_diagnostics(&[
            ("handoff_batch", &HANDOFF_CHUNKS),
            ("rtrb_batch", &RTRB_CHUNKS),
        ]);
    }
    if wanted("spsc_paired/batch_vs_single") {
        println!("handoff's chunks against rtrb's single items (what the chunk API gains over push/pop; rtrb's chunks gain it too):");
        paired(
            "throughput (M items/s)",
            "M/s",
            ("handoff_batch", handoff_batch),
            ("rtrb", rtrb_single),
            20_000_000,
            21,
            false,
        );
    }
    if wanted("spsc_paired/round_trip") {
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
    if wanted("spsc_paired/stamped_single") {
        clear_diagnostics();
        paired(
            "throughput (M items/s)",
            "M/s",
            ("stamped", stamped_single),
            ("rtrb", rtrb_single),
            20_000_000,
            21,
            false,
        );
        print_diagnostics(&["stamped", "rtrb"]);
    }
    if wanted("spsc_paired/stamped_round_trip") {
        paired(
            "round trip (ns)",
            "ns",
            ("stamped", stamped_round_trip),
            ("rtrb", rtrb_round_trip),
            500_000,
            21,
            true,
        );
    }
}

criterion_group!(benches, throughput, round_trip);

fn main() {
    benches();
    paired_comparison();
    Criterion::default().configure_from_args().final_summary();
}
