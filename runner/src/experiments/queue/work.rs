//! The seven variants of the queue experiment and one timed run of any of them.
//!
//! Rust variants run their hot loops here (generic over a small push/pop trait, so
//! each is monomorphised); the C++ variants run theirs in `cpp-baseline`. Both sides
//! stamp with `rdtscp; lfence` before the push and after the pop, pace on the same
//! schedule, and count stamps taken off their pinned core.

use crate::lab;
use crate::lab::error::{Error, Result};
use crate::lab::harness::{self, wait_due, Role, Stamper, Start};
use crate::lab::measure::Stamps;
use crate::lab::pacer::Schedule;
use handoff_clock::Timer;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU8;
use std::sync::{Condvar, Mutex};

/// A queue variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// `handoff_spsc` (this project's ring), as `channel` makes it: no call waits.
    HandoffSpsc,
    /// The same ring with temporal slipping asked for (`Options::slipping`): a
    /// streaming handle waits up to about 5 us inside `try_push` / `try_pop` for the
    /// other side to get ahead.
    HandoffSpscSlipping,
    /// `handoff_spsc::stamped` (this project's ring with a stamp per slot: one cache
    /// line per item to the consumer).
    HandoffStamped,
    /// The `rtrb` crate.
    Rtrb,
    /// A Rust twin of the C++ mutex variant: `Mutex<VecDeque>` and two `Condvar`s.
    StdMutexCondvar,
    /// The document's hand-rolled ring in C++.
    CppRing,
    /// The same ring with each side's own index in a private copy (the document's
    /// producer loads it from the line the consumer polls).
    CppRingPrivate,
    /// `boost::lockfree::spsc_queue` in C++.
    BoostSpsc,
    /// The document's `std::queue` + `std::mutex` + two condition variables, in C++.
    MutexCondvar,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 9] = [
        Variant::HandoffSpsc,
        Variant::HandoffSpscSlipping,
        Variant::HandoffStamped,
        Variant::Rtrb,
        Variant::StdMutexCondvar,
        Variant::CppRing,
        Variant::CppRingPrivate,
        Variant::BoostSpsc,
        Variant::MutexCondvar,
    ];

    /// The variant's name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Variant::HandoffSpsc => "handoff-spsc",
            Variant::HandoffSpscSlipping => "handoff-spsc-slipping",
            Variant::HandoffStamped => "handoff-stamped",
            Variant::Rtrb => "rtrb",
            Variant::StdMutexCondvar => "std-mutex-condvar",
            Variant::CppRing => "cpp-ring",
            Variant::CppRingPrivate => "cpp-ring-private",
            Variant::BoostSpsc => "boost-spsc",
            Variant::MutexCondvar => "mutex-condvar",
        }
    }

    /// Looks a variant up by name.
    pub fn from_name(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Lock-free (spinning) rather than blocking.
    pub fn is_lock_free(self) -> bool {
        !matches!(self, Variant::StdMutexCondvar | Variant::MutexCondvar)
    }

    fn cpp(self) -> Option<cpp_baseline::Kind> {
        match self {
            Variant::CppRing => Some(cpp_baseline::Kind::CppRing),
            Variant::CppRingPrivate => Some(cpp_baseline::Kind::CppRingPrivate),
            Variant::BoostSpsc => Some(cpp_baseline::Kind::BoostSpsc),
            Variant::MutexCondvar => Some(cpp_baseline::Kind::MutexCondvar),
            _ => None,
        }
    }

    /// Why the variant can't run at this capacity in this build, if it can't.
    pub fn unavailable(self, capacity: usize) -> Option<String> {
        let kind = self.cpp()?;
        if let Some(why) = kind.unavailable() {
            return Some(why.to_string());
        }
        if kind.is_ring() && !capacity.is_power_of_two() {
            return Some(format!(
                "unavailable: the document's ring needs a power-of-two capacity (got {capacity})"
            ));
        }
        None
    }
}

/// Parses `--variants` (comma-separated names, each once).
pub fn parse_variants(s: &str) -> Result<Vec<Variant>> {
    crate::lab::flags::names("variants", s, &Variant::ALL, Variant::name)
}

/// The document's 16-byte `MarketTick` (same layout as the C++ one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tick {
    /// Sequence number: the index of the send stamp.
    pub seq: u64,
    /// Price (derived from `seq` so the consumer can check the item).
    pub price: i32,
    /// Quantity (`seq` truncated, checked by the consumer).
    pub qty: u32,
}

