//! Helpers the benches share: the two pinned cores, a two-thread run, and the paired
//! comparison that alternates two contenders and prints the median per-pair ratio.
#![allow(dead_code)]

use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

/// A contender: runs `n` items (or round trips, or operations) through and returns
/// the elapsed time.
pub type Run = fn(u64) -> Duration;

type Pins = Option<(core_affinity::CoreId, core_affinity::CoreId)>;

/// Read once, before any thread of this process is pinned.
pub fn cores() -> Pins {
    static CORES: OnceLock<Pins> = OnceLock::new();
    *CORES.get_or_init(|| {
        let allowed: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let ids: Vec<usize> = match std::env::var("HANDOFF_PIN") {
            Ok(spec) => spec
                .split(',')
                .map(|s| {
                    s.trim().parse().unwrap_or_else(|_| {
                        panic!("HANDOFF_PIN={spec:?}: expected two core ids, e.g. 0,1")
                    })
                })
                .collect(),
            Err(_) => allowed.iter().copied().take(2).collect(),
        };
        if ids.len() != 2 || ids[0] == ids[1] {
            eprintln!("bench: fewer than two distinct cores ({ids:?}); running unpinned");
            return None;
        }
        for id in &ids {
            assert!(
                allowed.contains(id),
                "core {id} is not in the allowed set {allowed:?}"
            );
        }
        eprintln!(
            "bench: producer on core {}, consumer on core {}",
            ids[0], ids[1]
        );
        Some((
            core_affinity::CoreId { id: ids[0] },
            core_affinity::CoreId { id: ids[1] },
        ))
    })
}

pub fn pin(core: Option<core_affinity::CoreId>) {
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
pub fn two_threads(producer: impl FnOnce() + Send, consumer: impl FnOnce() + Send) -> Duration {
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

/// Runs `work` on two fresh threads at once, pinned to the two cores; returns the
/// time from the first thread's start to the last one's end.
pub fn both_cores(work: impl Fn() + Sync) -> Duration {
    let pins = cores();
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let run = |core| {
            let (b, work) = (&barrier, &work);
            s.spawn(move || {
                pin(core);
                b.wait();
                let start = Instant::now();
                work();
                (start, Instant::now())
            })
        };
        let x = run(pins.map(|p| p.0));
        let y = run(pins.map(|p| p.1));
        let (x, y) = (
            x.join().expect("thread panicked"),
            y.join().expect("thread panicked"),
        );
        x.1.max(y.1) - x.0.min(y.0)
    })
}

/// Whether a paired section named `section` should run: not under `--list` or `--test`,
/// and only when no name filter is given or one of the filters is part of `section`
/// (criterion's own filters match the same way, by substring).
pub fn wanted(section: &str) -> bool {
    let mut args = std::env::args().skip(1);
    if args.any(|a| a == "--list" || a == "--test") {
        return false;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filter.is_empty() || filter.iter().any(|f| section.contains(f.as_str()))
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The round trip (ns) of a cache line between the two bench cores
/// ([`handoff_clock::link`]), 256 trips from two threads pinned there; `None` when the
/// bench runs unpinned.
pub fn link_probe() -> Option<f64> {
    static TIMER: OnceLock<handoff_clock::Timer> = OnceLock::new();
    let (a, b) = cores()?;
    let timer = *TIMER.get_or_init(|| handoff_clock::Clock::quick().timer());
    let link = handoff_clock::link::Link::new();
    std::thread::scope(|s| {
        let l = &link;
        s.spawn(move || {
            pin(Some(b));
            l.pong(256);
        });
        let ping = s.spawn(move || {
            pin(Some(a));
            l.ping(timer, 256)
        });
        ping.join().ok()
    })
}

/// Runs `a` and `b` alternately (`a` first in even pairs, `b` first in odd ones) and
/// prints each one's median rate and the median of the per-pair ratios `a / b`.
///
/// The round trip between the two cores is probed before and after every pair
/// ([`link_probe`]); a pair belongs to the placement of the cores both its probes fall
/// in ([`handoff_clock::link::Classes`]). Where the host moved the cores between
/// placements during the section, the median ratio is printed for each placement
/// too, and pairs whose probes disagree are counted as moved.
pub fn paired(
    label: &str,
    unit: &str,
    a: (&str, Run),
    b: (&str, Run),
    n: u64,
    pairs: usize,
    per_item_ns: bool,
) {
    let rate = |run: Run| {
        let d = run(n).as_secs_f64();
        if per_item_ns {
            d * 1e9 / n as f64
        } else {
            n as f64 / d / 1e6
        }
    };
    let (mut ra, mut rb, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let mut probes = vec![link_probe()];
    for i in 0..pairs {
        let (x, y) = if i % 2 == 0 {
            let x = rate(a.1);
            (x, rate(b.1))
        } else {
            let y = rate(b.1);
            (rate(a.1), y)
        };
        probes.push(link_probe());
        ra.push(x);
        rb.push(y);
        ratio.push(if per_item_ns { y / x } else { x / y });
    }
    let (lo, hi) = {
        let mut r = ratio.clone();
        r.sort_by(f64::total_cmp);
        (r[0], r[r.len() - 1])
    };
    println!(
        "{label:<28} {:<14} {:>8.1} {unit}   {:<14} {:>8.1} {unit}   {} advantage: median {:.2}x (min {lo:.2}, max {hi:.2}, {pairs} pairs)",
        a.0,
        median(&mut ra),
        b.0,
        median(&mut rb),
        a.0,
        median(&mut ratio),
    );
    by_placement(&probes, &ratio);
}

/// The per-placement line(s) under a paired result: `probes[i]` and `probes[i + 1]`
/// are the round trips around pair `i`.
fn by_placement(probes: &[Option<f64>], ratio: &[f64]) {
    let all: Vec<f64> = probes.iter().flatten().copied().collect();
    if all.len() != probes.len() {
        return; // unpinned: nothing to tag
    }
    let classes = handoff_clock::link::Classes::of(&all);
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); classes.list.len()];
    let mut moved = 0;
    for (i, &r) in ratio.iter().enumerate() {
        match classes.of_slice(all[i], all[i + 1]) {
            Some(k) => per[k].push(r),
            None => moved += 1,
        }
    }
    let parts: Vec<String> = classes
        .list
        .iter()
        .zip(&mut per)
        .filter(|(_, v)| !v.is_empty())
        .map(|(c, v)| format!("{} apart: {:.2}x ({} pairs)", c.label(), median(v), v.len()))
        .collect();
    println!(
        "{:<28} cores by placement (round trip probed around each pair): {}; {moved} pairs moved",
        "",
        parts.join("; ")
    );
}
