//! The parts of `runner patterns` measured once rather than alternated: resident
//! memory of each way of holding the ticks, the allocation profiler, and NUMA
//! placement.

use super::work::{bug, Order, Tick, Tick64};
use super::Config;
use crate::lab::error::{Error, Result};
use crate::lab::harness::on_core;
use crate::lab::stop;
use handoff_clock::{Clock, Timer};
use handoff_pool::numa::{self, PerNode, Placement};
use handoff_pool::policy::ThreadCached;
use handoff_pool::{BumpArena, Capacity, Pool};
use handoff_stats::profile::{AllocProfiler, AllocReport};
use serde::Serialize;
use std::hint::black_box;

// ---------------------------------------------------------------------------------
// Memory: `n` ticks kept alive, resident memory before and after.

/// Resident memory of one way of holding the ticks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Memory {
    /// Bytes the ticks themselves need (`n * 24`).
    pub requested: u64,
    /// Growth of the process's resident memory while they are alive.
    pub resident: u64,
}

impl Memory {
    /// `(resident - requested) / requested`.
    pub fn overhead(&self) -> f64 {
        (self.resident as f64 - self.requested as f64) / self.requested as f64
    }
}

/// Resident bytes of this process (`Rss:` of `/proc/self/smaps_rollup`, in kB).
fn resident() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup")
        .map_err(|e| Error::Unsupported(format!("cannot read /proc/self/smaps_rollup: {e}")))?;
    text.lines()
        .find_map(|l| l.strip_prefix("Rss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| Error::Run("no Rss line in /proc/self/smaps_rollup".into()))
}

/// How the ticks are held in the memory part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// One `Box<Tick>` each (glibc malloc).
    Malloc,
    /// A `BumpArena`, each tick at its own alignment (8).
    Arena,
    /// A `BumpArena` with document 003's rounding of every allocation to 64 bytes.
    Arena64,
}

impl Holder {
    /// In table order, which is also the order they run in: the arenas' buffers are
    /// mappings of their own, returned to the system when dropped, so malloc runs last
    /// on a heap that holds nothing freed it could reuse unseen.
    pub const ALL: [Holder; 3] = [Holder::Arena, Holder::Arena64, Holder::Malloc];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Holder::Malloc => "malloc",
            Holder::Arena => "arena",
            Holder::Arena64 => "arena, 64-byte slots",
        }
    }
}

/// Holds `cfg.memory_ticks` ticks the `how` way and measures the resident growth.
/// Runs on the calling thread; the memory part runs before every other part so the
/// heap holds no freed memory that malloc could reuse unseen.
pub fn memory(cfg: &Config, how: Holder) -> Result<Memory> {
    let n = cfg.memory_ticks;
    let requested = (n * size_of::<Tick>()) as u64;
    match how {
        Holder::Malloc => {
            // The vector of boxes is the benchmark's, not the ticks': every page of it
            // is written before the first reading. (`vec![None; n]` would be calloc's
            // untouched zero pages, faulted in during the measurement; `black_box`
            // keeps the compiler from dropping the stores of zero.)
            let mut held: Vec<Option<Box<Tick>>> = Vec::with_capacity(n);
            for _ in 0..n {
                held.push(black_box(None));
            }
            let before = resident()?;
            for (i, slot) in held.iter_mut().enumerate() {
                *slot = Some(Box::new(Tick::new(i as u64)));
            }
            let after = resident()?;
            black_box(&held);
            Ok(Memory {
                requested,
                resident: after.saturating_sub(before),
            })
        }
        Holder::Arena | Holder::Arena64 => {
            let slot = if how == Holder::Arena { 24 } else { 64 };
            let arena = BumpArena::new(n * slot).map_err(|e| Error::Run(e.to_string()))?;
            let before = resident()?;
            for i in 0..n as u64 {
                let ok = if how == Holder::Arena {
                    arena.try_alloc(Tick::new(i)).is_ok()
                } else {
                    arena.try_alloc(Tick64(Tick::new(i))).is_ok()
                };
                if !ok {
                    bug("arena full");
                }
            }
            let after = resident()?;
            Ok(Memory {
                requested,
                resident: after.saturating_sub(before),
            })
        }
    }
}

// ---------------------------------------------------------------------------------
// The profiler: every allocate and release timed, pool and malloc.