const _: () = assert!(std::mem::size_of::<Tick>() == 16);

impl Tick {
    #[inline(always)]
    fn new(i: u64) -> Tick {
        Tick {
            seq: i,
            price: i.wrapping_mul(7) as i32,
            qty: i as u32,
        }
    }

    #[inline(always)]
    fn is(&self, k: u64) -> bool {
        self.seq == k && self.qty == k as u32
    }
}

/// What one run needs.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec<'a> {
    /// Items to send.
    pub items: usize,
    /// Queue capacity.
    pub capacity: usize,
    /// Offered rate (of bursts, when `burst > 1`); `None` is unpaced (saturated).
    pub rate_hz: Option<f64>,
    /// Items sent back to back at each due time (1: none).
    pub burst: u64,
    /// The calibrated clock: reads and conversions.
    pub timer: Timer,
    /// Producer core.
    pub producer_cpu: usize,
    /// Consumer core.
    pub consumer_cpu: usize,
    /// Stop flag (Ctrl-C).
    pub stop: &'a AtomicU8,
}

/// Runs `spec.items` items through `variant` once.
pub fn run_once(variant: Variant, spec: &RunSpec<'_>) -> Result<Stamps> {
    if let Some(why) = variant.unavailable(spec.capacity) {
        return Err(Error::Run(why));
    }
    match variant {
        Variant::HandoffSpsc => {
            let (tx, rx) = handoff_spsc::try_channel::<Tick>(spec.capacity)
                .map_err(|e| Error::Run(format!("handoff-spsc: {e}")))?;
            two_roles(spec, SpinP(tx), SpinC(rx))
        }
        Variant::HandoffSpscSlipping => {
            let options = handoff_spsc::Options::new().slipping(true);
            let (tx, rx) = handoff_spsc::try_channel_with::<Tick>(spec.capacity, options)
                .map_err(|e| Error::Run(format!("handoff-spsc-slipping: {e}")))?;
            two_roles(spec, SpinP(tx), SpinC(rx))
        }
        Variant::HandoffStamped => {
            let (tx, rx) = handoff_spsc::stamped::try_channel::<Tick>(spec.capacity)
                .map_err(|e| Error::Run(format!("handoff-stamped: {e}")))?;
            two_roles(spec, SpinP(tx), SpinC(rx))
        }
        Variant::Rtrb => {
            let (tx, rx) = rtrb::RingBuffer::<Tick>::new(spec.capacity);
            two_roles(spec, SpinP(tx), SpinC(rx))
        }
        Variant::StdMutexCondvar => {
            let q = MutexQueue::new(spec.capacity);
            two_roles(spec, Blocking(&q), Blocking(&q))
        }
        Variant::CppRing | Variant::CppRingPrivate | Variant::BoostSpsc | Variant::MutexCondvar => {
            let kind = variant.cpp().expect("a C++ variant");
            let (tx, rx) =
                cpp_baseline::queue(kind, spec.capacity).map_err(|e| Error::Run(e.to_string()))?;
            two_roles(spec, Cpp(tx), Cpp(rx))
        }
    }
}

/// The producer side of a queue: runs its whole role on the calling (pinned) thread
/// and returns the number of stamps taken off its core.
trait Produce: Send {
    fn produce(self, sched: Schedule, stamps: &mut [u64], at: Stamper, stop: &AtomicU8) -> u64;
}

/// The consumer side of a queue: returns (stamps off core, bad items).
trait Consume: Send {
    fn consume(self, stamps: &mut [u64], at: Stamper) -> (u64, u64);
}

/// The producer and the consumer as the lab harness's two roles.
fn two_roles<P: Produce, C: Consume>(spec: &RunSpec<'_>, tx: P, rx: C) -> Result<Stamps> {
    let n = spec.items;
    let mut send = lab::prefaulted(n);
    let mut recv = lab::prefaulted(n);
    let (rate, burst) = (spec.rate_hz, spec.burst);
    let roles = vec![
        Role::new(spec.producer_cpu, |s: Start<'_>| {
            (
                tx.produce(
                    s.schedule(rate).bursts_of(burst),
                    &mut send,
                    s.stamper(),
                    s.stop,
                ),
                0,
            )
        }),
        Role::new(spec.consumer_cpu, |s: Start<'_>| {
            rx.consume(&mut recv, s.stamper())
        }),
    ];
    let (t0, out) = harness::run(spec.timer, spec.stop, roles)?;
    let [(producer_off_cpu, _), (consumer_off_cpu, bad_items)] = out[..] else {
        unreachable!("the harness returns one result per role")
    };
    Ok(Stamps {
        schedule: Schedule::new(t0, spec.rate_hz, spec.timer).bursts_of(burst),
        send,
        recv,
        off_core: producer_off_cpu + consumer_off_cpu,
        bad_items,
    })
}

