//! Cost of one clock read of each kind, against `Instant::now()`.

#![allow(missing_docs)] // criterion_main! generates an undocumented `main`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use handoff::clock::Clock;

fn reads(c: &mut Criterion) {
    let clock = Clock::calibrate();
    eprintln!("clock: {:?}", clock.calibration());
    let mut g = c.benchmark_group("clock_read");
    #[cfg(target_arch = "x86_64")]
    {
        use handoff::clock::tsc;
        g.bench_function("rdtsc", |b| b.iter(|| black_box(tsc::rdtsc())));
        g.bench_function("lfence_rdtsc", |b| b.iter(|| black_box(tsc::start())));
        g.bench_function("rdtscp_lfence", |b| b.iter(|| black_box(tsc::end())));
        g.bench_function("rdtscp", |b| b.iter(|| black_box(tsc::rdtscp())));
    }
    g.bench_function("clock_start", |b| b.iter(|| black_box(clock.start())));
    g.bench_function("clock_end", |b| b.iter(|| black_box(clock.end())));
    g.bench_function("instant_now", |b| b.iter(|| black_box(Instant::now())));
    g.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);