/// Profiles `batches` x (`batch` allocations, then `batch` releases) of orders on
/// the pool, then on `Box`; returns (pool, malloc) reports.
pub fn profiled(cfg: &Config, timer: Timer, clock: &Clock) -> Result<(AllocReport, AllocReport)> {
    let (batches, batch) = (cfg.profile_batches, 1000usize);
    let cpu = cfg.placement.first();
    let pool_clock = clock.clone();
    let pool = on_core(timer, stop::flag(), cpu, move || {
        let pool = Pool::<Order>::new(Capacity::Fixed(batch)).unwrap_or_else(|e| bug(e));
        let mut prof = AllocProfiler::new(pool_clock);
        let mut held = Vec::with_capacity(batch);
        for b in 0..batches {
            for i in 0..batch {
                let r = prof.alloc(|| pool.try_alloc_raw(Order::new((b * batch + i) as u64)));
                held.push(r.unwrap_or_else(|_| bug("full")));
            }
            for r in held.drain(..) {
                let _ = prof.free(|| pool.free(r));
            }
        }
        prof.report()
    })?;
    let box_clock = clock.clone();
    let malloc = on_core(timer, stop::flag(), cpu, move || {
        let mut prof = AllocProfiler::new(box_clock);
        let mut held = Vec::with_capacity(batch);
        for b in 0..batches {
            for i in 0..batch {
                held.push(prof.alloc(|| Box::new(Order::new((b * batch + i) as u64))));
            }
            for r in held.drain(..) {
                prof.free(|| drop(r));
            }
        }
        prof.report()
    })?;
    Ok((pool, malloc))
}

// ---------------------------------------------------------------------------------
// NUMA: sum a buffer placed on node 0 from a CPU of node 0 and of node 1.

/// What the NUMA part found.
#[derive(Clone, Debug, Serialize)]
pub struct NumaOutcome {
    /// Online nodes.
    pub nodes: Vec<u32>,
    /// GB/s summing the buffer from a CPU on its node.
    pub local_gbps: f64,
    /// The CPU that did.
    pub local_cpu: usize,
    /// GB/s from a CPU of another node, where there is one this process may use.
    pub remote_gbps: Option<f64>,
    /// The CPU that did.
    pub remote_cpu: Option<usize>,
    /// The node the buffer's pages were found on.
    pub buffer_node: u32,
    /// The per-node pool (`handoff_pool::numa::PerNode`) from every CPU this process
    /// may use.
    pub per_node: Vec<PerNodeCheck>,
}

/// Objects a thread pinned to `cpu` took from the per-node pool, and how many of them
/// lay on its own node.
#[derive(Clone, Debug, Serialize)]
pub struct PerNodeCheck {
    /// The thread's core.
    pub cpu: usize,
    /// That core's node.
    pub node: u32,
    /// Objects taken.
    pub objects: usize,
    /// Of them, on `node`.
    pub on_own_node: usize,
}

/// Objects each thread takes from the per-node pool.
const PER_NODE_OBJECTS: usize = 1000;

/// From each allowed CPU in turn, a pinned thread takes `PER_NODE_OBJECTS` orders from
/// one `PerNode` pool and reads the node of each.
fn per_node(timer: Timer, nodes: &[u32], allowed: &[usize]) -> Result<Vec<PerNodeCheck>> {
    let pools = PerNode::<Order, ThreadCached>::new(Capacity::Fixed(PER_NODE_OBJECTS))
        .map_err(|e| Error::Run(format!("per-node pool: {e}")))?;
    let mut out = Vec::new();
    for &node in nodes {
        for cpu in cpus_of(node, allowed) {
            let pools = &pools;
            let on_own_node = on_core(timer, stop::flag(), cpu, move || {
                let held: Vec<_> = (0..PER_NODE_OBJECTS)
                    .map(|i| {
                        pools
                            .try_alloc(Order::new(i as u64))
                            .unwrap_or_else(|_| bug("full"))
                    })
                    .collect();
                held.iter()
                    .filter(|o| numa::node_of(&***o).is_ok_and(|n| n == node))
                    .count()
            })?;
            out.push(PerNodeCheck {
                cpu,
                node,
                objects: PER_NODE_OBJECTS,
                on_own_node,
            });
        }
    }
    Ok(out)
}

/// CPUs of `node` (`handoff_pool::numa::cpus_of_node`) this process may use.
fn cpus_of(node: u32, allowed: &[usize]) -> Vec<usize> {
    numa::cpus_of_node(node)
        .map(|cpus| {
            cpus.into_iter()
                .map(|c| c as usize)
                .filter(|c| allowed.contains(c))
                .collect()
        })
        .unwrap_or_default()
}

