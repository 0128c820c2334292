//! SPSC ring benchmarks: handoff against rtrb and crossbeam's ArrayQueue, measured in
//! the same run on the same two pinned cores.
//!
//! * `spsc_throughput`: 16-byte items, capacity 1024, a producer thread and a consumer
//!   thread pinned to two different cores; time from the producer's start to the
//!   consumer's last item, reported per item (and as items/s).
//! * `spsc_round_trip`: ping-pong through two rings (one each way); time per round trip.
//!
//! Cores: the first two of the process's allowed CPUs, or `HANDOFF_PIN=P,C`.

#![allow(missing_docs)] // criterion_main! generates an undocumented `main`

use std::hint::{black_box, spin_loop};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

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

fn tick(seq: u64) -> Tick {
    Tick {
        seq,
        price: seq ^ 0x5a5a,
    }
}

/// The two cores to pin to, or `None` (unpinned) when fewer than two are allowed.
/// Read once, before any thread of this process is pinned.
fn cores() -> Option<(core_affinity::CoreId, core_affinity::CoreId)> {
    static CORES: std::sync::OnceLock<Option<(core_affinity::CoreId, core_affinity::CoreId)>> =
        std::sync::OnceLock::new();
    *CORES.get_or_init(read_cores)
}

fn read_cores() -> Option<(core_affinity::CoreId, core_affinity::CoreId)> {
    let allowed = core_affinity::get_core_ids().unwrap_or_default();
    if let Ok(spec) = std::env::var("HANDOFF_PIN") {
        let ids: Vec<usize> = spec
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .expect("HANDOFF_PIN must be two core ids, e.g. 0,1")
            })
            .collect();
        assert!(ids.len() == 2, "HANDOFF_PIN must be two core ids, e.g. 0,1");
        for id in &ids {
            assert!(
                allowed.iter().any(|c| c.id == *id),
                "HANDOFF_PIN core {id} is not in the allowed set {:?}",
                allowed.iter().map(|c| c.id).collect::<Vec<_>>()
            );
        }
        return Some((
            core_affinity::CoreId { id: ids[0] },
            core_affinity::CoreId { id: ids[1] },
        ));
    }
    match allowed.as_slice() {
        [a, b, ..] => Some((*a, *b)),
        _ => {
            eprintln!("fewer than two allowed cores: running unpinned");
            None
        }
    }
}

fn pin(core: Option<core_affinity::CoreId>) {
    if let Some(core) = core {
        assert!(
            core_affinity::set_for_current(core),
            "could not pin to core {}",
            core.id
        );
    }
}

/// Runs `producer` and `consumer` on two fresh threads pinned to their cores (the
/// calling thread stays unpinned); returns the time from the producer's start to the
/// consumer's end.
fn two_threads(producer: impl FnOnce() + Send, consumer: impl FnOnce() + Send) -> Duration {
    let pins = cores();
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let b = &barrier;
        let c = s.spawn(move || {
            pin(pins.map(|p| p.1));
            b.wait();
            consumer();
            Instant::now()
        });
        let p = s.spawn(move || {
            pin(pins.map(|p| p.0));
            b.wait();
            let start = Instant::now();
            producer();
            start
        });
        let start = p.join().expect("producer thread panicked");
        let end = c.join().expect("consumer thread panicked");
        end - start
    })
}

// ---------------------------------------------------------------------- throughput

fn handoff_single(n: u64) -> Duration {
    let (mut tx, mut rx) = handoff::spsc::channel::<Tick>(CAPACITY);
    two_threads(
        move || {
            for i in 0..n {
                let mut t = tick(i);
                while let Err(e) = tx.try_push(t) {
                    t = e.into_inner();
                    spin_loop();
                }
            }
        },
        move || {
            let mut sum = 0u64;
            for _ in 0..n {
                loop {
                    if let Some(t) = rx.try_pop() {
                        sum = sum.wrapping_add(t.seq);
                        break;
                    }
                    spin_loop();
                }
            }
            assert_eq!(sum, n * (n.wrapping_sub(1)) / 2);
        },
    )
}

