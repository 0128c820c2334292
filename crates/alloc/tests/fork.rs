//! `fork` while other threads allocate: the child, which has only the forking thread,
//! must always be able to allocate, whatever lock another thread of the parent held at
//! the moment of the fork (the big-block cache, the shared heap). Each child allocates
//! small and big blocks, checks them and exits 0; a child that does not exit within
//! [`DEADLINE`] is killed and the test fails.

#![cfg(target_os = "linux")]

#[cfg(not(handoff_global_alloc))]
use handoff_alloc::HandoffAlloc;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const FORKS: usize = 40;
const DEADLINE: Duration = Duration::from_secs(5);

/// What a child does between `fork` and `_exit`: small and big blocks, checked. Exit
/// status 0 when every block held what was written; it never unwinds.
fn child() -> ! {
    let small: Vec<u64> = black_box((0..100).collect());
    let big = black_box(vec![1u8; 64 << 10]);
    let huge = black_box(vec![2u8; 4 << 20]);
    let ok = small.iter().sum::<u64>() == 4950
        && big.iter().all(|&b| b == 1)
        && huge.iter().step_by(4096).all(|&b| b == 2);
    drop((small, big, huge));
    // SAFETY: ends the child at once, running no destructors or exit handlers of the
    // parent's state.
    unsafe { libc::_exit(if ok { 0 } else { 3 }) }
}

/// Forks [`FORKS`] times from the calling thread while `churn` runs in a loop on
/// another thread (`churn_on` spawns it and runs it until told to stop), and waits for
/// every child. Panics on the first child that fails or hangs (killing it).
fn fork_while(churn_on: impl FnOnce(Arc<AtomicBool>, Arc<AtomicU64>) -> thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let churner = churn_on(stop.clone(), rounds.clone());
    let mut outcome = Ok(());
    for k in 0..FORKS {
        // Let the churn make progress between forks, so each fork lands mid-churn.
        let seen = rounds.load(Ordering::Relaxed);
        while rounds.load(Ordering::Relaxed) < seen + 3 {
            thread::yield_now();
        }
        // SAFETY: the child only allocates, frees and calls `_exit` (see `child`).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child();
        }
        assert!(pid > 0, "fork failed");
        if let Err(e) = wait_for(pid) {
            outcome = Err(format!("child {k} of {FORKS}: {e}"));
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    churner.join().unwrap();
    outcome.unwrap();
}

/// Waits for child `pid` up to [`DEADLINE`]; kills it if it is still running then.
fn wait_for(pid: libc::pid_t) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-parameter.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                Ok(())
            } else {
                Err(format!("ended with status {status:#x}"))
            };
        }
        assert_eq!(r, 0, "waitpid failed");
        if start.elapsed() > DEADLINE {
            // SAFETY: `pid` is our child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("hung for {DEADLINE:?} (killed)"));
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `work` in a loop on a new thread until `stop`, counting rounds.
fn churn(work: fn()) -> impl FnOnce(Arc<AtomicBool>, Arc<AtomicU64>) -> thread::JoinHandle<()> {
    move |stop, rounds| {
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..64 {
                    work();
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    }
}

fn big_blocks() {
    // 64 KiB: a big block that goes through the freed-mapping cache.
    drop(black_box(Vec::<u8>::with_capacity(64 << 10)));
}

fn small_blocks() {
    let v: Vec<Box<u64>> = (0..16).map(|i| black_box(Box::new(i))).collect();
    drop(black_box(v));
}

#[test]
fn forked_children_allocate_while_another_thread_churns_big_blocks() {
    fork_while(churn(big_blocks));
}

#[test]
fn forked_children_allocate_while_another_thread_churns_small_blocks() {
    fork_while(churn(small_blocks));
}

/// Threads that claim heaps and hold them until told to go.
struct Holders {
    go: Vec<mpsc::Sender<()>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Holders {
    /// Spawns threads that claim heaps until one finds none left, and returns them with
    /// that thread's channel: it runs what it is sent on the shared heap.
    fn until_the_heaps_run_out() -> (Holders, mpsc::Sender<Box<dyn FnOnce() + Send>>) {
        let mut holders = Holders {
            go: Vec::new(),
            threads: Vec::new(),
        };
        loop {
            let (report, reported) = mpsc::channel();
            let (go, wait) = mpsc::channel::<()>();
            let (job_tx, job_rx) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
            let t = thread::spawn(move || {
                drop(black_box(Box::new(0u8)));
                let heap = handoff_alloc::thread_heap();
                report.send(heap).unwrap();
                if heap.is_none() {
                    for job in job_rx {
                        job();
                    }
                } else {
                    let _ = wait.recv();
                }
            });
            holders.go.push(go);
            holders.threads.push(t);
            if reported.recv().unwrap().is_none() {
                return (holders, job_tx);
            }
            assert!(holders.threads.len() < 1000, "heaps never ran out");
        }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        self.go.clear();
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

/// Every heap taken: the churning thread and the forking thread both allocate from
/// the shared heap, under its lock.
#[test]
fn forked_children_allocate_while_another_thread_churns_the_shared_heap() {
    let (holders, first) = Holders::until_the_heaps_run_out();
    // The last holder runs the churn; one more thread, also without a heap, forks.
    let (done_tx, done) = mpsc::channel();
    let forker = thread::spawn(move || {
        drop(black_box(Box::new(0u8)));
        assert_eq!(
            handoff_alloc::thread_heap(),
            None,
            "the forking thread has a heap"
        );
        fork_while(move |stop, rounds| {
            let (started_tx, started) = mpsc::channel();
            first
                .send(Box::new(move || {
                    started_tx.send(handoff_alloc::thread_heap()).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            small_blocks();
                        }
                        rounds.fetch_add(1, Ordering::Relaxed);
                    }
                    done_tx.send(()).unwrap();
                }))
                .unwrap();
            assert_eq!(
                started.recv().unwrap(),
                None,
                "the churning thread has a heap"
            );
            drop(first);
            // `fork_while` joins what this returns: a thread that waits for the churn.
            thread::spawn(move || done.recv().unwrap())
        });
    });
    let r = forker.join();
    drop(holders);
    r.unwrap();
}
