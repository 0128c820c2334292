//! `runner alloc --turns N`: the contenders' children of one pass alive together, taking
//! turns at the main test. Each child fills its working set in `N` parts, then runs its
//! replacements in `N` parts, one part a turn, the contenders in a new pseudo-random
//! order each round (the same orders in every run); the runner hands out the turns over a Unix socket and only one child works at
//! a time. The host's pace drifts over seconds (one child 90 ns a pair, a child ten
//! seconds later 50, 2026-12-05), which put the repeats' own ratios of two contenders
//! measured one after the other 1.2x to 1.7x apart; taking turns every few
//! milliseconds spreads that drift over every contender alike. Each child is still a
//! process of its own with its contender as its process allocator, so its peak
//! resident memory is its allocator's.
//!
//! The protocol: a child connects, sends its id (4 bytes, little-endian) and then, for
//! each command byte it reads, does the step and answers [`DONE`]: [`FILL`] fills a
//! `N`-th of the working set, [`PART`] runs one part (a read of the table of live blocks
//! and a warm-up of an eighth of the part, untimed, then the part, timed; after the last
//! part the final frees, and the answer once the test's threads have ended), [`REST`] lets it go on
//! alone (the producer/consumer run, the sweep), with no answer; the runner sends the
//! next child its [`REST`] once this child's process has ended. A child reading the
//! end of the stream (the runner gave up) stops with an error.

use super::work::{Sample, Spec};
use super::workload::{Blocks, Test};
use crate::lab::error::{Error, Result};
use crate::lab::{harness, stop};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Fill the working set.
pub(super) const FILL: u8 = b'F';
/// Run one part of the replacements.
pub(super) const PART: u8 = b'P';
/// Go on alone.
pub(super) const REST: u8 = b'R';
/// A step done.
pub(super) const DONE: u8 = b'k';

/// In every error a child meets on the socket: most likely the runner stopped the pass
/// because another child failed, so that child's error is the one to report.
const LEFT: &str = "(the runner stopped taking turns)";

/// A child's place in a pass that takes turns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Turn {
    /// The runner's socket.
    pub socket: PathBuf,
    /// The child's id in its pass.
    pub id: u32,
    /// Parts of each test's replacements.
    pub parts: usize,
}

/// The child's end of the socket.
pub(super) struct Link(UnixStream);

impl Link {
    /// Connects to the runner and says who this child is.
    pub(super) fn connect(turn: &Turn) -> Result<Link> {
        let mut s = UnixStream::connect(&turn.socket).map_err(|e| {
            Error::Run(format!(
                "cannot reach the runner at {}: {e} {LEFT}",
                turn.socket.display()
            ))
        })?;
        s.write_all(&turn.id.to_le_bytes())
            .map_err(|e| Error::Run(format!("the runner's socket: {e} {LEFT}")))?;
        Ok(Link(s))
    }

    /// Waits for the runner's next command, which must be `want`.
    pub(super) fn wait(&mut self, want: u8) -> Result<()> {
        let mut b = [0u8];
        match self.0.read_exact(&mut b) {
            Ok(()) if b[0] == want => Ok(()),
            Ok(()) => Err(Error::Run(format!(
                "the runner sent {:?} where {:?} was due",
                b[0] as char, want as char
            ))),
            Err(e) => Err(Error::Run(format!("the runner's socket: {e} {LEFT}"))),
        }
    }

    /// Tells the runner the step is done.
    pub(super) fn done(&mut self) -> Result<()> {
        self.0
            .write_all(&[DONE])
            .map_err(|e| Error::Run(format!("the runner's socket: {e} {LEFT}")))
    }
}

/// The runner's end: one stream per child, by id.
struct Hub {
    streams: Vec<Option<UnixStream>>,
}

impl Hub {
    /// Sends `cmd` to child `id` and, unless it is [`REST`], waits for its answer.
    fn step(&mut self, id: usize, cmd: u8) -> std::result::Result<(), usize> {
        let s = self.streams[id].as_mut().ok_or(id)?;
        s.write_all(&[cmd]).map_err(|_| id)?;
        if cmd == REST {
            return Ok(());
        }
        let mut b = [0u8];
        match s.read_exact(&mut b) {
            Ok(()) if b[0] == DONE => Ok(()),
            _ => Err(id),
        }
    }
}