/// Non-blocking push / pop, retried by the harness.
trait SpinTx {
    fn try_push(&mut self, t: Tick) -> Result<(), Tick>;
}
trait SpinRx {
    fn try_pop(&mut self) -> Option<Tick>;
}

impl SpinTx for handoff_spsc::Producer<Tick> {
    #[inline(always)]
    fn try_push(&mut self, t: Tick) -> Result<(), Tick> {
        handoff_spsc::Producer::try_push(self, t).map_err(handoff_spsc::PushError::into_inner)
    }
}
impl SpinRx for handoff_spsc::Consumer<Tick> {
    #[inline(always)]
    fn try_pop(&mut self) -> Option<Tick> {
        handoff_spsc::Consumer::try_pop(self).ok()
    }
}
impl SpinTx for handoff_spsc::stamped::Producer<Tick> {
    #[inline(always)]
    fn try_push(&mut self, t: Tick) -> Result<(), Tick> {
        handoff_spsc::stamped::Producer::try_push(self, t)
            .map_err(handoff_spsc::PushError::into_inner)
    }
}
impl SpinRx for handoff_spsc::stamped::Consumer<Tick> {
    #[inline(always)]
    fn try_pop(&mut self) -> Option<Tick> {
        handoff_spsc::stamped::Consumer::try_pop(self).ok()
    }
}
impl SpinTx for rtrb::Producer<Tick> {
    #[inline(always)]
    fn try_push(&mut self, t: Tick) -> Result<(), Tick> {
        self.push(t).map_err(|rtrb::PushError::Full(t)| t)
    }
}
impl SpinRx for rtrb::Consumer<Tick> {
    #[inline(always)]
    fn try_pop(&mut self) -> Option<Tick> {
        self.pop().ok()
    }
}

/// A spinning producer: the document's `while (!q.try_push(tick)) {}` harness.
struct SpinP<T>(T);
/// A spinning consumer: `while (!q.try_pop(t)) {}`.
struct SpinC<R>(R);

impl<T: SpinTx + Send> Produce for SpinP<T> {
    fn produce(
        mut self,
        mut sched: Schedule,
        stamps: &mut [u64],
        at: Stamper,
        stop: &AtomicU8,
    ) -> u64 {
        let mut off = 0;
        for (i, slot) in stamps.iter_mut().enumerate() {
            wait_due(i, &mut sched, stop);
            let mut tick = Tick::new(i as u64);
            let (t, o) = at.take();
            *slot = t;
            off += o;
            while let Err(back) = self.0.try_push(tick) {
                tick = back;
            }
        }
        off
    }
}

impl<R: SpinRx + Send> Consume for SpinC<R> {
    fn consume(mut self, stamps: &mut [u64], at: Stamper) -> (u64, u64) {
        let (mut off, mut bad) = (0, 0);
        for (k, slot) in stamps.iter_mut().enumerate() {
            let tick = loop {
                if let Some(t) = self.0.try_pop() {
                    break t;
                }
            };
            let (t, o) = at.take();
            off += o;
            if !tick.is(k as u64) {
                bad += 1;
                continue;
            }
            *slot = t;
        }
        (off, bad)
    }
}

/// The Rust twin of the document's bounded mutex + condvar queue.
struct MutexQueue {
    cap: usize,
    q: Mutex<VecDeque<Tick>>,
    not_full: Condvar,
    not_empty: Condvar,
}

impl MutexQueue {
    fn new(cap: usize) -> MutexQueue {
        MutexQueue {
            cap,
            q: Mutex::new(VecDeque::with_capacity(cap)),
            not_full: Condvar::new(),
            not_empty: Condvar::new(),
        }
    }
}

struct Blocking<'a>(&'a MutexQueue);

const POISON: &str = "the queue mutex was poisoned by a panicking thread";

