//! `handoff::pool::Pool<T, P>`, the pool whose thread-safety policy is a type
//! parameter, three ways:
//!
//! 1. `Pool<Order, ThreadCached>` shared by four worker threads: each takes orders
//!    from its own per-thread magazine, and an order may be dropped on another thread
//!    than the one that took it (here: passed to a neighbour over a channel).
//! 2. `Pool<Order, SingleThreaded>` on one thread: no atomics at all; the compiler
//!    refuses to share it (`Pool<_, SingleThreaded>` is not `Sync`).
//! 3. What exhaustion looks like: a full fixed pool hands the value back in
//!    `Exhausted` and counts it, a growing pool doubles instead.
//!
//! Run: `cargo run --release --example policy_pool`

use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use handoff::pool::policy::{SingleThreaded, ThreadCached};
use handoff::pool::{Capacity, Exhausted, Pool, PoolConfig};

/// 64 bytes, the size document 000's orders have.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Order {
    id: u64,
    px: i64,
    qty: i64,
}

const WORKERS: usize = 4;
const PER_WORKER: u64 = 500_000;

fn main() {
    // 1. Shared by worker threads. 4096 slots, magazines of 64 per thread.
    let config = PoolConfig {
        magazine: 64,
        ..PoolConfig::new(Capacity::Fixed(4096))
    };
    let shared = Pool::<Order, ThreadCached>::with_config(config).expect("pool config");
    let start = Instant::now();
    let checksum: i64 = thread::scope(|s| {
        let pool = &shared;
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..WORKERS).map(|_| mpsc::sync_channel(256)).unzip();
        let mut handles = Vec::new();
        for (w, rx) in receivers.into_iter().enumerate() {
            let to_next = senders[(w + 1) % WORKERS].clone();
            handles.push(s.spawn(move || {
                let mut sum = 0i64;
                for i in 0..PER_WORKER {
                    let order = Order {
                        id: (w as u64) << 32 | i,
                        px: 10_000 + (i % 100) as i64,
                        qty: 1 + (i % 10) as i64,
                    };
                    // Retries only if all 4096 slots are out at once.
                    let mut order = order;
                    let pooled = loop {
                        match pool.try_alloc(order) {
                            Ok(p) => break p,
                            Err(Exhausted(back)) => {
                                order = back;
                                thread::yield_now();
                            }
                        }
                    };
                    if i % 8 == 0 {
                        // Every eighth order is dropped by the next worker instead.
                        let _ = to_next.try_send(pooled);
                    } else {
                        sum += pooled.px * pooled.qty;
                    } // dropped here: back to this thread's magazine
                    while let Ok(theirs) = rx.try_recv() {
                        sum += theirs.qty;
                    }
                }
                drop(to_next);
                sum
            }));
        }
        drop(senders);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .sum()
    });
    let took = start.elapsed();
    let stats = shared.stats();
    println!(
        "ThreadCached: {WORKERS} threads took {} orders in {:.0} ms (checksum {checksum}); capacity {}, refused {}",
        WORKERS as u64 * PER_WORKER,
        took.as_secs_f64() * 1e3,
        stats.capacity,
        stats.exhausted
    );

    // 2. One thread, no synchronisation.
    let local = Pool::<Order, SingleThreaded>::new(Capacity::Fixed(1024)).expect("pool config");
    let start = Instant::now();
    let mut sum = 0i64;
    for i in 0..2_000_000i64 {
        let order = local
            .try_alloc(Order {
                id: i as u64,
                px: i,
                qty: 1,
            })
            .expect("one live order at a time");
        sum += order.px;
    }
    println!(
        "SingleThreaded: 2000000 alloc + free pairs in {:.1} ms on one thread (sum {sum})",
        start.elapsed().as_secs_f64() * 1e3
    );

    // 3. Exhaustion: fixed pools refuse, growing pools double.
    let fixed = Pool::<Order>::new(Capacity::Fixed(2)).expect("pool config");
    let a = fixed
        .try_alloc(Order {
            id: 1,
            ..Order::default()
        })
        .unwrap();
    let b = fixed
        .try_alloc(Order {
            id: 2,
            ..Order::default()
        })
        .unwrap();
    match fixed.try_alloc(Order {
        id: 3,
        ..Order::default()
    }) {
        Ok(_) => unreachable!("a fixed pool of 2 holds 2"),
        Err(Exhausted(back)) => println!(
            "Fixed(2) with orders {} and {} out: order {} handed back ({}); refusals counted: {}",
            a.id,
            b.id,
            back.id,
            Exhausted(back),
            fixed.stats().exhausted
        ),
    }
    drop(a);
    let c = fixed
        .try_alloc(Order {
            id: 3,
            ..Order::default()
        })
        .unwrap();
    println!("  after order 1 was dropped, order {} got its slot", c.id);

    let growing = Pool::<Order>::new(Capacity::Grow { first_block: 2 }).expect("pool config");
    let held: Vec<_> = (0..5)
        .map(|id| {
            growing
                .try_alloc(Order {
                    id,
                    ..Order::default()
                })
                .unwrap()
        })
        .collect();
    println!(
        "Grow {{ first_block: 2 }} holding {} orders: capacity {} (blocks of 2, 2, 4), refused {}",
        held.len(),
        growing.stats().capacity,
        growing.stats().exhausted
    );
}
