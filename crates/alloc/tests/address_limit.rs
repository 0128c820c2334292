//! Under a limit on the process's address space (`ulimit -v`, `RLIMIT_AS`), where the
//! 16 TiB arena cannot be reserved, the allocator reserves a smaller one (or, under a
//! very small limit, passes small blocks to the C library's malloc), and small blocks
//! still cost about what they cost without the limit, and their frees take the fast
//! path. Each run is a child
//! process (this test binary, run again with one test selected), so the limit is in
//! force before the allocator's first reservation.

#![cfg(target_os = "linux")]

#[cfg(not(handoff_global_alloc))]
use handoff_alloc::HandoffAlloc;
use std::hint::black_box;
use std::os::unix::process::CommandExt;
use std::process::Command;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const BOXES: usize = 200_000;
const CHILD: &str = "HANDOFF_ADDRESS_LIMIT_CHILD";

/// This process's resident memory, in bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// The child's work: [`BOXES`] small boxes kept alive, then one line on stdout with
/// the resident memory they added and the allocator's arena mode.
#[test]
fn child_allocates_small_boxes() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let before = resident();
    let boxes: Vec<Box<u64>> = (0..BOXES as u64).map(|k| black_box(Box::new(k))).collect();
    let added = resident().saturating_sub(before);
    assert!(boxes.iter().enumerate().all(|(k, b)| **b == k as u64));
    let s = handoff_alloc::stats();
    // Freed by the thread that made them: the free fast path takes them (in a reduced
    // arena too), but for the magazine's spills.
    drop(boxes);
    let slow = handoff_alloc::stats().own_frees_slow - s.own_frees_slow;
    println!(
        "RESULT added={added} mode={:?} arena={} big_blocks={} slow_frees={slow}",
        s.arena_mode, s.arena_bytes, s.big_blocks_live
    );
}

struct Outcome {
    added: u64,
    /// Of the boxes, how many frees took the slow path.
    slow_frees: u64,
    line: String,
}

/// Runs [`child_allocates_small_boxes`] in a child with its address space limited to
/// `limit` bytes (`None`: no limit).
fn run_child(limit: Option<u64>) -> Outcome {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_allocates_small_boxes",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    if let Some(bytes) = limit {
        // SAFETY: between fork and exec the closure makes one system call, which
        // neither allocates nor takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    let out = cmd.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child under limit {limit:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.find("RESULT ").map(|at| l[at..].to_string()))
        .unwrap_or_else(|| panic!("no RESULT line from the child:\n{stdout}"));
    let added = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("added="))
        .and_then(|n| n.parse().ok())
        .expect("added= in the RESULT line");
    let slow_frees = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("slow_frees="))
        .and_then(|n| n.parse().ok())
        .expect("slow_frees= in the RESULT line");
    Outcome {
        added,
        slow_frees,
        line,
    }
}

#[test]
fn small_boxes_cost_about_the_same_under_an_address_space_limit() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let free = run_child(None);
    eprintln!("no limit: {}", free.line);
    assert!(free.line.contains("mode=Full"), "{}", free.line);
    for (name, limit, mode) in [
        ("1 TiB", 1u64 << 40, "mode=Reduced"),
        ("4 GiB", 4 << 30, "mode=Reduced"),
        ("1 GiB", 1 << 30, "mode=Reduced"),
        // A quarter of it is less than the smallest arena: small blocks come from the
        // C library's malloc.
        ("256 MiB", 256 << 20, "mode=Unavailable"),
    ] {
        let limited = run_child(Some(limit));
        eprintln!("limit {name}: {}", limited.line);
        assert!(limited.line.contains(mode), "{}", limited.line);
        if mode == "mode=Reduced" {
            // Until issue 48 every free in a reduced arena took the slow path.
            assert!(
                limited.slow_frees < BOXES as u64 / 10,
                "{} of {BOXES} frees took the slow path under a {name} limit ({} without)",
                limited.slow_frees,
                free.slow_frees
            );
        }
        assert!(
            limited.added <= 2 * free.added + (4 << 20),
            "{BOXES} boxes added {} KiB resident under a {name} limit, {} KiB without",
            limited.added >> 10,
            free.added >> 10
        );
    }
}
