//! What the crate docs' table says allocates nothing after construction, checked under a
//! global allocator that counts this thread's calls: fixed pools of the policies without
//! per-thread caches (`PooledArc` included), the freelist, the return queue, the arena
//! and the bump arena, on their success and exhaustion paths. (Under
//! `--cfg handoff_global_alloc` handoff-alloc is the allocator: skipped.)
#![cfg(not(any(handoff_global_alloc, loom)))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use handoff_pool::policy::{LockFree, Locked, Policy, SingleThreaded};
use handoff_pool::{arena, return_queue, BumpArena, Capacity, Freelist, Pool};

struct Counting;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count();
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocator_calls(f: impl FnOnce()) -> usize {
    let before = CALLS.with(Cell::get);
    f();
    CALLS.with(Cell::get) - before
}

fn fixed_pool<P: Policy>() {
    let pool = Pool::<[u64; 8], P>::new(Capacity::Fixed(32)).unwrap();
    let mut held = Vec::with_capacity(40);
    let calls = allocator_calls(|| {
        for _ in 0..10 {
            while let Ok(o) = pool.try_alloc([1; 8]) {
                held.push(o);
            }
            assert_eq!(held.len(), 32);
            held.clear(); // every slot back
            let raw = pool.try_alloc_raw([2; 8]).unwrap();
            assert_eq!(pool.release(raw).unwrap()[0], 2);
            let _ = pool.stats();
        }
    });
    assert_eq!(calls, 0, "{}: a call went to the allocator", P::NAME);
}

#[test]
fn fixed_pools_allocate_nothing_after_construction() {
    fixed_pool::<SingleThreaded>();
    fixed_pool::<Locked>();
    fixed_pool::<LockFree>();
}

#[test]
fn owned_handles_allocate_nothing_after_construction() {
    let pool = Arc::new(Pool::<u64, LockFree>::new(Capacity::Fixed(8)).unwrap());
    let mut held = Vec::with_capacity(8);
    let calls = allocator_calls(|| {
        for _ in 0..10 {
            while let Ok(o) = pool.try_alloc_arc(7) {
                held.push(o);
            }
            held.clear();
        }
    });
    assert_eq!(calls, 0);
}

#[test]
fn the_other_pools_allocate_nothing_after_construction() {
    let freelist = Freelist::<u64>::new(16).unwrap();
    let (mut ra, mut rr) = return_queue::new::<u64>(return_queue::Config {
        slots: 64,
        return_depth: 64,
        batch: 8,
        release_batch: 4,
    })
    .unwrap();
    let (mut aa, mut ar) = arena::new::<u64>(arena::Config {
        arenas: 2,
        slots_per_arena: 16,
    })
    .unwrap();
    let mut bump = BumpArena::new(4096).unwrap();
    let mut boxes = Vec::with_capacity(128);
    let mut arena_boxes = Vec::with_capacity(64);
    let calls = allocator_calls(|| {
        // Each round empties and refills every pool; 3 under Miri (9 s for 20 there).
        let rounds = if cfg!(miri) { 3 } else { 20u64 };
        for round in 0..rounds {
            let a = freelist.try_alloc(round).unwrap();
            freelist.free(a).unwrap();
            while let Ok(b) = ra.try_alloc(round) {
                boxes.push(b);
            }
            for b in boxes.drain(..) {
                rr.free(b).unwrap();
            }
            rr.flush();
            while let Ok(b) = aa.try_alloc(round) {
                arena_boxes.push(b);
            }
            for b in arena_boxes.drain(..) {
                ar.release(b).unwrap();
            }
            while bump.try_alloc(round).is_ok() {}
            bump.reset();
            let _ = (
                ra.stats(),
                rr.stats(),
                aa.stats(),
                ar.stats(),
                bump.stats(),
                freelist.stats(),
            );
        }
    });
    assert_eq!(calls, 0, "a call went to the allocator");
}

/// What the table says does allocate, seen by the same counter: a growing pool's new
/// block (so the zeros above are the counter's, not a counter that sees nothing).
#[test]
fn a_growing_pool_allocates_when_it_grows() {
    let pool = Pool::<u64, SingleThreaded>::new(Capacity::Grow { first_block: 4 }).unwrap();
    let mut held = Vec::with_capacity(16);
    let first = allocator_calls(|| {
        for i in 0..4 {
            held.push(pool.try_alloc(i).unwrap());
        }
    });
    assert_eq!(first, 0, "the first block was made up front");
    let growth = allocator_calls(|| held.push(pool.try_alloc(4).unwrap()));
    assert!(growth >= 1, "the second block");
    assert_eq!(pool.capacity(), 8);
}
