//! The project's targets for `runner pool` that document 001 does not set: the pools
//! against the best general allocators, each a `Box` on it in a child process.

use super::report::{f, Outcome};
use super::work::{Contender, Scenario};
use crate::lab::claims::{ratio_at_least, Claim};

/// Project targets the document does not set: the pools against the best general
/// allocators, each a `Box` on it in a child process, on the runs' own ratios.
pub(super) fn best_allocator_claims(out: &Outcome) -> Vec<Claim> {
    use Contender::*;
    use Scenario::*;
    let times = |target: f64| {
        if target == 1.0 {
            "at least as fast as".to_string()
        } else {
            format!("at least {target}x as fast as")
        }
    };
    // (the pool, its scenario, how the claim names it and the scenario, where the claim
    // stands, what the document has)
    let none = (
        SingleThreaded,
        Interleaved,
        "NONE is",
        "(interleaved, one thread)",
        "second table, NONE row, beside the best general allocators (project target)",
        "not measured (the document's malloc is the C library's)",
    );
    let cached = (
        ThreadCached,
        Concurrent,
        "Per-thread caches are",
        "under contention",
        "second table, per-thread caches, beside the best general allocators (project target)",
        "not measured (deferred to ADR-0020 §4)",
    );
    let claim = |id: &'static str,
                 of: (Contender, Scenario, &str, &str, &'static str, &str),
                 other: Contender,
                 target: f64| {
        let (pool, scenario, who, when, row, document) = of;
        let (p, x) = (out.ns(scenario, pool), out.ns(scenario, other));
        Claim::new(
            id,
            format!(
                "{who} {} a Box on {} {when}; project target",
                times(target),
                other.doc_name()
            ),
            document,
            format!("{:.2}x ({} vs {} ns/op)", x / p, f(p), f(x)),
            ratio_at_least(
                &out.paired(scenario, other, pool, false),
                target,
                &format!("{} / {}, {}", other.name(), pool.name(), scenario.name()),
            ),
        )
        .at(row)
    };
    vec![
        claim("none-vs-mimalloc", none, Mimalloc, 2.0),
        claim("none-vs-handoff-alloc", none, HandoffAlloc, 1.0),
        claim("thread-cached-vs-mimalloc", cached, Mimalloc, 1.5),
        claim("thread-cached-vs-handoff-alloc", cached, HandoffAlloc, 1.0),
    ]
}
