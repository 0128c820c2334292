//! The timed N-role harness: one thread per role, each pinned to its core; all meet,
//! then share one origin on the TSC from which paced roles keep their schedule, so a
//! stall is followed by a catch-up burst and the schedule never slides. Roles write
//! their stamps into buffers they bring (made by [`prefaulted`](super::prefaulted), so
//! the timed loops take no page faults).
//!
//! The queue experiment runs two roles (producer, consumer); the pipeline three
//! (producer, consumer, background heap thread).

use super::error::{Error, Result};
use super::pacer::Schedule;
use super::pin;
use handoff_clock::Timer;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;

/// How long after every role is pinned and ready the origin lies: room for the last
/// thread to leave the barrier before the first item is due.
pub const LEAD_NS: f64 = 50_000.0;

/// What a role gets when the harness starts it.
#[derive(Clone, Copy, Debug)]
pub struct Start<'a> {
    /// The shared origin (TSC ticks): item 0 of every paced schedule is due here.
    pub t0: u64,
    /// The calibrated clock's reads and conversions.
    pub timer: Timer,
    /// The core this role runs on (already pinned and checked).
    pub cpu: usize,
    /// Ctrl-C: nonzero once a stop was asked for; a paced role stops pacing.
    pub stop: &'a AtomicU8,
}

impl Start<'_> {
    /// The open-loop schedule at `rate_hz` (`None`: unpaced) from the shared origin.
    pub fn schedule(&self, rate_hz: Option<f64>) -> Schedule {
        Schedule::new(self.t0, rate_hz, self.timer)
    }

    /// This role's stamps, with the check that each was taken on its core.
    pub fn stamper(&self) -> Stamper {
        Stamper {
            timer: self.timer,
            cpu: self.cpu as u32,
        }
    }
}

/// A role: its core and the work it runs there.
pub struct Role<'a, R> {
    /// The core to pin the role's thread to.
    pub cpu: usize,
    /// The work; its return value comes back from [`run`] in role order.
    pub work: Box<dyn FnOnce(Start<'_>) -> R + Send + 'a>,
}

impl<'a, R> Role<'a, R> {
    /// A role on `cpu`.
    pub fn new(cpu: usize, work: impl FnOnce(Start<'_>) -> R + Send + 'a) -> Role<'a, R> {
        Role {
            cpu,
            work: Box::new(work),
        }
    }
}

