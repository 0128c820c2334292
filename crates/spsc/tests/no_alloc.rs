//! "No call allocates after the ring is made" (the crate docs' table), checked under a
//! global allocator that counts this thread's calls: every call of the handles, the
//! observer, the fan-in and the waiting layer, on their success and failure paths.
//! (Under `--cfg handoff_global_alloc` handoff-alloc is the allocator: skipped.)
#![cfg(not(any(handoff_global_alloc, loom)))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

struct Counting;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread's last frees run after its thread-locals are gone.
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

/// Calls to the allocator made by this thread while `f` runs.
fn allocator_calls(f: impl FnOnce()) -> usize {
    let before = CALLS.with(Cell::get);
    f();
    CALLS.with(Cell::get) - before
}

#[test]
fn the_counter_sees_an_allocation() {
    assert!(allocator_calls(|| drop(std::hint::black_box(vec![1u8; 10]))) >= 2);
}

#[test]
fn the_ring_allocates_nothing_after_construction() {
    let (mut tx, mut rx) = handoff_spsc::channel::<String>(64);
    let item = || String::from("x"); // made outside the counted calls
    let mut items: Vec<String> = (0..70).map(|_| item()).collect();
    let (mut ctx, mut crx) = handoff_spsc::channel::<u64>(256);
    let mut out = vec![0u64; 300];
    let watch = rx.observer();
    let calls = allocator_calls(|| {
        for _ in 0..3 {
            // Single items, to full and back to empty, both error paths.
            while let Some(s) = items.pop() {
                if let Err(e) = tx.try_push(s) {
                    items.push(e.into_inner());
                    break;
                }
            }
            assert!(tx.is_full() && rx.is_full() && tx.free_len() == 0);
            assert!(rx.peek().is_some());
            while let Ok(s) = rx.try_pop() {
                items.push(s);
            }
            assert!(rx.is_empty() && tx.is_empty());
            // Slices and chunks of a Copy item.
            assert_eq!(ctx.push_slice(&out[..300]), 256);
            assert_eq!(crx.pop_slice(&mut out[..100]), 100);
            let mut chunk = ctx.write_chunk(50);
            let n = chunk.len();
            assert_eq!(chunk.extend(0..n as u64), n);
            chunk.commit();
            let mut chunk = crx.read_chunk(500);
            let n = chunk.len();
            chunk.consume(n);
            let _ = (
                watch.stats(),
                watch.clone().high_water(),
                tx.len(),
                rx.len(),
            );
        }
    });
    assert_eq!(calls, 0, "the ring's calls went to the allocator");
}

#[test]
fn the_fan_in_and_the_waits_allocate_nothing_after_construction() {
    let (mut txs, mut gateway) = handoff_spsc::fan_in::<u64>(3, 16);
    let (tx, rx) = handoff_spsc::channel::<u64>(4);
    let (mut ptx, mut prx) = handoff_spsc::wait::parking(tx, rx);
    let (mut wtx, mut wrx) = handoff_spsc::channel::<u64>(4);
    let calls = allocator_calls(|| {
        for round in 0..100u64 {
            for tx in &mut txs {
                tx.try_push(round).unwrap();
            }
            for _ in 0..3 {
                assert_eq!(gateway.try_pop(), Ok(round));
            }
            assert!(gateway.try_pop_from().is_err());
            ptx.try_push(round).unwrap();
            assert_eq!(prx.try_pop(), Ok(round));
            wtx.push_timeout(round, Duration::from_secs(1), handoff_spsc::wait::Spin)
                .unwrap();
            assert_eq!(
                wrx.pop_timeout(Duration::from_secs(1), handoff_spsc::wait::Spin),
                Ok(round)
            );
        }
        // The timeout paths: a failed try, a clock read, the strategy, no allocation.
        assert!(wrx
            .pop_timeout(
                Duration::from_micros(20),
                handoff_spsc::wait::SpinThenYield::new(3)
            )
            .is_err());
    });
    assert_eq!(
        calls, 0,
        "the fan-in's or the waits' calls went to the allocator"
    );
}