/// The children's order in one round of turns: a permutation of `0..n` drawn from
/// `seed`, a new one each round, so that no contender always follows the same one (a
/// turn finds the caches as its predecessor left them; a rotation would keep every
/// pair of neighbours for the whole pass).
fn shuffled(n: usize, seed: (usize, usize, usize, u8)) -> Vec<usize> {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let mut ids: Vec<usize> = (0..n).collect();
    let mut state = BuildHasherDefault::<DefaultHasher>::default().hash_one(seed);
    for i in (1..n).rev() {
        // splitmix64: a fresh draw each step.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ids.swap(i, (z % (i as u64 + 1)) as usize);
    }
    ids
}

/// Where a pass's socket lives: the temporary folder, named by this process and `seq`.
fn socket_path(seq: usize) -> PathBuf {
    std::env::temp_dir().join(format!("handoff-alloc-{}-{seq}.sock", std::process::id()))
}

/// Runs one pass: every spec's child (through `measure`) at once, the main test and
/// each scaling count taking turns (`phases` tests a child, `parts` parts of filling and
/// `parts` of replacements each), the children in a new [`shuffled`] order each round,
/// then each child's rest alone, one after the other (in a shuffled order too), each once
/// the previous child's process has ended; `seq` numbers the pass in the run (its
/// socket's name, the seed of its orders). Returns the samples in the specs' order. A
/// child that fails ends the pass with its error; the others, finding the socket closed,
/// stop.
pub(super) fn pass(
    specs: Vec<Spec>,
    seq: usize,
    phases: usize,
    parts: usize,
    measure: fn(&Spec) -> Result<Sample>,
) -> Result<Vec<Sample>> {
    let n = specs.len();
    let path = socket_path(seq);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)
        .map_err(|e| Error::Run(format!("alloc: cannot open {}: {e}", path.display())))?;
    let specs: Vec<Spec> = specs
        .into_iter()
        .enumerate()
        .map(|(id, mut s)| {
            s.turns = Some(Turn {
                socket: path.clone(),
                id: id as u32,
                parts,
            });
            s
        })
        .collect();
    let out = std::thread::scope(|scope| {
        // Each child's thread says when `measure` returned: its process has ended.
        let (ended_tx, ended) = std::sync::mpsc::channel::<usize>();
        let children: Vec<_> = specs
            .iter()
            .enumerate()
            .map(|(id, s)| {
                let ended_tx = ended_tx.clone();
                scope.spawn(move || {
                    let r = measure(s);
                    let _ = ended_tx.send(id);
                    r
                })
            })
            .collect();
        drop(ended_tx);
        let mut hub = Hub {
            streams: (0..n).map(|_| None).collect(),
        };
        let mut listener = Some(listener);
        let led = accept(listener.as_ref().expect("open"), &mut hub, &children).and_then(|()| {
            lead(&mut hub, n, phases, parts, seq, &ended).map_err(|id| {
                Error::Run(format!(
                    "{}: its child stopped taking turns",
                    specs[id].contender.name()
                ))
            })
        });
        if led.is_err() {
            // Closing the streams stops every child still waiting for a turn, closing
            // the socket (and removing its name) every child that connected since or
            // is about to.
            drop(listener.take());
            let _ = std::fs::remove_file(&path);
            hub.streams.clear();
        }
        let results: Vec<Result<Sample>> = children
            .into_iter()
            .map(|c| {
                c.join()
                    .unwrap_or_else(|_| Err(Error::Run("a child's thread panicked".into())))
            })
            .collect();
        (led, results)
    });
    let _ = std::fs::remove_file(&path);
    let (led, results) = out;
    // A child's own error says more than the runner's note that a child stopped, or
    // than what the others met when the runner stopped them ([`LEFT`]); failing that,
    // what a child met says more than the runner's note.
    let errors: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(ToString::to_string))
        .collect();
    if let Some(e) = errors.iter().find(|e| !e.contains(LEFT)) {
        return Err(Error::Run(e.clone()));
    }
    if led.is_err() {
        if let Some(e) = errors.first() {
            return Err(Error::Run(e.clone()));
        }
    }
    led?;
    results.into_iter().collect()
}

