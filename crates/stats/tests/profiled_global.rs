//! `ProfiledAlloc` installed as the global allocator: every thread's allocations go
//! through it, nothing is lost or corrupted, and every call is counted. Not built under
//! `--cfg handoff_global_alloc`, where handoff-alloc is the global allocator.
#![cfg(not(handoff_global_alloc))]

use std::alloc::System;

use handoff_stats::profile::ProfiledAlloc;

#[global_allocator]
static ALLOC: ProfiledAlloc<System> = ProfiledAlloc::new(System);

#[test]
fn four_threads_allocate_and_free_through_the_profiler() {
    let per_thread = if cfg!(miri) { 200 } else { 50_000 };
    let before_alloc = ALLOC.alloc_latency().count();
    let before_free = ALLOC.free_latency().count();
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                let boxes: Vec<Box<[u64; 8]>> = (0..per_thread)
                    .map(|i| Box::new([t * 1_000_000 + i; 8]))
                    .collect();
                for (i, b) in boxes.iter().enumerate() {
                    assert_eq!(b[7], t * 1_000_000 + i as u64);
                }
                let mut s = String::new();
                for i in 0..100 {
                    s.push_str(&i.to_string()); // realloc
                }
                assert!(s.starts_with("0123"));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let allocs = ALLOC.alloc_latency().count() - before_alloc;
    let frees = ALLOC.free_latency().count() - before_free;
    assert!(allocs >= 4 * per_thread, "{allocs}");
    assert!(frees >= 4 * per_thread, "{frees}");
    let report = ALLOC.report(&handoff_clock::Clock::quick());
    assert!(report.alloc.min <= report.alloc.p50);
    assert!(report.alloc.p50 <= report.alloc.p99);
    assert!(report.alloc.p99 <= report.alloc.max);
}
