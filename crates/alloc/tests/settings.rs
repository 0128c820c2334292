//! The purge delay (`set_purge_delay`, `HANDOFF_ALLOC_PURGE_DELAY_MS`): with purging off
//! a live thread never gives memory back by itself, with a zero delay it does at its
//! next look, and the environment variable sets it for a fresh process. One test
//! function: the setting is the process's, so the steps run in order.

use handoff_alloc::HandoffAlloc;
use std::process::Command;
use std::time::Duration;

#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

/// Slow-path calls on this thread: blocks of one class allocated and freed in runs
/// longer than a magazine, so each run refills and spills.
fn churn(rounds: usize) {
    for _ in 0..rounds {
        let v: Vec<Box<[u8; 200]>> = (0..400).map(|_| Box::new([7u8; 200])).collect();
        drop(std::hint::black_box(v));
    }
}

/// What the child run of this binary checks: the setting the environment gave it.
const CHILD: &str = "HANDOFF_ALLOC_SETTINGS_CHILD_EXPECTS";

#[test]
fn the_purge_delay_decides_whether_a_live_thread_purges() {
    if let Ok(expect) = std::env::var(CHILD) {
        // The child: only report what the environment set.
        let got = match handoff_alloc::purge_delay() {
            None => "off".to_string(),
            Some(d) => d.as_millis().to_string(),
        };
        assert_eq!(got, expect, "{}", handoff_alloc::PURGE_DELAY_ENV);
        return;
    }
    std::thread::spawn(|| {
        // A zero delay: the thread purges at each look (every 256 slow-path calls).
        handoff_alloc::set_purge_delay(Some(Duration::ZERO));
        assert_eq!(handoff_alloc::purge_delay(), Some(Duration::ZERO));
        let before = handoff_alloc::stats().purges;
        churn(300);
        let on = handoff_alloc::stats().purges - before;
        // Off, right after: the same churn, and not one purge.
        handoff_alloc::set_purge_delay(None);
        assert_eq!(handoff_alloc::purge_delay(), None);
        let before = handoff_alloc::stats().purges;
        churn(300);
        std::thread::sleep(Duration::from_millis(20));
        churn(300);
        let off = handoff_alloc::stats().purges - before;
        handoff_alloc::set_purge_delay(Some(handoff_alloc::DEFAULT_PURGE_DELAY));
        assert!(on >= 2, "{on} purges with a zero delay");
        // Other threads of this process (the test harness's) may purge too, but none
        // churns, and with purging off none may.
        assert_eq!(off, 0, "a purge ran with purging off");
    })
    .join()
    .unwrap();

    for (value, expect) in [
        ("off", "off"),
        ("1500", "1500"),
        ("0", "0"),
        ("soon", "250"),
        ("", "250"),
    ] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_purge_delay_decides_whether_a_live_thread_purges",
                "--nocapture",
            ])
            .env(handoff_alloc::PURGE_DELAY_ENV, value)
            .env(CHILD, expect)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}={value:?}: {}",
            handoff_alloc::PURGE_DELAY_ENV,
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            said.contains("handoff-alloc: HANDOFF_ALLOC_PURGE_DELAY_MS is neither"),
            expect == "250",
            "{value:?}: {said}"
        );
    }
}