/// Accepts one connection per child (each sends its id first). Gives up when a child
/// ends before it connected, or after a minute.
fn accept(
    listener: &UnixListener,
    hub: &mut Hub,
    children: &[std::thread::ScopedJoinHandle<'_, Result<Sample>>],
) -> Result<()> {
    let n = hub.streams.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::Run(e.to_string()))?;
    let mut joined = 0;
    while joined < n {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false)
                    .map_err(|e| Error::Run(e.to_string()))?;
                let mut id = [0u8; 4];
                s.read_exact(&mut id)
                    .map_err(|e| Error::Run(format!("a child's id: {e}")))?;
                let id = u32::from_le_bytes(id) as usize;
                match hub.streams.get_mut(id) {
                    Some(slot @ None) => *slot = Some(s),
                    _ => {
                        return Err(Error::Run(format!(
                            "a child sent id {id} twice or out of range"
                        )))
                    }
                }
                joined += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if children.iter().any(|c| c.is_finished()) {
                    return Err(Error::Run("a child ended before it took a turn".into()));
                }
                if Instant::now() > deadline {
                    return Err(Error::Run(
                        "the children did not connect within a minute".into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(Error::Run(format!("accepting a child: {e}"))),
        }
    }
    Ok(())
}

/// Hands out the turns (see [`pass`]); `Err(id)`: child `id` stopped answering. Each
/// child's rest starts once the previous child's process has ended (`ended` names each
/// child whose `measure` returned): its memory is given back to the system before the
/// next child measures alone.
fn lead(
    hub: &mut Hub,
    n: usize,
    phases: usize,
    parts: usize,
    first: usize,
    ended: &std::sync::mpsc::Receiver<usize>,
) -> std::result::Result<(), usize> {
    for phase in 0..phases {
        for cmd in [FILL, PART] {
            for p in 0..parts {
                for id in shuffled(n, (first, phase, p, cmd)) {
                    hub.step(id, cmd)?;
                }
            }
        }
    }
    let mut gone = vec![false; n];
    for id in shuffled(n, (first, phases, 0, REST)) {
        hub.step(id, REST)?;
        // One child at a time on its own work, until its process has ended.
        while !gone[id] {
            match ended.recv() {
                Ok(k) => gone[k] = true,
                Err(_) => return Err(id),
            }
        }
    }
    Ok(())
}

/// Whether any of the test threads had trouble, asked of all at once: each says its
/// own, all wait, all read the answer, all wait again (so that none sets the flag for
/// the next vote before every thread has read this one's). Once true, true for good.
struct Vote {
    barrier: std::sync::Barrier,
    any: std::sync::atomic::AtomicBool,
}

impl Vote {
    fn any(&self, mine: bool) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        if mine {
            self.any.store(true, SeqCst);
        }
        self.barrier.wait();
        let any = self.any.load(SeqCst);
        self.barrier.wait();
        any
    }
}

/// One test thread's figures in turns: (seconds of its filling, parts and final frees;
/// its steady seconds, the median part's pace times its replacements; peak requested
/// bytes).
type Turned = (f64, f64, usize);

