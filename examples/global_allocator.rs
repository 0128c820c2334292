//! handoff-alloc as the process's global allocator, under a mixed workload: four
//! strategy threads each keep an order book (`BTreeMap`), format log lines (`String`)
//! and build 64-byte orders (`Box`) that they send to one risk thread, which frees
//! them, so every order is freed by a thread other than the one that allocated it
//! (a remote free). At the end the program prints the allocator's own statistics:
//! how its arena was reserved, the heaps the threads claimed, the blocks still live,
//! the remote frees and how many the owners took back.
//!
//! Installing it is two lines (below); nothing else in the program changes.
//!
//! Run: `cargo run --release --example global_allocator`

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

// `.ci/run` also builds the examples with handoff-alloc installed by its
// `--cfg handoff_global_alloc` pass; a program installs it exactly once.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: handoff::alloc::HandoffAlloc = handoff::alloc::HandoffAlloc;

const THREADS: u64 = 4;
const ORDERS_PER_THREAD: u64 = 250_000;

/// 64 bytes, the size document 000's orders have.
#[allow(dead_code)] // the fields are the payload; risk reads two of them
struct Order {
    id: u64,
    px: i64,
    qty: i64,
    side: u8,
    account: [u8; 39],
}

fn main() {
    let start = Instant::now();
    let (to_risk, orders) = mpsc::sync_channel::<Box<Order>>(4096);

    let risk = thread::spawn(move || {
        let (mut n, mut notional) = (0u64, 0i64);
        for order in orders {
            notional += order.px * order.qty;
            n += 1;
        } // each order is freed here, on the risk thread
        (n, notional)
    });

    let strategies: Vec<_> = (0..THREADS)
        .map(|t| {
            let to_risk = to_risk.clone();
            thread::spawn(move || {
                let mut book: BTreeMap<i64, u64> = BTreeMap::new();
                let mut log = Vec::new();
                for i in 0..ORDERS_PER_THREAD {
                    let px = 10_000 + ((i * 7 + t) % 200) as i64;
                    *book.entry(px).or_default() += 1 + i % 5;
                    if i % 1_000 == 0 {
                        log.push(format!("t{t} i{i} best {:?}", book.first_key_value()));
                        book.retain(|_, q| *q % 3 != 0); // levels come and go
                    }
                    let order = Box::new(Order {
                        id: t << 32 | i,
                        px,
                        qty: 1 + (i % 10) as i64,
                        side: (i % 2) as u8,
                        account: [t as u8; 39],
                    });
                    to_risk.send(order).expect("risk thread alive");
                }
                log.len()
            })
        })
        .collect();
    drop(to_risk);
    let lines: usize = strategies
        .into_iter()
        .map(|s| s.join().expect("strategy thread panicked"))
        .sum();
    let (orders, notional) = risk.join().expect("risk thread panicked");
    let elapsed = start.elapsed();

    let s = handoff::alloc::stats();
    println!(
        "global_allocator: {THREADS} strategy threads sent {orders} orders (notional {notional}) to one risk thread and logged {lines} lines in {:.0} ms",
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "  arena: {:?}, {} GiB of address space reserved, {:.1} MiB committed, {:.1} MiB mapped in all",
        s.arena_mode,
        s.arena_bytes >> 30,
        s.committed_bytes as f64 / (1 << 20) as f64,
        s.mapped_bytes as f64 / (1 << 20) as f64
    );
    println!(
        "  heaps: {} claimed by a thread so far, {} owned now (of {})",
        s.heaps_used, s.heaps_owned, s.heaps
    );
    println!(
        "  small blocks: {} live ({} bytes), {} cut from new memory; big blocks: {} live",
        s.small_blocks_live, s.small_bytes_live, s.blocks_carved, s.big_blocks_live
    );
    println!(
        "  remote frees: {} (the risk thread freeing the strategies' orders), {} taken back by their owners",
        s.remote_frees, s.remote_frees_reclaimed
    );
    println!(
        "  magazines: {} refills, {} spills; depots: {} blocks in, {} out",
        s.magazine_refills, s.magazine_spills, s.depot_blocks_in, s.depot_blocks_out
    );
    assert_eq!(orders, THREADS * ORDERS_PER_THREAD);
    if cfg!(target_os = "linux") && cfg!(target_pointer_width = "64") {
        assert!(
            s.remote_frees >= orders,
            "every order was freed by another thread"
        );
    }
}
