//! The pipeline's `mimalloc` variant: the `Box` strategy in a child runner whose
//! process allocator is mimalloc (`lab::child`), and the byte protocol its results
//! come back in.

use super::background::BgReport;
use super::work::{run_once, RunRaw, RunSpec, Variant};
use crate::lab;
use crate::lab::error::{Error, Result};
use crate::lab::measure::Stamps;
use crate::lab::pacer::Schedule;
use std::sync::atomic::{AtomicU8, Ordering};

/// The child task that runs the `Box` strategy under mimalloc.
pub const CHILD_TASK: &str = "pipeline";

/// Runs the `Box` strategy in a child process whose allocator is mimalloc.
pub(super) fn in_child(spec: &RunSpec, stop: &AtomicU8) -> Result<RunRaw> {
    let json = serde_json::to_vec(spec).map_err(|e| Error::Run(format!("mimalloc: {e}")))?;
    let out = lab::child::run("mimalloc", CHILD_TASK, "mimalloc", &json);
    if stop.load(Ordering::Relaxed) != 0 {
        return Err(Error::Interrupted);
    }
    decode(&out?, spec)
}

/// The child's side: a [`RunSpec`] in, the `Box` strategy run with this process's
/// allocator, the raw stamps out.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let spec: RunSpec = serde_json::from_slice(input).map_err(|e| format!("bad run spec: {e}"))?;
    static NEVER: AtomicU8 = AtomicU8::new(0);
    // The `Box` strategy is the malloc variant's; here `Box` is mimalloc.
    let raw = run_once(Variant::Malloc, &spec, &NEVER).map_err(|e| e.to_string())?;
    Ok(encode(&raw))
}

/// Header words, then the four stamp arrays, then one (ops, seconds bits) pair per
/// background thread; all little-endian `u64`.
fn encode(raw: &RunRaw) -> Vec<u8> {
    let mut words: Vec<u64> = vec![
        raw.stamps.schedule.t0,
        raw.stamps.off_core,
        raw.stamps.bad_items,
        raw.exhausted,
        raw.bg.len() as u64,
    ];
    for a in [
        &raw.stamps.send,
        &raw.stamps.recv,
        &raw.before_alloc,
        &raw.done,
    ] {
        words.extend_from_slice(a);
    }
    for b in &raw.bg {
        words.push(b.ops);
        words.push(b.seconds.to_bits());
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn decode(bytes: &[u8], spec: &RunSpec) -> Result<RunRaw> {
    let bad = || Error::Run("mimalloc: the child's stamps are truncated".into());
    if !bytes.len().is_multiple_of(8) {
        return Err(bad());
    }
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let n = spec.items;
    let head = 5;
    if words.len() < head {
        return Err(bad());
    }
    let bgs = words[4] as usize;
    if words.len() != head + 4 * n + 2 * bgs {
        return Err(bad());
    }
    let arr = |i: usize| words[head + i * n..head + (i + 1) * n].to_vec();
    let bg = (0..bgs)
        .map(|i| {
            let at = head + 4 * n + 2 * i;
            BgReport {
                ops: words[at],
                seconds: f64::from_bits(words[at + 1]),
            }
        })
        .collect();
    Ok(RunRaw {
        stamps: Stamps {
            schedule: Schedule::new(words[0], spec.rate_hz, spec.timer),
            send: arr(0),
            recv: arr(1),
            off_core: words[1],
            bad_items: words[2],
        },
        before_alloc: arr(2),
        done: arr(3),
        bg,
        exhausted: words[3],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use handoff_clock::Timer;

    #[test]
    fn the_child_protocol_round_trips() {
        let spec = RunSpec {
            items: 3,
            capacity: 8,
            rate_hz: Some(1e6),
            timer: Timer::with_frequency(handoff_clock::Source::Tsc, 2e9),
            producer_cpu: 0,
            consumer_cpu: 1,
            bg_cpus: vec![0],
            bg_rate_hz: 1e6,
            bg_shares_core: true,
            risk_rounds: 0,
            window_ticks: 1,
        };
        let raw = RunRaw {
            stamps: Stamps {
                schedule: Schedule::new(77, spec.rate_hz, spec.timer),
                send: vec![1, 2, 3],
                recv: vec![4, 5, 6],
                off_core: 1,
                bad_items: 0,
            },
            before_alloc: vec![0, 1, 2],
            done: vec![7, 8, 9],
            bg: vec![BgReport {
                ops: 10,
                seconds: 0.5,
            }],
            exhausted: 2,
        };
        let truncated = decode(&encode(&raw)[..20], &spec);
        assert!(truncated.is_err());
        let back = decode(&encode(&raw), &spec).unwrap();
        assert_eq!(back.stamps.schedule.t0, 77);
        assert_eq!(
            (back.stamps.send, back.stamps.recv),
            (raw.stamps.send, raw.stamps.recv)
        );
        assert_eq!((back.before_alloc, back.done), (raw.before_alloc, raw.done));
        assert_eq!(
            (back.bg[0].ops, back.bg[0].seconds, back.exhausted),
            (10, 0.5, 2)
        );
    }
}
