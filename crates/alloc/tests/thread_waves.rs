//! A long-lived thread and waves of short-lived workers, as a service whose thread pool
//! grows and shrinks (or that starts a thread per session) meets them: resident memory
//! must settle after a few waves, not grow with every wave.
//!
//! Each wave, the long-lived thread makes 100 blocks for each worker (16 B to 128 KiB,
//! every byte written), which the worker frees; the worker makes 100 blocks of its own
//! and hands them over; the long-lived thread frees those once the wave has exited.
//! Each run is a child process (this binary again, with one test selected), so its
//! resident memory is the program's alone. Before issue 48 the resident memory grew
//! 44 MiB from wave 5 to wave 50 with 100 workers a wave and 73 MiB with 1000 (and kept
//! growing); glibc's malloc stays within 80 and 300 MiB on the same program. Now it
//! stays within about 70 and 220 MiB and grows less than 32 MiB after wave 5
//! (docs/alloc.md, "When memory goes back to the system"). New blocks stop being cut
//! after the first waves: fewer are cut from wave 10 to wave 50 than one wave allocates.
//!
//! The bound is checked on an optimised build (`cargo test --release`, as `.ci/run`
//! runs it): in a debug build the workers run slower beside the thread that makes their
//! blocks, more of them are alive at once, and the growth came closer to the bound (up
//! to 29 MiB in eight runs with 1000 workers a wave before the purge went to 250 ms).

#![cfg(target_os = "linux")]

#[cfg(not(handoff_global_alloc))]
use handoff_alloc::HandoffAlloc;
use std::hint::black_box;
use std::process::Command;
use std::sync::mpsc;
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const CHILD: &str = "HANDOFF_THREAD_WAVES_CHILD";
const WAVES: usize = 50;
const BLOCKS: usize = 100;
const MIB: u64 = 1 << 20;

/// This process's resident memory, in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("resident pages in /proc/self/statm");
    // SAFETY: `sysconf` reads a system constant.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// A xorshift generator: the sizes, the same in every run.
struct Sizes(u64);

impl Sizes {
    /// 16 B to 128 KiB: one block in three spread over every power of two up to
    /// 128 KiB, the others up to 2 KiB.
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let r = self.0;
        let shift = 4 + ((r >> 2) % if r.is_multiple_of(3) { 14 } else { 7 }) as usize;
        let base = 1usize << shift;
        base + ((r >> 8) as usize % base) / 2
    }
}

/// A buffer of about `size` bytes, every byte written.
fn block(size: usize) -> Vec<u8> {
    let mut v = Vec::<u8>::with_capacity(size);
    // SAFETY: the capacity is at least `size`; the bytes are written before the
    // length covers them.
    unsafe {
        v.as_mut_ptr().write_bytes(0x5a, size);
        v.set_len(size);
    }
    black_box(v)
}

/// Whether a buffer made by [`block`] still holds what was written: one byte per page
/// and the last (a byte-by-byte check would dominate a debug build's run).
fn intact(b: &[u8]) -> bool {
    b.iter().step_by(4096).all(|&x| x == 0x5a) && b.last() == Some(&0x5a)
}

/// The child's work: [`WAVES`] waves of `workers` workers, one line on stdout per
/// wave with the resident memory after it.
#[test]
fn child_runs_waves_of_workers() {
    let Some(workers) = std::env::var(CHILD)
        .ok()
        .and_then(|w| w.parse::<usize>().ok())
    else {
        return;
    };
    let mut sizes = Sizes(0x9e37_79b9_7f4a_7c15);
    for wave in 0..WAVES {
        let (tx, rx) = mpsc::channel::<Vec<Vec<u8>>>();
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let theirs: Vec<Vec<u8>> = (0..BLOCKS).map(|_| block(sizes.next())).collect();
                let tx = tx.clone();
                let seed = sizes.0 ^ (w as u64 + 1);
                thread::spawn(move || {
                    let mut sizes = Sizes(seed | 1);
                    assert!(theirs.iter().all(|b| intact(b)));
                    drop(theirs);
                    let mine: Vec<Vec<u8>> = (0..BLOCKS).map(|_| block(sizes.next())).collect();
                    tx.send(mine).unwrap();
                })
            })
            .collect();
        drop(tx);
        for h in handles {
            h.join().unwrap();
        }
        let handed: Vec<Vec<Vec<u8>>> = rx.iter().collect();
        assert_eq!(handed.len(), workers);
        assert!(handed.iter().flatten().all(|b| intact(b)));
        drop(handed);
        println!(
            "WAVE {wave} {} {}",
            resident(),
            handoff_alloc::stats().blocks_carved
        );
    }
    let s = handoff_alloc::stats();
    println!(
        "STATS committed={} released={} borrows={} lent={}",
        s.committed_bytes, s.released_bytes, s.orphan_borrows, s.orphan_blocks_lent
    );
}

