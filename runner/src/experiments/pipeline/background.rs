//! The background heap thread T_bg: other subsystems sharing the heap. Mixed-size
//! malloc/free over six size classes from 32 to 1024 bytes, 8192 live allocations
//! prefilled so the heap is fragmented from the start, paced at a fixed rate of
//! operations (one operation frees a random live block and allocates a new one of a
//! random class, touching it).

use crate::lab::harness::Start;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

/// The six size classes.
pub const CLASSES: [usize; 6] = [32, 64, 128, 256, 512, 1024];
/// Live allocations, prefilled.
pub const LIVE: usize = 8192;

/// What one background thread did.
#[derive(Clone, Copy, Debug, Default)]
pub struct BgReport {
    /// Operations (free + malloc pairs) done while the measured roles ran.
    pub ops: u64,
    /// Seconds it ran.
    pub seconds: f64,
}

impl BgReport {
    /// Operations per second achieved.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A small xorshift generator: the same sequence every run.
struct Rng(u64);

impl Rng {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Allocates `LIVE` blocks now (on the calling thread, before the origin).
pub fn prefill(seed: u64) -> Vec<Box<[u8]>> {
    let mut rng = Rng(seed | 1);
    (0..LIVE)
        .map(|_| vec![1u8; CLASSES[(rng.next() % 6) as usize]].into_boxed_slice())
        .collect()
}

/// How long a background thread that shares a core sleeps between its bursts.
pub const SHARED_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// The T_bg role: churns `live` at `rate_hz` operations per second from the shared
/// origin until `done` is set, then frees everything.
///
/// On a core of its own it spins between operations, as the document's tight loop
/// does. When it shares a core with a measured thread (`shared`), spinning would take
/// that core from it for whole scheduler slices, so it works in bursts instead: it
/// catches up with the schedule, then sleeps [`SHARED_SLEEP`]. The rate is the same.
pub fn churn(
    s: Start<'_>,
    mut live: Vec<Box<[u8]>>,
    rate_hz: f64,
    seed: u64,
    done: &AtomicBool,
    shared: bool,
) -> BgReport {
    let sched = s.schedule(Some(rate_hz));
    let mut rng = Rng(seed | 1);
    let mut ops = 0u64;
    let start = sched.timer.now().max(s.t0);
    loop {
        if ops & 63 == 0 && (done.load(Ordering::Relaxed) || s.stop.load(Ordering::Relaxed) != 0) {
            break;
        }
        let due = sched.due(ops);
        if shared {
            if sched.timer.now() < due {
                std::thread::sleep(SHARED_SLEEP);
                continue;
            }
        } else {
            sched.wait_until(due);
        }
        let r = rng.next();
        let slot = (r as usize) % LIVE;
        let class = CLASSES[((r >> 32) % 6) as usize];
        live[slot] = vec![(r & 0xff) as u8; class].into_boxed_slice();
        black_box(&live[slot]);
        ops += 1;
    }
    let end = sched.timer.now();
    drop(live);
    BgReport {
        ops,
        seconds: s.timer.seconds(end.saturating_sub(start)),
    }
}
