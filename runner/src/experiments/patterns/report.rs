//! `runner patterns`'s outputs: one table per section of document 003, the claims,
//! the results JSON and the charts.

use super::once::{Holder, Memory, NumaOutcome};
use super::work::{Processed, Shared, TypedSample};
use super::Config;
use crate::lab::chart;
use crate::lab::error::{Error, Result};
use crate::lab::measure::median_or_nan as median;
use crate::lab::results::Outputs;
use handoff_clock::Clock;
use handoff_stats::profile::AllocReport;
use handoff_stats::{Latency, Percentiles};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Order processing with one source: merged latency (ns) and median throughput.
#[derive(Clone, Debug, Serialize)]
pub struct OrderRun {
    /// Per-order latency of every kept repeat, ns.
    pub latency: Percentiles,
    /// Median orders per second.
    pub orders_per_s: f64,
}

/// Everything measured, reduced to what the report needs.
pub struct Outcome {
    pub(super) memory: Vec<(Holder, Memory)>,
    /// Median ms of the arena part: (malloc, arena).
    pub(super) arena_ms: (f64, f64),
    /// Median ms of the typed-pool part: (box, fresh pool, warm pool).
    pub(super) typed_ms: (f64, f64, f64),
    /// Median ms per contender of the multi-thread part.
    pub(super) shared_ms: Vec<(Shared, f64)>,
    /// Order processing: malloc, pool.
    pub(super) orders: (OrderRun, OrderRun),
    pub(super) profile: (AllocReport, AllocReport),
    pub(super) numa: NumaOutcome,
    pub(super) read_cost_ns: f64,
}

impl Outcome {
    /// Reduces the raw measurements.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: &Clock,
        memory: Vec<(Holder, Memory)>,
        arena: Vec<(u64, u64)>,
        typed: Vec<TypedSample>,
        shared: Vec<Vec<u64>>,
        processed: Vec<Vec<Processed>>,
        profile: (AllocReport, AllocReport),
        numa: NumaOutcome,
    ) -> Outcome {
        let ms = |t: u64| clock.ticks_to_ns_f64(t) / 1e6;
        let run = |v: &[Processed]| {
            let mut all = Latency::with_unit(handoff_stats::Unit::Ticks);
            for p in v {
                // Same unit and precision: merging cannot fail.
                let _ = all.merge(&p.latency);
            }
            OrderRun {
                latency: all.to_ns(clock).percentiles(),
                orders_per_s: median(
                    v.iter()
                        .map(|p| p.latency.count() as f64 / (clock.ticks_to_ns_f64(p.total) / 1e9)),
                ),
            }
        };
        let cost = clock.read_cost();
        Outcome {
            memory,
            arena_ms: (
                median(arena.iter().map(|a| ms(a.0))),
                median(arena.iter().map(|a| ms(a.1))),
            ),
            typed_ms: (
                median(typed.iter().map(|t| ms(t.boxed))),
                median(typed.iter().map(|t| ms(t.pool_fresh))),
                median(typed.iter().map(|t| ms(t.pool_warm))),
            ),
            shared_ms: Shared::ALL
                .iter()
                .zip(&shared)
                .map(|(&w, v)| (w, median(v.iter().map(|&t| ms(t)))))
                .collect(),
            orders: (run(&processed[0]), run(&processed[1])),
            profile,
            numa,
            read_cost_ns: (cost.start_ns + cost.end_ns) / 2.0,
        }
    }

    pub(super) fn shared(&self, w: Shared) -> f64 {
        self.shared_ms
            .iter()
            .find(|s| s.0 == w)
            .map(|s| s.1)
            .unwrap_or(f64::NAN)
    }

    pub(super) fn mem(&self, h: Holder) -> Option<&Memory> {
        self.memory.iter().find(|m| m.0 == h).map(|m| &m.1)
    }
}

