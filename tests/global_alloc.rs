//! handoff-alloc installed as this binary's global allocator, the way a user's binary
//! does it (`#[global_allocator]` in its own crate; under `--cfg handoff_global_alloc`
//! handoff-alloc installs itself): it really serves the binary, the ring and the pools
//! included. tests/no_global_alloc.rs checks that linking the facade alone installs
//! nothing.

#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: handoff::alloc::HandoffAlloc = handoff::alloc::HandoffAlloc;

#[test]
fn handoff_alloc_serves_this_binary() {
    let before = handoff::alloc::stats();
    let v: Vec<Box<u64>> = (0..10_000).map(Box::new).collect();
    assert!(
        handoff::alloc::thread_heap().is_some(),
        "this thread allocated, so it owns a handoff-alloc heap"
    );
    let during = handoff::alloc::stats();
    assert!(
        during.small_blocks_live >= before.small_blocks_live + 10_000,
        "{before:?} -> {during:?}"
    );
    assert_eq!(v.iter().map(|b| **b).sum::<u64>(), 49_995_000);
    // The ring and the pools run on it too.
    let (mut tx, mut rx) = handoff::spsc::channel::<String>(4);
    let t = std::thread::spawn(move || {
        for i in 0..1000 {
            let mut s = i.to_string();
            while let Err(full) = tx.try_push(s) {
                s = full.into_inner();
            }
        }
    });
    let mut got = 0;
    while got < 1000 {
        if let Ok(s) = rx.try_pop() {
            assert_eq!(s, got.to_string());
            got += 1;
        }
    }
    t.join().unwrap();
}