fn handoff_batch(n: u64) -> Duration {
    let (mut tx, mut rx) = handoff::spsc::channel::<Tick>(CAPACITY);
    two_threads(
        move || {
            let mut next = 0u64;
            while next < n {
                let want = BATCH.min((n - next) as usize);
                let mut chunk = tx.write_chunk(want);
                if chunk.is_empty() {
                    spin_loop();
                    continue;
                }
                let k = chunk.len() as u64;
                chunk.extend((next..next + k).map(tick));
                chunk.commit();
                next += k;
            }
        },
        move || {
            let mut sum = 0u64;
            let mut got = 0u64;
            while got < n {
                let mut chunk = rx.read_chunk(BATCH);
                if chunk.is_empty() {
                    spin_loop();
                    continue;
                }
                let (a, b) = chunk.as_slices();
                for t in a.iter().chain(b) {
                    sum = sum.wrapping_add(t.seq);
                }
                got += chunk.consume(BATCH) as u64;
            }
            assert_eq!(sum, n * (n.wrapping_sub(1)) / 2);
        },
    )
}

fn rtrb_single(n: u64) -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<Tick>::new(CAPACITY);
    two_threads(
        move || {
            for i in 0..n {
                let mut t = tick(i);
                while let Err(rtrb::PushError::Full(back)) = tx.push(t) {
                    t = back;
                    spin_loop();
                }
            }
        },
        move || {
            let mut sum = 0u64;
            for _ in 0..n {
                loop {
                    if let Ok(t) = rx.pop() {
                        sum = sum.wrapping_add(t.seq);
                        break;
                    }
                    spin_loop();
                }
            }
            assert_eq!(sum, n * (n.wrapping_sub(1)) / 2);
        },
    )
}

fn crossbeam_single(n: u64) -> Duration {
    let q = Arc::new(crossbeam_queue::ArrayQueue::<Tick>::new(CAPACITY));
    let rx = Arc::clone(&q);
    two_threads(
        move || {
            for i in 0..n {
                let mut t = tick(i);
                while let Err(back) = q.push(t) {
                    t = back;
                    spin_loop();
                }
            }
        },
        move || {
            let mut sum = 0u64;
            for _ in 0..n {
                loop {
                    if let Some(t) = rx.pop() {
                        sum = sum.wrapping_add(t.seq);
                        break;
                    }
                    spin_loop();
                }
            }
            assert_eq!(sum, n * (n.wrapping_sub(1)) / 2);
        },
    )
}

/// A contender: runs `n` items through, returns the elapsed time.
type Run = fn(u64) -> Duration;

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_throughput");
    g.throughput(Throughput::Elements(1))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let contenders: [(&str, Run); 4] = [
        ("handoff", handoff_single),
        ("handoff_batch", handoff_batch),
        ("rtrb", rtrb_single),
        ("crossbeam_array_queue", crossbeam_single),
    ];
    for (name, run) in contenders {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| black_box(run(iters)))
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------- round trip

/// Ping-pong: the pinger sends `seq`, the echo thread sends it back, `n` times.
macro_rules! round_trip {
    ($n:expr, $make:expr, $push:ident, $pop:ident, $ok:pat => $v:ident) => {{
        let n: u64 = $n;
        let (mut ping_tx, mut ping_rx) = $make;
        let (mut pong_tx, mut pong_rx) = $make;
        two_threads(
            move || {
                for i in 0..n {
                    let mut t = tick(i);
                    while let Err(e) = ping_tx.$push(t) {
                        t = unfull(e);
                        spin_loop();
                    }
                    loop {
                        if let $ok = pong_rx.$pop() {
                            assert_eq!($v.seq, i);
                            break;
                        }
                        spin_loop();
                    }
                }
            },
            move || {
                for _ in 0..n {
                    let mut t = loop {
                        if let $ok = ping_rx.$pop() {
                            break $v;
                        }
                        spin_loop();
                    };
                    while let Err(e) = pong_tx.$push(t) {
                        t = unfull(e);
                        spin_loop();
                    }
                }
            },
        )
    }};
}

trait Unfull {
    fn unfull(self) -> Tick;
}
impl Unfull for handoff::spsc::PushError<Tick> {
    fn unfull(self) -> Tick {
        self.into_inner()
    }
}
impl Unfull for rtrb::PushError<Tick> {
    fn unfull(self) -> Tick {
        let rtrb::PushError::Full(t) = self;
        t
    }
}
fn unfull(e: impl Unfull) -> Tick {
    e.unfull()
}

fn round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("spsc_round_trip");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("handoff", |b| {
        b.iter_custom(|iters| {
            round_trip!(iters, handoff::spsc::channel::<Tick>(CAPACITY), try_push, try_pop, Some(v) => v)
        })
    });
    g.bench_function("rtrb", |b| {
        b.iter_custom(|iters| {
            round_trip!(iters, rtrb::RingBuffer::<Tick>::new(CAPACITY), push, pop, Ok(v) => v)
        })
    });
    g.finish();
}

criterion_group!(benches, throughput, round_trip);
criterion_main!(benches);