/// Runs every role on its own pinned thread and returns the shared origin and the
/// roles' results in order. If any role's thread cannot be pinned, no role runs its
/// work and the pinning error comes back; a role that panics is an error too.
///
/// ```
/// use runner::lab::harness::{run, Role};
/// use std::sync::atomic::AtomicU8;
/// let cpu = *runner::lab::topology::Topology::read().allowed.first().unwrap();
/// let stop = AtomicU8::new(0);
/// let timer = handoff_clock::Clock::quick().timer();
/// let (t0, out) = run(timer, &stop, vec![
///     Role::new(cpu, |s| s.cpu * 10),
///     Role::new(cpu, |s| s.cpu * 10 + 1),
/// ]).unwrap();
/// assert!(t0 > 0);
/// assert_eq!(out, vec![cpu * 10, cpu * 10 + 1]);
/// ```
pub fn run<R: Send>(
    timer: Timer,
    stop: &AtomicU8,
    roles: Vec<Role<'_, R>>,
) -> Result<(u64, Vec<R>)> {
    let n = roles.len();
    let ready = Barrier::new(n);
    let go = Barrier::new(n);
    let failed = AtomicBool::new(false);
    let origin = AtomicU64::new(0);
    let lead = timer.ticks_for_ns(LEAD_NS);
    let results: Vec<Result<Option<R>>> = std::thread::scope(|s| {
        let handles: Vec<_> = roles
            .into_iter()
            .map(|role| {
                let (ready, go, failed, origin) = (&ready, &go, &failed, &origin);
                s.spawn(move || {
                    let pinned = pin::pin_current(role.cpu);
                    failed.fetch_or(pinned.is_err(), Ordering::Relaxed);
                    if ready.wait().is_leader() {
                        origin.store(timer.now() + lead, Ordering::Relaxed);
                    }
                    // The second barrier orders the origin store before every load.
                    go.wait();
                    pinned?;
                    if failed.load(Ordering::Relaxed) {
                        return Ok(None);
                    }
                    let start = Start {
                        t0: origin.load(Ordering::Relaxed),
                        timer,
                        cpu: role.cpu,
                        stop,
                    };
                    Ok(Some((role.work)(start)))
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                h.join()
                    .map_err(|_| Error::Run(format!("role {i}'s thread panicked")))?
            })
            .collect()
    });
    let mut out = Vec::with_capacity(n);
    let mut first_err = None;
    for r in results {
        match r {
            Ok(Some(v)) => out.push(v),
            Ok(None) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok((origin.into_inner(), out)),
    }
}

/// A paced role's step before item `i`'s stamp: after a stop request, stop pacing
/// (checked every 4096 items); otherwise wait until item `i` is due.
#[inline(always)]
pub fn wait_due(i: usize, sched: &mut Schedule, stop: &AtomicU8) {
    if i & 4095 == 0 && stop.load(Ordering::Relaxed) != 0 {
        sched.period_ticks = 0.0;
    }
    if sched.is_paced() {
        sched.wait_until(sched.due(i as u64));
    }
}

/// What a role stamps with: the calibrated timer and the core the role was pinned to.
#[derive(Clone, Copy, Debug)]
pub struct Stamper {
    timer: Timer,
    cpu: u32,
}

impl Stamper {
    /// A stamp as the documents take it ([`Timer::stamp`]: `rdtscp; lfence`) and
    /// whether it was taken off the role's core (1) or on it (0).
    #[inline(always)]
    pub fn take(self) -> (u64, u64) {
        let (t, cpu) = self.timer.stamp();
        (t, u64::from(cpu.is_some_and(|c| c != self.cpu)))
    }

    /// The role's core.
    pub fn cpu(self) -> u32 {
        self.cpu
    }

    /// The timer it stamps with.
    pub fn timer(self) -> Timer {
        self.timer
    }
}

/// Runs `work` on one thread pinned to `cpu` and returns its result.
///
/// ```
/// let cpu = *runner::lab::topology::Topology::read().allowed.first().unwrap();
/// let stop = std::sync::atomic::AtomicU8::new(0);
/// let timer = handoff_clock::Clock::quick().timer();
/// assert_eq!(runner::lab::harness::on_core(timer, &stop, cpu, || 6 * 7).unwrap(), 42);
/// ```
pub fn on_core<R: Send>(
    timer: Timer,
    stop: &AtomicU8,
    cpu: usize,
    work: impl FnOnce() -> R + Send,
) -> Result<R> {
    let (_, mut out) = run(timer, stop, vec![Role::new(cpu, move |_| work())])?;
    out.pop()
        .ok_or_else(|| Error::Run("the measured thread returned nothing".into()))
}

/// Round trips in each [`link_probe`]: about 25 us on a shared cache, 150 us across
/// a slow link.
pub const PROBE_TRIPS: usize = 256;

/// The median round trip (ns) of a cache line between cores `a` and `b`
/// ([`handoff_clock::link`]), [`PROBE_TRIPS`] trips from two threads pinned there;
/// `None` when `a` and `b` are the same core (the two sides would take turns on it).
///
/// ```
/// let allowed = runner::lab::topology::Topology::read().allowed;
/// let stop = std::sync::atomic::AtomicU8::new(0);
/// let timer = handoff_clock::Clock::quick().timer();
/// let rtt = runner::lab::harness::link_probe(timer, &stop, allowed[0], *allowed.last().unwrap()).unwrap();
/// assert_eq!(rtt.is_none(), allowed.len() == 1);
/// ```
pub fn link_probe(timer: Timer, stop: &AtomicU8, a: usize, b: usize) -> Result<Option<f64>> {
    if a == b {
        return Ok(None);
    }
    let link = handoff_clock::link::Link::new();
    let link = &link;
    let (_, out) = run(
        timer,
        stop,
        vec![
            Role::new(a, move |s: Start<'_>| link.ping(s.timer, PROBE_TRIPS)),
            Role::new(b, move |_s: Start<'_>| {
                link.pong(PROBE_TRIPS);
                0.0
            }),
        ],
    )?;
    Ok(out.first().copied())
}

/// `threads` pinned threads (cycling over `pins`) run `work(t)` at once; returns
/// the wall time in ticks from the first start to the last end.
///
/// ```
/// let cpu = *runner::lab::topology::Topology::read().allowed.first().unwrap();
/// let stop = std::sync::atomic::AtomicU8::new(0);
/// let hits = std::sync::atomic::AtomicUsize::new(0);
/// let timer = handoff_clock::Clock::quick().timer();
/// let wall = runner::lab::harness::together(timer, &stop, &[cpu], 3, |_| {
///     hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
/// }).unwrap();
/// assert_eq!(hits.into_inner(), 3);
/// assert!(wall > 0);
/// ```
pub fn together(
    timer: Timer,
    stop: &AtomicU8,
    pins: &[usize],
    threads: usize,
    work: impl Fn(usize) + Sync,
) -> Result<u64> {
    let roles = (0..threads)
        .map(|t| {
            let work = &work;
            Role::new(pins[t % pins.len()], move |_| {
                let s = timer.now();
                work(t);
                (s, timer.now())
            })
        })
        .collect();
    let (_, spans) = run(timer, stop, roles)?;
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    Ok(end.saturating_sub(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::topology::Topology;

    #[test]
    fn three_roles_share_one_origin_and_run_on_their_cores() {
        let allowed = Topology::read().allowed;
        let cpus: Vec<usize> = (0..3).map(|i| allowed[i % allowed.len()]).collect();
        let stop = AtomicU8::new(0);
        let roles = cpus
            .iter()
            .map(|&c| {
                Role::new(c, move |s: Start<'_>| {
                    assert_eq!(s.cpu, c);
                    (s.t0, pin::current_cpu())
                })
            })
            .collect();
        let (t0, out) = run(
            Timer::with_frequency(handoff_clock::Source::Tsc, 1e9),
            &stop,
            roles,
        )
        .unwrap();
        assert_eq!(out.len(), 3);
        for (i, (seen, cpu)) in out.into_iter().enumerate() {
            assert_eq!(seen, t0);
            if let Some(cpu) = cpu {
                assert_eq!(cpu, cpus[i]);
            }
        }
    }

    #[test]
    fn an_unpinnable_role_stops_every_role_before_its_work() {
        let ran = AtomicBool::new(false);
        let stop = AtomicU8::new(0);
        let topo = Topology::read();
        let ok = *topo.allowed.first().unwrap();
        let absent = topo.online.iter().max().unwrap() + 1;
        for bad in [absent, usize::MAX / 2] {
            let roles = vec![
                Role::new(ok, |_s: Start<'_>| ran.store(true, Ordering::Relaxed)),
                Role::new(bad, |_s: Start<'_>| ran.store(true, Ordering::Relaxed)),
            ];
            let e = run(
                Timer::with_frequency(handoff_clock::Source::Tsc, 1e9),
                &stop,
                roles,
            )
            .unwrap_err();
            assert!(matches!(e, Error::Run(_)), "{e:?}");
            assert!(e.to_string().contains(&format!("core {bad}")), "{e}");
            assert!(!ran.load(Ordering::Relaxed));
        }
    }

    #[test]
    fn a_panicking_role_is_an_error() {
        let stop = AtomicU8::new(0);
        let ok = *Topology::read().allowed.first().unwrap();
        let roles: Vec<Role<'_, ()>> = vec![Role::new(ok, |_s: Start<'_>| panic!("on purpose"))];
        let e = run(
            Timer::with_frequency(handoff_clock::Source::Tsc, 1e9),
            &stop,
            roles,
        )
        .unwrap_err();
        assert!(e.to_string().contains("panicked"), "{e}");
    }
}
