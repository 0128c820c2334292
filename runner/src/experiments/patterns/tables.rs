//! The printed tables of `runner patterns`: every part of document 003 with its
//! figures, and the Box loops on the general-purpose allocators beside them.

use super::report::{mib, ratio, Outcome, GENERAL};
use super::work::OUTLIER_NS;
use super::Config;
use crate::lab::fmt;
use crate::lab::measure::median_or_nan as median;
use std::fmt::Write as _;

/// The `Box` loop of `part` on each of [`GENERAL`], when measured: ms, ns per item, and
/// the median of the runs' own ratios to `pool` (the arena, the warm pool).
fn general_rows(s: &mut String, o: &Outcome, part: &str, pool: &str, items: f64, item: &str) {
    for (_, name, doc) in GENERAL {
        let runs = o.runs(part, name);
        if runs.is_empty() {
            continue;
        }
        let t = median(runs.iter().copied());
        let x = median(o.per_run_ratios(part, name, pool));
        let _ = writeln!(
            s,
            "  Box on {doc} (child process): {t:.3} ms, {:.2} ns per {item}; {pool} {x:.2}x as fast (median of the runs' ratios)",
            t * 1e6 / items
        );
    }
}

/// The printed tables.
pub(super) fn sections(o: &Outcome, cfg: &Config) -> Vec<String> {
    let kept = cfg.run.runs - 1;
    let mut v = Vec::new();

    let mut s = String::new();
    let per = (cfg.arena_iterations * cfg.arena_batch) as f64;
    let _ = writeln!(
        s,
        "arena vs malloc: {} batches x {} ticks (24 bytes), median of {kept} repeats",
        cfg.arena_iterations, cfg.arena_batch
    );
    let _ = writeln!(s, "  {:<10} {:>10} {:>14}", "", "ms", "ns per tick");
    for (name, t) in [("malloc", o.arena_ms.0), ("arena", o.arena_ms.1)] {
        let _ = writeln!(s, "  {name:<10} {t:>10.2} {:>14.2}", t * 1e6 / per);
    }
    let _ = writeln!(s, "  speedup    {:>9.2}x", o.arena_ms.0 / o.arena_ms.1);
    general_rows(&mut s, o, "arena", "arena", per, "tick");
    v.push(s);

    let mut s = String::new();
    let n = cfg.orders_typed as f64;
    let _ = writeln!(
        s,
        "typed pool vs Box: {} orders (32 bytes) allocated, then released, median of {kept} repeats",
        cfg.orders_typed
    );
    let _ = writeln!(
        s,
        "  {:<30} {:>10} {:>12} {:>10}",
        "", "ms", "ns/order", "Box / it"
    );
    for (name, t) in [
        ("Box (malloc/free)", o.typed_ms.0),
        ("pool, fresh (made in timing)", o.typed_ms.1),
        ("pool, warm (second pass)", o.typed_ms.2),
    ] {
        let _ = writeln!(
            s,
            "  {name:<30} {t:>10.3} {:>12.2} {:>9.2}x",
            t * 1e6 / n,
            o.typed_ms.0 / t
        );
    }
    general_rows(&mut s, o, "typed_pool", "pool_warm", n, "order");
    v.push(s);

    let mut s = String::new();
    let total = (cfg.threads * cfg.per_thread) as f64;
    let _ = writeln!(
        s,
        "one pool, {} threads x {} orders (allocate all, release all), cores {:?}, median of {kept} repeats",
        cfg.threads, cfg.per_thread, cfg.placement.threads()
    );
    let _ = writeln!(s, "  {:<16} {:>10} {:>16}", "", "ms", "allocs/s");
    for &(w, t) in &o.shared_ms {
        let _ = writeln!(
            s,
            "  {:<16} {t:>10.2} {:>16.0}",
            w.name(),
            total / (t / 1e3)
        );
    }
    let _ = writeln!(
        s,
        "  outliers: the same again in every run, with every allocation and release timed; operations of {} or more over the {kept} kept runs",
        fmt::ns(OUTLIER_NS)
    );
    for (w, x) in &o.outliers {
        let _ = writeln!(
            s,
            "  {:<16} {:>10} of {} ({:.1} per million), longest {}",
            w.name(),
            x.over_200us,
            x.ops,
            x.per_million(),
            fmt::ns(x.max_ns)
        );
    }
    v.push(s);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "memory: {} ticks held (24 bytes each, {:.1} MiB requested), growth of resident memory",
        cfg.memory_ticks,
        mib((cfg.memory_ticks * 24) as u64)
    );
    let _ = writeln!(s, "  {:<22} {:>12} {:>10}", "", "MiB", "overhead");
    for (h, m) in &o.memory {
        let _ = writeln!(
            s,
            "  {:<22} {:>12.1} {:>9.0}%",
            h.name(),
            mib(m.resident),
            // A partial page either way is not overhead: no "-0%".
            (m.overhead() * 100.0).max(0.0)
        );
    }
    let f = &o.fragmentation;
    let _ = writeln!(
        s,
        "  fragmentation, glibc: {} ticks processed (1000 symbols, last 100 kept, a 16-1024 byte snapshot replaced every 10th), {:.1} MiB heap, {:.1} MiB free inside it: {:.1}%; live {:.1} MiB requested",
        f.ticks,
        mib(f.heap),
        mib(f.free_in_heap),
        f.fraction() * 100.0,
        mib(f.live_requested)
    );
    v.push(s);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "allocation profiler: {} x (1000 allocations, then 1000 releases) of orders, ns (each includes a clock read pair, about {:.0} ns)",
        cfg.profile_batches, o.read_cost_ns
    );
    let _ = writeln!(
        s,
        "  {:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "", "min", "p50", "p90", "p99", "p99.9", "max"
    );
    for (name, p) in [
        ("pool allocate", o.profile.0.alloc),
        ("pool release", o.profile.0.free),
        ("malloc allocate", o.profile.1.alloc),
        ("malloc release", o.profile.1.free),
    ] {
        let _ = writeln!(
            s,
            "  {name:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10}",
            p.min, p.p50, p.p90, p.p99, p.p999, p.max
        );
    }
    v.push(s);

    let mut s = String::new();
    let nm = &o.numa;
    let _ = writeln!(
        s,
        "NUMA: sum over {} MiB on node {} (pages found on node {}), {} passes",
        cfg.numa_mb, nm.nodes[0], nm.buffer_node, cfg.numa_passes
    );
    let _ = writeln!(
        s,
        "  local  (cpu {}): {:.2} GB/s",
        nm.local_cpu, nm.local_gbps
    );
    match (nm.remote_cpu, nm.remote_gbps) {
        (Some(c), Some(g)) => {
            let _ = writeln!(
                s,
                "  remote (cpu {c}): {g:.2} GB/s, slowdown {:.2}x",
                nm.local_gbps / g
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "  remote: {} NUMA node{}: not measurable here",
                nm.nodes.len(),
                if nm.nodes.len() == 1 {
                    ""
                } else {
                    "s, none other with a CPU this process may use"
                }
            );
        }
    }
    for c in &nm.per_node {
        let _ = writeln!(
            s,
            "  per-node pool (cpu {}, node {}): {} of {} orders on the thread's own node",
            c.cpu, c.node, c.on_own_node, c.objects
        );
    }
    let _ = match (o.l1.misses, &o.l1.unavailable) {
        (Some((pool, malloc)), _) => writeln!(
            s,
            "L1 data-cache read misses over {} allocations and releases: warm pool {pool}, malloc {malloc} ({:.2}x)",
            o.l1.allocations,
            malloc as f64 / pool.max(1) as f64
        ),
        (None, why) => writeln!(
            s,
            "L1 misses: not counted: {}",
            why.as_deref().unwrap_or("-")
        ),
    };
    if let Some(sim) = &o.l1_simulated {
        let _ = match (sim.misses, &sim.unavailable) {
            (Some((pool, malloc)), _) => writeln!(
                s,
                "simulated L1 (callgrind, {}): data read misses over {} allocations and releases: warm pool {pool}, malloc {malloc} ({:.2}x)",
                sim.cache.as_deref().unwrap_or("its default cache"),
                sim.allocations,
                malloc as f64 / pool.max(1) as f64
            ),
            (None, why) => writeln!(
                s,
                "simulated L1 misses: not counted: {}",
                why.as_deref().unwrap_or("-")
            ),
        };
    }
    v.push(s);

    let mut s = String::new();
    let (m, p) = (&o.orders.0, &o.orders.1);
    let _ = writeln!(
        s,
        "order processing: {} orders per repeat, each allocated, risk-checked, rested on a book of {}, the oldest cancelled; ns per order, {kept} repeats merged; orders/s from a second pass without clock reads",
        cfg.orders,
        super::work::BOOK
    );
    let _ = writeln!(
        s,
        "  {:<8} {:>8} {:>8} {:>8} {:>10} {:>14}",
        "", "p50", "p99", "p99.9", "max", "orders/s"
    );
    for (name, r) in [("malloc", m), ("pool", p)] {
        let _ = writeln!(
            s,
            "  {name:<8} {:>8} {:>8} {:>8} {:>10} {:>14.0}",
            r.latency.p50, r.latency.p99, r.latency.p999, r.latency.max, r.orders_per_s
        );
    }
    let _ = writeln!(
        s,
        "  malloc / pool: p50 {:.2}x, p99 {:.2}x, p99.9 {:.2}x; throughput pool / malloc {:.2}x",
        ratio(m.latency.p50, p.latency.p50),
        ratio(m.latency.p99, p.latency.p99),
        ratio(m.latency.p999, p.latency.p999),
        p.orders_per_s / m.orders_per_s
    );
    v.push(s);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "lessons 8 and 6: two threads each bumping its own counter {} times (cores {:?}); {} orders in batches of 1000 in a child process per allocator; ms, each kept repeat",
        2 * cfg.orders,
        cfg.placement.threads().iter().take(2).collect::<Vec<_>>(),
        cfg.orders
    );
    for (name, pairs, names) in [
        (
            "false sharing",
            &o.lessons_ms.0,
            ["packed (one line)", "padded (a line each)"],
        ),
        (
            "general allocator",
            &o.lessons_ms.1,
            ["glibc malloc", "jemalloc"],
        ),
    ] {
        let list = |f: fn(&(f64, f64)) -> f64| {
            pairs
                .iter()
                .map(|p| format!("{:.2}", f(p)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(s, "  {name}");
        let _ = writeln!(s, "    {:<22} {}", names[0], list(|p| p.0));
        let _ = writeln!(s, "    {:<22} {}", names[1], list(|p| p.1));
    }
    v.push(s);
    v
}
