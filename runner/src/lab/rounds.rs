//! `runner all` in rounds: each experiment runs several times, once in every round, the
//! rounds one after the other over the whole run, so its repeats meet the different
//! states a host goes through in minutes (a placement, a regime of the mutex queue, a
//! pause). Each round's results are judged on their own; [`combine`] then gives every
//! claim one verdict from all of its rounds: the verdict they share when they agree,
//! *within noise* with each round's figures when they do not, so that no verdict rests
//! on the one round that happened to see a state.

use super::claims::Verdict;
use serde_json::{json, Value};

/// The folder inside a `runner all` folder that keeps every round's own results file
/// (`rounds/<experiment>-<round>.json`).
pub const ROUNDS_DIR: &str = "rounds";

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The side a verdict takes: `Some(true)` for *holds* and *reproduced*, `Some(false)`
/// for *fails* and *differs*, `None` for the others.
fn side(word: &str) -> Option<bool> {
    match word {
        "holds" | "reproduced" => Some(true),
        "fails" | "differs" => Some(false),
        _ => None,
    }
}

/// Whether a round's verdict counts: it measured the claim (not *not measured*, not
/// *not measurable here*: a round the host placed far, or whose noise floor hid the
/// claim, says nothing either way).
fn counts(word: &str) -> bool {
    word != Verdict::NotMeasured.as_str() && word != Verdict::NotMeasurableHere.as_str()
}