/// Sums `passes` times over `mb` MiB of doubles on node `nodes[0]`.
pub fn numa_access(cfg: &Config, timer: Timer, allowed: &[usize]) -> Result<NumaOutcome> {
    let nodes = numa::online_nodes().map_err(|e| Error::Unsupported(e.to_string()))?;
    let home = nodes[0];
    let bytes = cfg.numa_mb << 20;
    let arena = BumpArena::with_placement(bytes, Placement::Node(home))
        .map_err(|e| Error::Run(format!("NUMA buffer: {e}")))?;
    let data = arena
        .try_alloc_slice_fill_with(bytes / 8, |i| i as f64)
        .map_err(|_| Error::Run("NUMA buffer: arena too small".into()))?;
    let buffer_node =
        numa::node_of(&data[data.len() / 2]).map_err(|e| Error::Run(e.to_string()))?;
    let data: &[f64] = data;
    let passes = cfg.numa_passes;
    let sum_on = |cpu: usize| -> Result<f64> {
        let ticks = on_core(timer, stop::flag(), cpu, move || {
            let t0 = timer.now();
            let mut sum = 0.0;
            for _ in 0..passes {
                sum += data.iter().sum::<f64>();
            }
            black_box(sum);
            timer.now() - t0
        })?;
        Ok((bytes * passes) as f64 / timer.seconds(ticks) / 1e9)
    };
    let local_cpu = cpus_of(home, allowed)
        .first()
        .copied()
        .unwrap_or(cfg.placement.first());
    let local_gbps = sum_on(local_cpu)?;
    let remote_cpu = nodes[1..]
        .iter()
        .find_map(|&n| cpus_of(n, allowed).first().copied());
    let remote_gbps = remote_cpu.map(sum_on).transpose()?;
    let per_node = per_node(timer, &nodes, allowed)?;
    Ok(NumaOutcome {
        per_node,
        nodes,
        local_gbps,
        local_cpu,
        remote_gbps,
        remote_cpu,
        buffer_node,
    })
}

/// The document's cache figure (L1 misses over 100k allocations), from the CPU's
/// counters through `perf_event_open`, or what the kernel answered where it could not
/// count.
#[derive(Clone, Debug, Serialize)]
pub struct L1Misses {
    /// Allocations counted per contender.
    pub allocations: usize,
    /// L1 data-cache read misses: the warm pool, then malloc (`Box`), each over
    /// `allocations` allocations and as many releases.
    pub misses: Option<(u64, u64)>,
    /// Why there is no count: the kernel's answer to `perf_event_open`.
    pub unavailable: Option<String>,
}

/// Counts L1 data-cache read misses while `allocations` orders are allocated and
/// released, from a warm pool and with `Box`, on the first thread's core.
pub fn l1_misses(cfg: &Config, timer: Timer, allocations: usize) -> Result<L1Misses> {
    use perf_event::events::{Cache, CacheId, CacheOp, CacheResult};
    const MISS: Cache = Cache {
        which: CacheId::L1D,
        operation: CacheOp::READ,
        result: CacheResult::MISS,
    };
    let n = allocations;
    let counted = on_core(timer, stop::flag(), cfg.placement.first(), move || {
        let count = |work: &mut dyn FnMut()| -> std::io::Result<u64> {
            let mut c = perf_event::Builder::new(MISS).build()?;
            c.enable()?;
            work();
            c.disable()?;
            c.read()
        };
        let pool =
            Pool::<Order>::new(Capacity::Grow { first_block: 4096 }).unwrap_or_else(|e| bug(e));
        let mut held = Vec::with_capacity(n);
        let mut pooled = || {
            for i in 0..n as u64 {
                held.push(
                    pool.try_alloc_raw(Order::new(i))
                        .unwrap_or_else(|_| bug("full")),
                );
            }
            for r in held.drain(..) {
                let _ = pool.free(r);
            }
        };
        // One pass to warm the pool (the document's pool is a long-lived one).
        pooled();
        let p = count(&mut pooled)?;
        let mut boxes: Vec<Box<Order>> = Vec::with_capacity(n);
        let m = count(&mut || {
            for i in 0..n as u64 {
                boxes.push(Box::new(Order::new(i)));
            }
            boxes.clear();
        })?;
        Ok::<_, std::io::Error>((p, m))
    })?;
    Ok(match counted {
        Ok(pair) => L1Misses {
            allocations: n,
            misses: Some(pair),
            unavailable: None,
        },
        Err(e) => L1Misses {
            allocations: n,
            misses: None,
            unavailable: Some(format!(
                "perf_event_open for L1 data-cache read misses: {e}{}",
                match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) =>
                        " (this CPU, as the kernel sees it, has no such counter: a VM without a virtual PMU)",
                    Some(libc::EACCES) | Some(libc::EPERM) =>
                        " (not permitted: see /proc/sys/kernel/perf_event_paranoid)",
                    _ => "",
                }
            )),
        },
    })
}