impl Produce for Blocking<'_> {
    fn produce(self, mut sched: Schedule, stamps: &mut [u64], at: Stamper, stop: &AtomicU8) -> u64 {
        let m = self.0;
        let mut off = 0;
        for (i, slot) in stamps.iter_mut().enumerate() {
            wait_due(i, &mut sched, stop);
            let tick = Tick::new(i as u64);
            let (t, o) = at.take();
            *slot = t;
            off += o;
            {
                let g = m.q.lock().expect(POISON);
                let mut g = m
                    .not_full
                    .wait_while(g, |q| q.len() >= m.cap)
                    .expect(POISON);
                g.push_back(tick);
            }
            m.not_empty.notify_one();
        }
        off
    }
}

impl Consume for Blocking<'_> {
    fn consume(self, stamps: &mut [u64], at: Stamper) -> (u64, u64) {
        let m = self.0;
        let (mut off, mut bad) = (0, 0);
        for (k, slot) in stamps.iter_mut().enumerate() {
            let tick = {
                let g = m.q.lock().expect(POISON);
                let mut g = m.not_empty.wait_while(g, |q| q.is_empty()).expect(POISON);
                g.pop_front().expect("not empty")
            };
            m.not_full.notify_one();
            let (t, o) = at.take(); // after unlock, as in the document
            off += o;
            if !tick.is(k as u64) {
                bad += 1;
                continue;
            }
            *slot = t;
        }
        (off, bad)
    }
}

/// A C++ side: one call runs the whole role in C++.
struct Cpp<S>(S);

/// The C++ loops' clock: the one the role's stamper reads (the TSC, or
/// `CLOCK_MONOTONIC`, which handoff-clock's monotonic source reads too).
fn cpp_ticks(at: Stamper) -> cpp_baseline::Ticks {
    match at.timer().source() {
        handoff_clock::Source::Tsc => cpp_baseline::Ticks::Tsc,
        handoff_clock::Source::Monotonic => cpp_baseline::Ticks::Monotonic,
    }
}

impl Produce for Cpp<cpp_baseline::ProducerSide> {
    fn produce(mut self, sched: Schedule, stamps: &mut [u64], at: Stamper, stop: &AtomicU8) -> u64 {
        let r = self.0.run(cpp_baseline::Role {
            t0: sched.t0,
            period_ticks: sched.period_ticks,
            burst: sched.burst,
            ticks: cpp_ticks(at),
            cpu: at.cpu(),
            stamps,
            stop,
        });
        r.off_cpu
    }
}

impl Consume for Cpp<cpp_baseline::ConsumerSide> {
    fn consume(mut self, stamps: &mut [u64], at: Stamper) -> (u64, u64) {
        static NEVER: AtomicU8 = AtomicU8::new(0);
        let r = self.0.run(cpp_baseline::Role {
            t0: 0,
            period_ticks: 0.0,
            burst: 1,
            ticks: cpp_ticks(at),
            cpu: at.cpu(),
            stamps,
            stop: &NEVER,
        });
        (r.off_cpu, r.bad_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tsc_at(hz: f64) -> Timer {
        Timer::with_frequency(handoff_clock::Source::Tsc, hz)
    }

    #[test]
    fn rust_and_cpp_pacers_agree() {
        let s = Schedule::new(123_456_789, Some(1e6), tsc_at(2.596_123e9));
        for i in [0u64, 1, 7, 1_000, 999_999, 5_000_000] {
            if let Some(c) = cpp_baseline::cpp_due(s.t0, s.period_ticks, i) {
                assert_eq!(c, s.due(i), "item {i}");
            }
        }
        // In bursts both compute `t0 + floor((i / burst) * period)`: the C++ loop calls
        // the same function with `i / burst`.
        let b = Schedule::new(777, Some(1e4), tsc_at(2.6e9)).bursts_of(64);
        for i in [0u64, 63, 64, 65, 127_999] {
            if let Some(c) = cpp_baseline::cpp_due(b.t0, b.period_ticks, i / 64) {
                assert_eq!(c, b.due(i), "burst item {i}");
            }
        }
        assert_eq!(b.due(63), b.due(0));
        assert!(b.due(64) > b.due(63));
        for rate in crate::lab::pacer::log_spaced(1e5, 5e7, 12) {
            let s = Schedule::new(42, Some(rate), tsc_at(2.6e9));
            if let Some(c) = cpp_baseline::cpp_due(s.t0, s.period_ticks, 999_983) {
                assert_eq!(c, s.due(999_983), "rate {rate}");
            }
        }
    }
}