/// The main test on `t` threads in turns: each of the runner's `parts` [`FILL`]s fills
/// a `parts`-th of every thread's share, each of its `parts` [`PART`]s runs a `parts`-th
/// of the replacements (after a warm-up of an eighth of it, untimed: the other children
/// have had the caches since this child's last turn), the last part the final frees
/// too. Thread 0 reads the runner's commands and answers them, the last one once every
/// thread has ended; the threads start and end each step together. (seconds: the
/// slowest thread's filling, parts and frees, its allocator made and dropped; ns per
/// pair: each thread's median part's pace, their mean; peak requested bytes.)
pub(super) fn turned_test<B: Blocks, F: Fn() -> B + Sync>(
    new: &F,
    spec: &Spec,
    t: usize,
    link: &Mutex<Link>,
    parts: usize,
) -> Result<(f64, f64, usize)> {
    let ops = spec.ops / t;
    // The runner sends as many turns as `parts` says (`args::config` keeps it at most
    // the replacements of a thread).
    let parts = parts.max(1);
    let vote = Vote {
        barrier: std::sync::Barrier::new(t),
        any: std::sync::atomic::AtomicBool::new(false),
    };
    let results: Vec<Mutex<Option<Result<Turned>>>> = (0..t).map(|_| Mutex::new(None)).collect();
    let talk = |f: &mut dyn FnMut(&mut Link) -> Result<()>| {
        f(&mut link.lock().unwrap_or_else(|e| e.into_inner()))
    };
    harness::together(spec.timer, stop::flag(), &spec.pins, t, |k| {
        // Made in the first filling step and dropped in the last part, both timed, as
        // the test alone times them: nothing of this child runs in another's turn.
        let mut blocks: Option<B> = None;
        let mut test = Some(Test::new(0x5eed + k as u64));
        let mut failed: Option<Error> = None;
        let (mut seconds, mut paces, mut peak) = (0.0, Vec::with_capacity(parts), 0);
        let ws = spec.working_set / t;
        let last = 2 * parts - 1;
        for step in 0..=last {
            if k == 0 {
                let cmd = if step < parts { FILL } else { PART };
                failed = talk(&mut |l| l.wait(cmd)).err();
            }
            if vote.any(failed.is_some()) {
                break;
            }
            // A panic in one thread must not leave the others at the vote's barrier.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<()> {
                let start = Instant::now();
                let b = blocks.get_or_insert_with(new);
                let x = test.as_mut().expect("until the last part");
                if step < parts {
                    x.fill_to(b, ws * (step + 1) / parts)?;
                    seconds += start.elapsed().as_secs_f64();
                    return Ok(());
                }
                let p = step - parts + 1;
                let m = ops * p / parts - ops * (p - 1) / parts;
                x.touch_table();
                x.replace(b, m / 8)?;
                let t0 = Instant::now();
                x.replace(b, m)?;
                let d = t0.elapsed().as_secs_f64();
                paces.push(d / m.max(1) as f64);
                seconds += d;
                if step == last {
                    let t1 = Instant::now();
                    peak = test.take().expect("once").finish(b)?;
                    drop(blocks.take());
                    seconds += t1.elapsed().as_secs_f64();
                }
                Ok(())
            }))
            .unwrap_or_else(|_| Err(Error::Run("a test thread panicked".into())));
            failed = r.err();
            if vote.any(failed.is_some()) {
                break;
            }
            // The last step's answer comes from `main_test` once every thread is done.
            if k == 0 && step < last {
                // A failed answer shows as the next command's failure.
                let _ = talk(&mut |l| l.done());
            }
        }
        let r = match failed {
            Some(e) => Err(e),
            None if paces.len() < parts => {
                Err(Error::Run("another test thread stopped the test".into()))
            }
            None => {
                let pace = crate::lab::measure::median_or_nan(paces.iter().copied());
                Ok((seconds, pace * ops as f64, peak))
            }
        };
        *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    })?;
    let mut seconds = 0.0f64;
    let mut steady = 0.0;
    let mut peak_requested = 0;
    let mut first_error = None;
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok((s, st, p))) => {
                seconds = seconds.max(s);
                steady += st;
                peak_requested += p;
            }
            Some(Err(e)) => {
                // The thread that failed says why; the others only that it stopped.
                if first_error.is_none() || !e.to_string().contains("another test thread") {
                    first_error = Some(e);
                }
            }
            None => first_error = Some(Error::Run("a test thread returned nothing".into())),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    // The last part's answer: the threads have ended, their allocators' thread caches
    // given back, before the next child's turn.
    talk(&mut |l| l.done())?;
    let ns_per_pair = steady * 1e9 / t as f64 / ops.max(1) as f64;
    Ok((seconds, ns_per_pair, peak_requested))
}