/// The document's cache figure on a simulated L1: Valgrind's callgrind
/// (`--cache-sim=yes`) counts L1 data read misses of the same two passes as
/// [`l1_misses`], each in its own child process, where the CPU's counters cannot be
/// read (a VM without a virtual PMU) or beside them. Labelled simulated wherever shown.
#[derive(Clone, Debug, Serialize)]
pub struct SimulatedL1 {
    /// Allocations counted per contender.
    pub allocations: usize,
    /// Simulated L1 data read misses: the warm pool, then malloc (`Box`).
    pub misses: Option<(u64, u64)>,
    /// The simulated L1 data cache, as callgrind describes it.
    pub cache: Option<String>,
    /// Why there is no count.
    pub unavailable: Option<String>,
}

/// Counts [`SimulatedL1`] with callgrind, or says why it could not.
pub fn l1_simulated(timer: Timer, allocations: usize) -> SimulatedL1 {
    let none = |why: String| SimulatedL1 {
        allocations,
        misses: None,
        cache: None,
        unavailable: Some(why),
    };
    let found = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return none(
            "valgrind is not installed (apt-get install valgrind gives callgrind's simulated cache)"
                .into(),
        );
    }
    let mut counts = [0u64; 2];
    let mut cache = None;
    for (k, pool_side) in [true, false].into_iter().enumerate() {
        let file =
            std::env::temp_dir().join(format!("handoff-l1-{}-{}.callgrind", std::process::id(), k));
        let wrapper: Vec<std::ffi::OsString> = [
            "valgrind".into(),
            "-q".into(),
            "--tool=callgrind".into(),
            "--cache-sim=yes".into(),
            "--collect-atstart=no".into(),
            format!("--toggle-collect={}", super::sharing::L1_COUNTED),
            format!("--callgrind-out-file={}", file.display()),
        ]
        .into_iter()
        .map(std::ffi::OsString::from)
        .collect();
        let ran = super::sharing::l1_child(&wrapper, pool_side, allocations as u64, timer);
        let text = std::fs::read_to_string(&file);
        let _ = std::fs::remove_file(&file);
        if let Err(e) = ran {
            return none(format!("callgrind: {e}"));
        }
        let text = match text {
            Ok(t) => t,
            Err(e) => return none(format!("callgrind wrote no output ({e})")),
        };
        match read_callgrind(&text, "D1mr") {
            Some((n, desc)) => {
                counts[k] = n;
                cache = cache.or(desc);
            }
            None => return none("callgrind's output has no D1mr total".into()),
        }
    }
    SimulatedL1 {
        allocations,
        misses: Some((counts[0], counts[1])),
        cache,
        unavailable: None,
    }
}

/// The total of `event` in a callgrind output file, and the simulated D1 cache's
/// description.
fn read_callgrind(text: &str, event: &str) -> Option<(u64, Option<String>)> {
    let mut events: Option<Vec<&str>> = None;
    let mut total: Option<Vec<u64>> = None;
    let mut desc = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line
            .strip_prefix("totals:")
            .or_else(|| line.strip_prefix("summary:"))
        {
            total = Some(
                rest.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect(),
            );
        } else if let Some(rest) = line.strip_prefix("desc: D1 cache:") {
            desc = Some(rest.trim().to_string());
        }
    }
    let k = events?.iter().position(|e| *e == event)?;
    Some((*total?.get(k)?, desc))
}

#[cfg(test)]
mod tests {
    #[test]
    fn callgrind_totals_are_read_by_event_name() {
        let text = "desc: I1 cache: 32768 B, 64 B, 8-way associative\ndesc: D1 cache: 32768 B, 64 B, 8-way associative\ncmd: x\nevents: Ir Dr Dw I1mr D1mr D1mw\nfn=(1) f\n0 5 1 1 0 0 0\nsummary: 100 40 30 2 17 9\ntotals: 100 40 30 2 17 9\n";
        let (n, desc) = super::read_callgrind(text, "D1mr").unwrap();
        assert_eq!(n, 17);
        assert_eq!(desc.as_deref(), Some("32768 B, 64 B, 8-way associative"));
        assert!(super::read_callgrind("events: Ir\n", "D1mr").is_none());
    }
}