/// One claim's verdict from its rounds (`(round number, claim)`, the claims of one id
/// and occurrence): the claim of the last round, its verdict, figures and reason
/// replaced, and a `rounds` field holding each round's verdict and figures.
///
/// The rule (docs/methodology.md, "Rounds"). Only the rounds that measured the claim
/// count (*not measured* and *not measurable here* do not). Rounds that contradict each
/// other (one holds or reproduces, another fails or differs) make it *within noise*.
/// Otherwise a verdict needs more than half of the counted rounds, and at least two of
/// them: fewer, and it is *within noise* (the other rounds could not tell), so that no
/// verdict rests on the one round that happened to see a host state. A claim only one
/// round could measure is *not measurable here*, that round's verdict in its reason; no
/// round: the last round's verdict. `asked` is the number of rounds the run was asked
/// for: a round that failed, or did not judge the claim, is one that could not measure
/// it; only a run of one round (`asked` 1) takes its one round's verdict.
fn combine_claim(rounds: &[(usize, &Value)], asked: usize) -> Value {
    let (_, last) = rounds[rounds.len() - 1];
    let mut out = last.clone();
    let n = asked.max(rounds.len());
    let word_of = |c: &Value| str_of(&c["verdict"]).to_string();
    out["rounds"] = Value::Array(
        rounds
            .iter()
            .map(|(k, c)| json!({"round": k, "verdict": c["verdict"], "ours": c["ours"]}))
            .collect(),
    );
    let ours_of = |c: &Value| {
        let o = str_of(&c["ours"]);
        if o.is_empty() { "-" } else { o }.to_string()
    };
    let counted: Vec<(usize, &Value)> = rounds
        .iter()
        .copied()
        .filter(|(_, c)| counts(&word_of(c)))
        .collect();
    // Each verdict the rounds gave, in the order first seen, with its rounds.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (k, c) in rounds {
        let w = word_of(c);
        match groups.iter_mut().find(|(g, _)| *g == w) {
            Some((_, ks)) => ks.push(*k),
            None => groups.push((w, vec![*k])),
        }
    }
    let split = groups
        .iter()
        .map(|(w, ks)| {
            format!(
                "{w} in round{} {}",
                if ks.len() == 1 { "" } else { "s" },
                super::fmt::and_list(ks)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let each = |of: &[(usize, &Value)]| {
        of.iter()
            .map(|(k, c)| format!("round {k} ({}): {}", word_of(c), str_of(&c["reason"])))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let figures: Vec<String> = rounds.iter().map(|(_, c)| ours_of(c)).collect();
    if figures.iter().any(|f| *f != figures[0]) {
        out["ours"] = rounds
            .iter()
            .map(|(k, c)| format!("round {k}: {}", ours_of(c)))
            .collect::<Vec<_>>()
            .join(" | ")
            .into();
    }
    if counted.is_empty() {
        out["reason"] = format!("{split} (of {n}); {}", each(&rounds[rounds.len() - 1..])).into();
        return out;
    }
    if counted.len() == 1 && n > 1 {
        let (k, _) = counted[0];
        out["verdict"] = Verdict::NotMeasurableHere.as_str().into();
        out["reason"] = format!(
            "only round {k} of {n} could measure it ({split}): one round is not a verdict; {}",
            each(rounds)
        )
        .into();
        return out;
    }
    let sides: Vec<Option<bool>> = counted.iter().map(|(_, c)| side(&word_of(c))).collect();
    let contradict = sides.contains(&Some(true)) && sides.contains(&Some(false));
    // The decided verdicts (not within noise), and whether they are one word.
    let decided: Vec<String> = counted
        .iter()
        .map(|(_, c)| word_of(c))
        .filter(|w| side(w).is_some())
        .collect();
    let one_word = decided.iter().all(|w| *w == decided[0]);
    let enough = !decided.is_empty() && 2 * decided.len() > counted.len() && decided.len() >= 2;
    if !contradict && one_word && (enough || n == 1) {
        out["verdict"] = decided[0].clone().into();
        out["reason"] = format!(
            "{} in {} of {n} rounds{}; {}",
            decided[0],
            decided.len(),
            if decided.len() < n {
                format!(" ({split})")
            } else {
                String::new()
            },
            each(&counted[counted.len() - 1..])
        )
        .into();
        return out;
    }
    if decided.is_empty() {
        out["verdict"] = Verdict::WithinNoise.as_str().into();
        out["reason"] = format!(
            "within noise in every round that measured it ({split}); {}",
            each(&counted)
        )
        .into();
        return out;
    }
    out["verdict"] = Verdict::WithinNoise.as_str().into();
    out["reason"] = format!(
        "{} ({split}): within noise across this host's states; {}",
        if contradict || !one_word {
            "the rounds disagree"
        } else {
            "too few rounds decided it"
        },
        each(&counted)
    )
    .into();
    out
}

/// One experiment's results from its rounds (`(round number, results JSON)`, at least
/// one, in round order) of a run asked for `asked` rounds (more than it has where some
/// failed): the last round's file (its figures, charts and tables), every
/// claim judged on all rounds together (see `combine_claim`; a claim is matched across
/// rounds by its id and its occurrence of that id), and a `rounds` section naming each
/// round's own file in [`ROUNDS_DIR`].
///
/// ```
/// use runner::lab::rounds::combine;
/// use serde_json::json;
/// let round = |v: &str, ours: &str| json!({"experiment": "queue", "claims": [
///     {"id": "p50-tie", "claim": "c", "ours": ours, "verdict": v, "reason": "r"}]});
/// let agree = combine(&[(1, round("holds", "1.02x")), (2, round("holds", "1.03x"))], 2);
/// assert_eq!(agree["claims"][0]["verdict"], "holds");
/// assert!(agree["claims"][0]["reason"].as_str().unwrap().starts_with("holds in 2 of 2 rounds"));
/// let split = combine(&[(1, round("holds", "1.02x")), (2, round("fails", "1.12x"))], 2);
/// assert_eq!(split["claims"][0]["verdict"], "within noise");
/// assert_eq!(split["claims"][0]["ours"], "round 1: 1.02x | round 2: 1.12x");
/// ```
pub fn combine(rounds: &[(usize, Value)], asked: usize) -> Value {
    let (_, last) = &rounds[rounds.len() - 1];
    let mut out = last.clone();
    let experiment = str_of(&last["experiment"]).to_string();
    // Every (id, occurrence) of any round, in the order of the last round, then those
    // only earlier rounds judged.
    let mut keys: Vec<(String, usize)> = Vec::new();
    let mut claims_of = Vec::new();
    for (k, r) in rounds.iter().rev() {
        let mut seen: Vec<(String, usize)> = Vec::new();
        let mut keyed = Vec::new();
        for c in r["claims"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let id = str_of(&c["id"]).to_string();
            let occ = seen.iter().filter(|(i, _)| *i == id).count();
            seen.push((id.clone(), occ));
            if !keys.contains(&(id.clone(), occ)) {
                keys.push((id.clone(), occ));
            }
            keyed.push(((id, occ), c));
        }
        claims_of.push((*k, keyed));
    }
    claims_of.reverse();
    let claims: Vec<Value> = keys
        .iter()
        .map(|key| {
            let of_key: Vec<(usize, &Value)> = claims_of
                .iter()
                .filter_map(|(k, keyed)| {
                    keyed
                        .iter()
                        .find(|(kk, _)| kk == key)
                        .map(|(_, c)| (*k, *c))
                })
                .collect();
            combine_claim(&of_key, asked)
        })
        .collect();
    out["claims"] = Value::Array(claims);
    out["rounds"] = json!({
        "count": rounds.len(),
        "asked": asked.max(rounds.len()),
        "figures_from": rounds[rounds.len() - 1].0,
        "files": rounds
            .iter()
            .map(|(k, _)| format!("{ROUNDS_DIR}/{experiment}-{k}.json"))
            .collect::<Vec<_>>(),
    });
    out
}

/// How many rounds `runner all` runs at a scale by default: three at the default and
/// full sizes, one for `--smoke` and `--quick` (a first look, not a verdict).
pub fn default_rounds(timed_verdicts: bool) -> usize {
    if timed_verdicts {
        3
    } else {
        1
    }
}

/// The runs an experiment gets in each of `rounds` rounds when a whole run gives it
/// `runs`: a share of them, rounded down, at least `min` (its own least number of
/// runs). A run's repeats are spread over its rounds: five become one in each of three
/// rounds, which keeps `runner all` near its time of one round of five (most of an
/// experiment's time is per round, not per run).
///
/// ```
/// use runner::lab::rounds::runs_per_round;
/// assert_eq!(runs_per_round(5, 3, 1), 1);
/// assert_eq!(runs_per_round(10, 3, 2), 3);
/// assert_eq!(runs_per_round(5, 1, 1), 5);
/// assert_eq!(runs_per_round(5, 3, 2), 2);
/// ```
pub fn runs_per_round(runs: usize, rounds: usize, min: usize) -> usize {
    (runs / rounds.max(1)).max(min).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, verdict: &str, ours: &str, reason: &str) -> Value {
        json!({"id": id, "claim": "c", "document": "d", "where": "w",
               "ours": ours, "verdict": verdict, "reason": reason})
    }

    fn file(claims: Vec<Value>) -> Value {
        json!({"experiment": "pool", "claims": claims, "variants": []})
    }

    fn one(verdicts: &[(&str, &str)]) -> Value {
        let rounds: Vec<(usize, Value)> = verdicts
            .iter()
            .enumerate()
            .map(|(i, (v, o))| {
                (
                    i + 1,
                    file(vec![claim("a", v, o, &format!("why {}", i + 1))]),
                )
            })
            .collect();
        let n = rounds.len();
        combine(&rounds, n)["claims"][0].clone()
    }

    #[test]
    fn rounds_that_agree_keep_their_verdict_and_say_how_many_gave_it() {
        let r = |o| file(vec![claim("a", "fails", o, "1.12x > 1.1x")]);
        let out = combine(&[(1, r("1.12x")), (2, r("1.12x")), (3, r("1.12x"))], 3);
        let c = &out["claims"][0];
        assert_eq!(c["verdict"], "fails");
        assert_eq!(c["ours"], "1.12x");
        assert_eq!(
            c["reason"],
            "fails in 3 of 3 rounds; round 3 (fails): 1.12x > 1.1x"
        );
        assert_eq!(c["rounds"].as_array().unwrap().len(), 3);
        assert_eq!(out["rounds"]["count"], 3);
        assert_eq!(out["rounds"]["files"][2], "rounds/pool-3.json");
    }

    #[test]
    fn rounds_that_contradict_each_other_are_within_noise() {
        // Two rounds hold, one fails: within noise, not "holds".
        let c = one(&[("holds", "0.98x"), ("fails", "1.12x"), ("holds", "1.01x")]);
        assert_eq!(c["verdict"], "within noise");
        let reason = c["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the rounds disagree (holds in rounds 1 and 3, fails in round 2)"),
            "{reason}"
        );
        assert!(reason.contains("round 2 (fails): why 2"), "{reason}");
        assert_eq!(
            c["ours"],
            "round 1: 0.98x | round 2: 1.12x | round 3: 1.01x"
        );
        assert_eq!(
            one(&[("reproduced", "1"), ("differs", "2")])["verdict"],
            "within noise"
        );
    }

    #[test]
    fn one_round_never_decides_a_verdict() {
        // One round decided, two could not tell.
        let c = one(&[("within noise", "1"), ("within noise", "1"), ("fails", "1")]);
        assert_eq!(c["verdict"], "within noise");
        assert!(c["reason"]
            .as_str()
            .unwrap()
            .starts_with("too few rounds decided it"));
        // Two of three decided the same way, the third could not tell.
        assert_eq!(
            one(&[("within noise", "1"), ("fails", "1"), ("fails", "1")])["verdict"],
            "fails"
        );
        // Two rounds measured it, one decided.
        assert_eq!(
            one(&[
                ("not measurable here", "-"),
                ("holds", "1"),
                ("within noise", "1")
            ])["verdict"],
            "within noise"
        );
        // Only one round could measure it (the host placed the others far).
        let c = one(&[
            ("not measurable here", "-"),
            ("reproduced", "1"),
            ("not measurable here", "-"),
        ]);
        assert_eq!(c["verdict"], "not measurable here");
        assert!(c["reason"]
            .as_str()
            .unwrap()
            .starts_with("only round 2 of 3 could measure it"));
        // Within noise in every round.
        assert_eq!(
            one(&[("within noise", "1"), ("within noise", "2")])["verdict"],
            "within noise"
        );
    }

    #[test]
    fn rounds_that_did_not_measure_the_claim_do_not_count() {
        let c = one(&[("not measured", ""), ("holds", "2.1x"), ("holds", "2.2x")]);
        assert_eq!(c["verdict"], "holds");
        assert!(c["reason"].as_str().unwrap().starts_with(
            "holds in 2 of 3 rounds (not measured in round 1, holds in rounds 2 and 3)"
        ));
        assert_eq!(
            one(&[("not measured", ""), ("not measured", "")])["verdict"],
            "not measured"
        );
        let emulated = one(&[("not measurable here", "-"), ("not measurable here", "-")]);
        assert_eq!(emulated["verdict"], "not measurable here");
    }

    #[test]
    fn claims_are_matched_by_id_and_occurrence_even_when_a_round_lacks_one() {
        let out = combine(
            &[
                (
                    1,
                    file(vec![
                        claim("t", "holds", "1", "x"),
                        claim("t", "fails", "2", "x"),
                        claim("only-1", "holds", "1", "x"),
                    ]),
                ),
                (
                    2,
                    file(vec![
                        claim("t", "holds", "1", "x"),
                        claim("t", "fails", "2", "x"),
                    ]),
                ),
            ],
            2,
        );
        let claims = out["claims"].as_array().unwrap();
        assert_eq!(claims.len(), 3);
        assert_eq!(claims[0]["verdict"], "holds");
        assert_eq!(claims[1]["verdict"], "fails");
        assert_eq!(claims[2]["id"], "only-1");
        assert_eq!(claims[2]["rounds"].as_array().unwrap().len(), 1);
        // Judged by one round of two: not a verdict.
        assert_eq!(claims[2]["verdict"], "not measurable here");
    }

    #[test]
    fn a_round_that_failed_counts_as_one_that_could_not_measure() {
        let r = |k: usize| (k, file(vec![claim("a", "holds", "1.02x", "within 5%")]));
        // Three asked, round 2 failed: two rounds still decide.
        let out = combine(&[r(1), r(3)], 3);
        assert_eq!(out["claims"][0]["verdict"], "holds");
        assert!(out["claims"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("holds in 2 of 3 rounds"));
        assert_eq!(
            (
                out["rounds"]["count"].as_u64(),
                out["rounds"]["asked"].as_u64()
            ),
            (Some(2), Some(3))
        );
        // Only one of three finished: one round is not a verdict.
        let alone = combine(&[r(2)], 3);
        assert_eq!(alone["claims"][0]["verdict"], "not measurable here");
        assert_eq!(alone["rounds"]["files"][0], "rounds/pool-2.json");
        // A run of one round asked for one takes its verdict.
        assert_eq!(combine(&[r(1)], 1)["claims"][0]["verdict"], "holds");
    }
}