#[cfg(test)]
mod tests {
    use super::super::work::{child_task, Contender};
    use super::*;

    /// A child run in this process: its side of the protocol on a thread of the test.
    fn in_process(spec: &Spec) -> Result<Sample> {
        let input = serde_json::to_vec(spec).map_err(|e| Error::Run(e.to_string()))?;
        let out = child_task(&input).map_err(Error::Run)?;
        serde_json::from_slice(&out).map_err(|e| Error::Run(e.to_string()))
    }

    fn spec(contender: Contender, mib: usize) -> Spec {
        let cpu = crate::lab::topology::Topology::read().allowed[0];
        Spec {
            contender,
            working_set: mib << 20,
            ops: 40_000,
            threads: 1,
            pins: vec![cpu],
            sweep: Vec::new(),
            sweep_ops: 1,
            handoff_items: 0,
            scaling: vec![2],
            tls: false,
            preloaded: None,
            timer: handoff_clock::Clock::quick().timer(),
            turns: None,
        }
    }

    #[test]
    fn every_child_of_a_pass_takes_its_turns_and_its_sample_comes_back_in_order() {
        let contenders = [
            Contender::Void,
            Contender::Take1,
            Contender::Take3,
            Contender::System,
        ];
        let specs: Vec<Spec> = contenders
            .iter()
            .enumerate()
            .map(|(i, &c)| spec(c, i + 1))
            .collect();
        let samples = pass(specs, 9_000, 2, 4, in_process).unwrap();
        assert_eq!(samples.len(), 4);
        for (i, s) in samples.iter().enumerate() {
            // Each its own working set: the samples in the specs' order.
            let ws = (i + 1) << 20;
            assert!(
                s.peak_requested >= ws && s.peak_requested < ws + (512 << 10),
                "{i}: {}",
                s.peak_requested
            );
            assert!(s.seconds > 0.0 && s.ns_per_pair > 0.0, "{i}: {s:?}");
            // The scaling run took its turns too (2 threads, one vote each step).
            assert_eq!(s.scaling.len(), 1);
            assert!(s.scaling[0].2 > 0.0, "{i}: {:?}", s.scaling);
        }
    }

    #[test]
    fn a_child_that_fails_ends_the_pass_with_its_own_error() {
        let mut bad = spec(Contender::System, 1);
        bad.preloaded = Some(PathBuf::from("/nonexistent/libnothing.so"));
        let specs = vec![spec(Contender::Void, 1), bad, spec(Contender::Take3, 1)];
        let e = pass(specs, 9_001, 1, 4, in_process).unwrap_err();
        assert!(e.to_string().contains("was not loaded"), "{e}");
    }

    #[test]
    fn each_round_of_turns_is_a_permutation_and_the_rounds_differ() {
        let a = shuffled(11, (0, 0, 0, FILL));
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..11).collect::<Vec<_>>());
        let rounds: std::collections::HashSet<Vec<usize>> =
            (0..8).map(|p| shuffled(11, (0, 0, p, PART))).collect();
        assert!(rounds.len() > 4, "{rounds:?}");
        assert_eq!(shuffled(11, (3, 1, 2, PART)), shuffled(11, (3, 1, 2, PART)));
    }

    #[test]
    fn filling_in_parts_draws_the_blocks_of_filling_at_once() {
        use super::super::workload::{Test, Void};
        let mut once = Test::fill(&mut Void::new(), 1 << 20, 7).unwrap();
        let mut parts = Test::new(7);
        for k in 1..=5 {
            parts.fill_to(&mut Void::new(), (1 << 20) * k / 5).unwrap();
        }
        let (mut a, mut b) = (Void::new(), Void::new());
        once.replace(&mut a, 1000).unwrap();
        parts.replace(&mut b, 1000).unwrap();
        assert_eq!(once.finish(&mut a).unwrap(), parts.finish(&mut b).unwrap());
    }
}