pub(super) fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// The printed tables.
pub fn sections(o: &Outcome, cfg: &Config) -> Vec<String> {
    let kept = cfg.repeats - 1;
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
    v.push(s);

    let mut s = String::new();
    let total = (cfg.threads * cfg.per_thread) as f64;
    let _ = writeln!(
        s,
        "one pool, {} threads x {} orders (allocate all, release all), cores {:?}, median of {kept} repeats",
        cfg.threads, cfg.per_thread, cfg.pins
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
    v
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// The experiment's JSON fields.
pub fn json_fields(o: &Outcome, cfg: &Config) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("config".into(), to_value(cfg)?);
    let memory: Map<String, Value> = o
        .memory
        .iter()
        .map(|(h, mem)| {
            (
                h.name().to_string(),
                json!({ "requested_bytes": mem.requested, "resident_bytes": mem.resident, "overhead": mem.overhead() }),
            )
        })
        .collect();
    m.insert("memory".into(), Value::Object(memory));
    m.insert(
        "ms".into(),
        json!({
            "arena": { "malloc": o.arena_ms.0, "arena": o.arena_ms.1 },
            "typed_pool": { "box": o.typed_ms.0, "pool_fresh": o.typed_ms.1, "pool_warm": o.typed_ms.2 },
            "many_threads": o.shared_ms.iter().map(|(w, t)| (w.name().to_string(), json!(t))).collect::<Map<_, _>>(),
        }),
    );
    m.insert(
        "ratios".into(),
        json!({
            "arena_speedup": o.arena_ms.0 / o.arena_ms.1,
            "box_over_warm_pool": o.typed_ms.0 / o.typed_ms.2,
            "box_over_fresh_pool": o.typed_ms.0 / o.typed_ms.1,
            "orders_p50_malloc_over_pool": ratio(o.orders.0.latency.p50, o.orders.1.latency.p50),
            "orders_throughput_pool_over_malloc": o.orders.1.orders_per_s / o.orders.0.orders_per_s,
        }),
    );
    m.insert(
        "profiler_ns".into(),
        json!({ "pool": o.profile.0, "malloc": o.profile.1, "clock_read_ns": o.read_cost_ns }),
    );
    m.insert(
        "order_processing".into(),
        json!({ "malloc": o.orders.0, "pool": o.orders.1 }),
    );
    m.insert("numa".into(), to_value(&o.numa)?);
    Ok(m)
}

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::Run(e.to_string()))
}

/// Bars: the typed-pool part, the multi-thread part, order-processing percentiles.
pub fn charts(o: &Outcome, cfg: &Config) -> Result<Outputs> {
    let mut files = Outputs::new();
    let mut add = |name: &str, title: String, y: &str, bars: Vec<(String, f64)>| -> Result<()> {
        let bars: Vec<_> = bars.into_iter().filter(|b| b.1.is_finite()).collect();
        let svg = chart::bars(&title, y, &bars)?;
        files.add(cfg.out.join(name), svg.into_bytes());
        Ok(())
    };
    add(
        "patterns-alloc.svg",
        "batches and objects vs malloc, ms".to_string(),
        "ms",
        vec![
            ("malloc ticks".into(), o.arena_ms.0),
            ("arena ticks".into(), o.arena_ms.1),
            ("Box orders".into(), o.typed_ms.0),
            ("pool orders, fresh".into(), o.typed_ms.1),
            ("pool orders, warm".into(), o.typed_ms.2),
        ],
    )?;
    add(
        "patterns-threads.svg",
        format!(
            "{} threads x {} orders, one pool",
            cfg.threads, cfg.per_thread
        ),
        "ms",
        o.shared_ms
            .iter()
            .map(|(w, t)| (w.name().to_string(), *t))
            .collect(),
    )?;
    let (m, p) = (&o.orders.0.latency, &o.orders.1.latency);
    add(
        "patterns-orders.svg",
        "order processing, ns per order".into(),
        "ns",
        vec![
            ("malloc p50".into(), m.p50 as f64),
            ("pool p50".into(), p.p50 as f64),
            ("malloc p99".into(), m.p99 as f64),
            ("pool p99".into(), p.p99 as f64),
            ("malloc p99.9".into(), m.p999 as f64),
            ("pool p99.9".into(), p.p999 as f64),
        ],
    )?;
    Ok(files)
}