/// Runs the child with `workers` workers a wave; the resident memory after each wave.
fn waves(workers: usize) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_runs_waves_of_workers",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, workers.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the test binary runs again")
}

/// The resident memory and the blocks cut so far after each wave.
fn per_wave(child: std::process::Child, workers: usize) -> Vec<(u64, u64)> {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{workers} workers a wave: {text}");
    for line in text.lines().filter(|l| l.contains("STATS")) {
        eprintln!("{workers} workers a wave: {line}");
    }
    let per_wave: Vec<(u64, u64)> = text
        .lines()
        // The harness's own "test ... " may start the first line.
        .filter_map(|l| l.find("WAVE ").map(|at| &l[at + 5..]))
        .map(|l| {
            let n: Vec<u64> = l.split_whitespace().map(|n| n.parse().unwrap()).collect();
            (n[1], n[2])
        })
        .collect();
    assert_eq!(per_wave.len(), WAVES, "{text}");
    per_wave
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "measured on an optimised build: cargo test --release --test thread_waves"
)]
fn resident_memory_settles_over_waves_of_short_lived_threads() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    // Both programs at once, each in its own process.
    let runs: Vec<_> = [100, 1000].map(|w| (w, waves(w))).into();
    for (workers, child) in runs {
        let waves = per_wave(child, workers);
        let mib: Vec<u64> = waves.iter().map(|r| r.0 / MIB).collect();
        let cut: Vec<u64> = waves.iter().map(|r| r.1).collect();
        eprintln!("{workers} workers a wave: resident MiB after each wave {mib:?}");
        eprintln!("{workers} workers a wave: blocks cut so far after each wave {cut:?}");
        // The level after ten waves against the level at the end, each the median of ten
        // waves: with 1000 workers a wave one wave's figure moves 580-658 MiB with no
        // trend (2026-12-05, CI here), and wave 5 alone at 593 against wave 50 at 654
        // failed a check that single waves passed on the run before. A leak of 1 MiB a
        // wave still shows: 35 waves lie between the two medians.
        let level = |from: usize| {
            let mut w: Vec<u64> = waves[from..from + 10].iter().map(|r| r.0).collect();
            w.sort_unstable();
            w[5]
        };
        let (early, late) = (level(5), level(WAVES - 10));
        assert!(
            late < early + 32 * MIB,
            "{workers} workers a wave: resident memory grew from {} MiB (median of waves \
             5-14) to {} MiB (median of the last ten)",
            early / MIB,
            late / MIB
        );
        // New blocks flat after the first waves: fewer cut from wave 10 to the last
        // than one wave allocates (each worker's 100 and the long-lived thread's 100
        // for it). 2026-11-29, release build: 3 056 of 20 000 with 100 workers a wave
        // (none after wave 37), 15 804 of 200 000 with 1000.
        let cut = waves[WAVES - 1].1 - waves[10].1;
        let per_wave = (2 * BLOCKS * workers) as u64;
        assert!(
            cut < per_wave,
            "{workers} workers a wave: {cut} blocks cut anew from wave 10 to {WAVES} \
             (a wave allocates {per_wave})"
        );
    }
}
