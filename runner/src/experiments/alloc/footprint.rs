//! Two statements of document 004 that its test does not show on its own: what Take 1's
//! header per block costs at each size class (the memory its blocks' pages take, against
//! Take 2's and Take 3's), and what reaching the allocator through a thread-local costs
//! (a thread-local read against a plain static's, beside handoff-alloc's pair).

use super::report::Outcome;
use super::{Config, Contender};
use crate::lab::claims::{near, ratio_at_least, Claim, Verdict};
use crate::lab::measure::median_or_nan as median;
use handoff_alloc::takes::{Take1, Take2, Take3, PAGE};
use std::collections::HashSet;

/// The sizes the footprint is taken at: the smallest classes, where the document says a
/// header costs most, and a few larger ones.
pub const SIZES: [usize; 8] = [8, 16, 24, 32, 64, 256, 1024, 4096];

/// Bytes requested at each size: enough blocks that a page more or less is 0.1%.
const BYTES: usize = 4 << 20;

/// The memory `n` blocks of `size` bytes from one fresh take occupy, over the bytes
/// requested: the distinct 4 KiB pages their bytes fall in, times 4096, over `n * size`.
/// A program that uses its blocks touches those pages and no others of the take, so this
/// is the resident memory it pays; it reads the addresses the take hands out and touches
/// nothing (Take 1's headers lie between its blocks, so they widen the stride the pages
/// are counted over). `None` where the take's reservation is refused.
fn footprint(mut alloc: impl FnMut(usize) -> *mut u8, size: usize) -> Option<f64> {
    let n = BYTES / size;
    let mut pages = HashSet::with_capacity(BYTES / PAGE * 2);
    for _ in 0..n {
        let p = alloc(size).addr();
        if p == 0 {
            return None;
        }
        for page in (p / PAGE)..=((p + size - 1) / PAGE) {
            pages.insert(page);
        }
    }
    Some((pages.len() * PAGE) as f64 / (n * size) as f64)
}

/// One take's footprint at every size of [`SIZES`]: (size, ratio), `None` where the take
/// could not be built or refused a block.
pub type Footprints = Vec<(usize, Option<f64>)>;

/// Each take's footprint at every size of [`SIZES`]: (name, [(size, ratio)]). The blocks
/// are never freed: each size gets a fresh take, dropped (its reservation unmapped)
/// after it.
pub fn per_class() -> Vec<(&'static str, Footprints)> {
    let of = |each: &dyn Fn(usize) -> Option<f64>| SIZES.iter().map(|&s| (s, each(s))).collect();
    vec![
        (
            "Take 1",
            of(&|s| Take1::new().and_then(|mut t| footprint(|z| t.alloc(z), s))),
        ),
        (
            "Take 2",
            of(&|s| Take2::new().and_then(|mut t| footprint(|z| t.alloc(z), s))),
        ),
        (
            "Take 3",
            of(&|s| Take3::new().and_then(|mut t| footprint(|z| t.alloc(z), s))),
        ),
    ]
}

