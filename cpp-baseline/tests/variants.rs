//! Every C++ variant moves every item once, in order, with a receive stamp no
//! earlier than its send stamp; bad capacities are refused.

use cpp_baseline::{queue, Kind, QueueError, Role, Ticks};
use std::sync::atomic::AtomicU8;

/// Runs `n` items through `kind` at `capacity`, paced at `period` ticks (0: unpaced).
fn run(kind: Kind, capacity: usize, n: usize, period: f64) -> Option<(u64, Vec<u64>, Vec<u64>)> {
    run_on(Ticks::Tsc, kind, capacity, n, period, 0)
}

/// [`run`] with the stop flag set to `stop` before the producer starts.
fn run_with_stop(
    kind: Kind,
    capacity: usize,
    n: usize,
    period: f64,
    stop: u8,
) -> Option<(u64, Vec<u64>, Vec<u64>)> {
    run_on(Ticks::Tsc, kind, capacity, n, period, stop)
}

/// [`run_with_stop`] on the clock `ticks`; the origin is that clock's reading now.
fn run_on(
    ticks: Ticks,
    kind: Kind,
    capacity: usize,
    n: usize,
    period: f64,
    stop: u8,
) -> Option<(u64, Vec<u64>, Vec<u64>)> {
    let (mut tx, mut rx) = match queue(kind, capacity) {
        Ok(q) => q,
        Err(QueueError::Unavailable(why)) => {
            println!("skipped {}: {why}", kind.name());
            return None;
        }
        Err(e) => panic!("{}: {e}", kind.name()),
    };
    let stop = AtomicU8::new(stop);
    let mut sent = vec![0u64; n];
    let mut got = vec![0u64; n];
    let t0 = match ticks {
        Ticks::Tsc => handoff_clock::tsc::rdtsc(),
        Ticks::Monotonic => handoff_clock::Clock::monotonic().now(),
    };
    std::thread::scope(|s| {
        let producer = s.spawn(|| {
            let mut role = Role::unpaced(&mut sent, &stop);
            role.t0 = t0;
            role.period_ticks = period;
            role.ticks = ticks;
            tx.run(role)
        });
        let mut role = Role::unpaced(&mut got, &stop);
        role.ticks = ticks;
        let report = rx.run(role);
        assert_eq!(report.bad_seq, 0, "{}: items out of order", kind.name());
        producer.join().unwrap();
    });
    Some((t0, sent, got))
}

fn check(kind: Kind, sent: &[u64], got: &[u64]) {
    assert!(
        sent.windows(2).all(|w| w[0] <= w[1]),
        "{}: send stamps go back",
        kind.name()
    );
    for (i, (s, r)) in sent.iter().zip(got).enumerate() {
        assert!(*s > 0 && *r > 0, "{}: item {i} not stamped", kind.name());
        assert!(
            r >= s,
            "{}: item {i} received before it was sent",
            kind.name()
        );
    }
}

#[test]
fn every_variant_moves_every_item_in_order() {
    for kind in Kind::ALL {
        for capacity in [1024, 16, 1] {
            if kind.is_ring() || capacity != 1 {
                if let Some((_, sent, got)) = run(kind, capacity, 200_000, 0.0) {
                    check(kind, &sent, &got);
                }
            }
        }
    }
}

#[test]
fn paced_sends_follow_the_schedule() {
    // 2000 ticks apart (about 1 us at the usual 2-4 GHz): no send may be early.
    for kind in Kind::ALL {
        if let Some((t0, sent, got)) = run(kind, 1024, 5_000, 2000.0) {
            check(kind, &sent, &got);
            for (i, s) in sent.iter().enumerate() {
                assert!(
                    *s >= t0 + i as u64 * 2000,
                    "{}: item {i} sent early",
                    kind.name()
                );
            }
        }
    }
}

#[test]
fn on_the_monotonic_clock_the_stamps_are_handoff_clocks_nanoseconds() {
    // Paced 2000 ns apart on CLOCK_MONOTONIC: every stamp lies between the origin (taken
    // by handoff-clock's monotonic source) and handoff-clock's reading after the run,
    // and no send is early. A C++ loop on another clock (the TSC, or nanoseconds from
    // another origin) breaks one of the two.
    let clock = handoff_clock::Clock::monotonic();
    for kind in Kind::ALL {
        if let Some((t0, sent, got)) = run_on(Ticks::Monotonic, kind, 1024, 2_000, 2000.0, 0) {
            let after = clock.now();
            check(kind, &sent, &got);
            for (i, (s, r)) in sent.iter().zip(&got).enumerate() {
                assert!(
                    *s >= t0 + i as u64 * 2000,
                    "{}: item {i} sent early",
                    kind.name()
                );
                assert!(
                    *r <= after,
                    "{}: item {i} stamped after the run",
                    kind.name()
                );
            }
        }
    }
}

#[test]
fn a_stop_request_ends_the_pacing_and_every_item_still_arrives() {
    // One item per 10^13 ticks (about an hour): only a producer that honours the stop
    // flag, which it reads every 4096 items from item 0, finishes. A watchdog turns a
    // producer that ignores it into a failure instead of a hang.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for kind in Kind::ALL {
            if let Some((_, sent, got)) = run_with_stop(kind, 1024, 10_000, 1e13, 1) {
                check(kind, &sent, &got);
            }
        }
        done_tx.send(()).unwrap();
    });
    match done_rx.recv_timeout(std::time::Duration::from_secs(300)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("a C++ producer kept pacing after the stop flag was set")
        }
        Err(e) => panic!("the run failed: {e}"),
    }
}

#[test]
fn mutex_queue_takes_any_capacity_and_the_ring_needs_a_power_of_two() {
    if Kind::CppRing.unavailable().is_some() {
        return;
    }
    for ring in [Kind::CppRing, Kind::CppRingPrivate] {
        assert_eq!(
            queue(ring, 1000).unwrap_err(),
            QueueError::BadCapacity(1000)
        );
    }
    assert_eq!(
        queue(Kind::MutexCondvar, 0).unwrap_err(),
        QueueError::BadCapacity(0)
    );
    let (_, sent, got) = run(Kind::MutexCondvar, 1000, 50_000, 0.0).unwrap();
    check(Kind::MutexCondvar, &sent, &got);
}

#[test]
fn the_schedule_and_the_tick_match_the_document() {
    if let Some(size) = cpp_baseline::tick_size() {
        assert_eq!(size, 16);
        assert_eq!(cpp_baseline::cpp_due(1000, 2596.5, 4), Some(1000 + 10386));
    }
}

#[test]
fn boost_is_reported_when_missing() {
    match Kind::BoostSpsc.unavailable() {
        Some(why) => {
            assert!(why.contains("libboost-dev"), "{why}");
            println!("boost-spsc tests skipped: {why}");
        }
        None => assert!(queue(Kind::BoostSpsc, 1024).is_ok()),
    }
}
