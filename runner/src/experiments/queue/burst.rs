//! The bursty load's claims (the project's, not the document's): what a wait inside
//! `try_push` / `try_pop` costs the items of a burst, judged on the runs' own p50s
//! (the variants alternate slice by slice, so run `i` of each saw the same moments).

use super::work::Variant;
use super::{Cell, Mode, Outcome};
use crate::lab::claims::{ratio_at_least, Claim};
use crate::lab::fmt::ns as fmt_ns;

/// `b`'s p50 over `a`'s, run by run.
fn p50_ratios(a: &Cell, b: &Cell) -> Vec<f64> {
    a.runs
        .iter()
        .zip(&b.runs)
        .map(|(x, y)| y.p50_ns as f64 / (x.p50_ns as f64).max(1.0))
        .collect()
}

fn figures(c: &Cell) -> String {
    let p = c.latency.percentiles();
    format!(
        "{} p50 {} p99 {}",
        c.variant.name(),
        fmt_ns(p.p50 as f64),
        fmt_ns(p.p99 as f64)
    )
}

/// The claims of the bursty load, where the variants they compare ran.
pub fn claims(out: &Outcome) -> Vec<Claim> {
    let b = |v| out.find(Mode::Burst, v);
    let mut v = Vec::new();
    if let (Some(plain), Some(slip)) = (b(Variant::HandoffSpsc), b(Variant::HandoffSpscSlipping)) {
        v.push(
            Claim::new(
                "burst-slipping-cost",
                "Temporal slipping (Options::slipping) makes the items of a burst wait inside try_pop: the slipping ring's per-item p50 in bursts at least 2x the default ring's",
                "(project: what the option costs)",
                format!("{} vs {}", figures(slip), figures(plain)),
                ratio_at_least(
                    &p50_ratios(plain, slip),
                    2.0,
                    "each run: slipping p50 over the default ring's",
                ),
            )
            .at("project claim beside the Burst section"),
        );
    }
    if let (Some(plain), Some(rtrb)) = (b(Variant::HandoffSpsc), b(Variant::Rtrb)) {
        v.push(
            Claim::new(
                "burst-no-wait",
                "The default ring (no call waits) delivers the items of a burst no later than rtrb: its per-item p50 in bursts at most rtrb's",
                "(project target)",
                format!("{} vs {}", figures(plain), figures(rtrb)),
                ratio_at_least(
                    &p50_ratios(plain, rtrb),
                    1.0,
                    "each run: rtrb's p50 over the default ring's",
                ),
            )
            .at("project claim beside the Burst section"),
        );
    }
    v
}