/// "The item header cannot be less than 8 bytes, which means up to twice the overhead
/// for smaller allocation sizes": Take 1's footprint at the smallest class (8 bytes)
/// against the document's 2x, every take's at every size beside it. Untimed: the pages
/// a layout takes are the same on every machine.
pub fn take1_small_sizes() -> Claim {
    let table = per_class();
    let at = |who: &str, size: usize| {
        table
            .iter()
            .find(|(n, _)| *n == who)
            .and_then(|(_, v)| v.iter().find(|(s, _)| *s == size))
            .and_then(|(_, r)| *r)
    };
    let ours = table
        .iter()
        .map(|(who, v)| {
            let each = v
                .iter()
                .map(|(s, r)| match r {
                    Some(r) => format!("{s} B {r:.2}x"),
                    None => format!("{s} B -"),
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("{who}: {each}")
        })
        .collect::<Vec<_>>()
        .join("; ");
    let verdict = match (at("Take 1", 8), at("Take 3", 8)) {
        (Some(t1), Some(_)) => {
            let (v, why) = near(t1, 2.0);
            (
                v,
                format!("Take 1 at 8 bytes: {t1:.2}x the bytes requested; {why}"),
            )
        }
        _ => (
            Verdict::NotMeasurableHere,
            "a take's reservation of address space was refused".to_string(),
        ),
    };
    Claim::new(
        "take1_header_small_sizes",
        "a header before every block (Take 1) means up to twice the memory overhead for the smaller allocation sizes",
        "up to 2x for small sizes",
        format!("memory of the pages the blocks take over the bytes requested, 4 MiB of blocks of each size from a fresh take: {ours}"),
        verdict,
    )
    .at("Take 1 - Allocated-item headers")
    .untimed()
}

impl Outcome {
    /// Each repeat's handoff-alloc ticks per pair at the sweep's first (smallest)
    /// working set, less the no-allocator baseline's of the same repeat: the runs'
    /// own values of `pair_cycles_small_ws`.
    pub(super) fn small_ws_runs(&self) -> Vec<f64> {
        let first = |c: Contender| -> Vec<Option<f64>> {
            self.of(c)
                .iter()
                .map(|s| s.sweep.first().map(|p| p.1))
                .collect()
        };
        first(Contender::Handoff)
            .into_iter()
            .zip(first(Contender::Void))
            .filter_map(|(h, v)| Some(h? - v?))
            .collect()
    }

    /// "The performance penalties of accessing TLS are not too high": every `malloc`
    /// and `free` of handoff-alloc finds its thread's heap through a thread-local, as
    /// the document's allocator does. Each handoff-alloc repeat times a read of a
    /// thread-local against a read of a plain static on the main test's core
    /// (`Sample::tls_ns`); the claim holds when the two such reads of a pair cost at
    /// most a tenth of handoff-alloc's pair beyond the test's own (`ratio_at_least`).
    pub(super) fn tls_claim(&self, cfg: &Config) -> Claim {
        let h = Contender::Handoff;
        let pairs: Vec<(f64, f64)> = self
            .of(h)
            .iter()
            .zip(self.net_runs(h, cfg.threads, cfg))
            .filter_map(|(s, net)| Some((s.tls_ns?, net?)))
            .collect();
        let tls = median(pairs.iter().map(|p| p.0));
        let net = median(pairs.iter().map(|p| p.1));
        // A read that costs nothing beyond the static's: a ratio as large as it gets.
        let ratios: Vec<f64> = pairs
            .iter()
            .map(|&(t, n)| (n / (2.0 * t).max(1e-3)).min(1e6))
            .collect();
        Claim::new(
            "tls_penalty_small",
            "the performance penalties of accessing TLS are not too high, even for time-critical code",
            "not too high (one indirection from a designated register into likely cached memory)",
            format!(
                "a thread-local read {tls:.2} ns beyond a plain static's (median of {} repeats); handoff-alloc's pair {net:.1} ns beyond the test's own: its two reads {:.1}% of it",
                pairs.len(),
                200.0 * tls / net
            ),
            ratio_at_least(
                &ratios,
                10.0,
                "handoff-alloc's ns per pair beyond the test's own over two thread-local reads (the reads at most a tenth of the pair)",
            ),
        )
        .at("Task definition, the thread_local allocator")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_one_pays_its_header_at_small_sizes_and_the_others_do_not() {
        let table = per_class();
        let at = |who: &str, size: usize| {
            let (_, v) = table.iter().find(|(n, _)| *n == who).unwrap();
            v.iter().find(|(s, _)| *s == size).unwrap().1.unwrap()
        };
        // 8-byte blocks behind 8-byte headers: twice the pages.
        assert!((at("Take 1", 8) - 2.0).abs() < 0.01, "{table:?}");
        assert!((at("Take 1", 16) - 1.5).abs() < 0.01, "{table:?}");
        // A page header per 4 KiB, or nothing: within 1% at 8 bytes.
        assert!(
            at("Take 2", 8) < 1.01 && at("Take 3", 8) < 1.01,
            "{table:?}"
        );
        // Take 2's 4096-byte blocks start after a page's header and take two pages.
        assert!((at("Take 2", 4096) - 2.0).abs() < 0.01, "{table:?}");
        let claim = take1_small_sizes();
        assert_eq!(claim.verdict, Verdict::Reproduced, "{}", claim.reason);
        assert!(!claim.timed);
    }
}
