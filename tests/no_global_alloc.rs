//! Linking the facade installs no allocator: this binary names none, so its memory comes
//! from the system allocator and handoff-alloc never sees a call (a library that depends
//! on `handoff` cannot change the allocator of the programs that use it).
#![cfg(not(handoff_global_alloc))]

#[test]
fn linking_the_facade_installs_no_allocator() {
    let v: Vec<Box<u64>> = (0..10_000).map(Box::new).collect();
    assert_eq!(v.len(), 10_000);
    assert_eq!(
        handoff::alloc::thread_heap(),
        None,
        "this thread has no heap"
    );
    let s = handoff::alloc::stats();
    assert_eq!(s.small_blocks_live, 0, "{s:?}");
    assert_eq!(s.arena_mode, handoff::alloc::ArenaMode::NotReserved);
}
