//! Drop counting, exhaustion, foreign release, teardown in every order, and the
//! leak-safety rule (forgotten boxes and handles, panicking destructors) for the
//! return-queue pool, the rotating arena and the freelist.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::Ledger;
use handoff_pool::{arena, return_queue, ConfigError, Exhausted, Freelist};

fn rq(slots: usize, return_depth: usize, batch: usize) -> return_queue::Config {
    return_queue::Config {
        slots,
        return_depth,
        batch,
        release_batch: 1,
    }
}

fn ar(arenas: usize, slots_per_arena: usize) -> arena::Config {
    arena::Config {
        arenas,
        slots_per_arena,
    }
}

#[test]
fn bad_configs_are_errors() {
    assert_eq!(
        return_queue::new::<u64>(rq(0, 4, 4)).unwrap_err(),
        ConfigError::Zero("slots")
    );
    assert_eq!(
        return_queue::new::<u64>(rq(4, 0, 4)).unwrap_err(),
        ConfigError::Zero("return_depth")
    );
    assert_eq!(
        return_queue::new::<u64>(rq(4, 4, 0)).unwrap_err(),
        ConfigError::Zero("batch")
    );
    assert_eq!(
        return_queue::new::<()>(rq(4, 4, 4)).unwrap_err(),
        ConfigError::ZeroSized
    );
    assert!(matches!(
        return_queue::new::<u64>(rq(usize::MAX / 2, 4, 4)).unwrap_err(),
        ConfigError::TooLarge { .. }
    ));
    assert_eq!(
        arena::new::<u64>(ar(0, 4)).unwrap_err(),
        ConfigError::Zero("arenas")
    );
    assert_eq!(
        arena::new::<u64>(ar(4, 0)).unwrap_err(),
        ConfigError::Zero("slots_per_arena")
    );
    assert!(matches!(
        arena::new::<u64>(ar(usize::MAX, 2)).unwrap_err(),
        ConfigError::TooLarge { .. }
    ));
    assert_eq!(
        Freelist::<u64>::new(0).unwrap_err(),
        ConfigError::Zero("slots")
    );
    let msg = ConfigError::Zero("batch").to_string();
    assert_eq!(msg, "batch must be at least 1");
}

#[test]
fn return_queue_recycles_every_slot_and_counts_exhaustion() {
    let (mut alloc, mut release) = return_queue::new::<u64>(rq(4, 2, 1)).unwrap();
    for round in 0..5u64 {
        let mut boxes = Vec::new();
        let mut misses = 0;
        while boxes.len() < 4 {
            match alloc.try_alloc(round * 10 + boxes.len() as u64) {
                Ok(b) => boxes.push(b),
                Err(_) => {
                    // Slots that found the ring full wait on the releasing side.
                    misses += 1;
                    assert!(misses <= 2);
                    release.flush();
                }
            }
        }
        let mut slots: Vec<usize> = boxes.iter().map(|b| b.slot()).collect();
        slots.sort_unstable();
        assert_eq!(slots, [0, 1, 2, 3], "every slot once per round");
        assert_eq!(alloc.try_alloc(99).unwrap_err(), Exhausted(99));
        for (i, b) in boxes.into_iter().enumerate() {
            assert_eq!(*b, round * 10 + i as u64);
            release.free(b).unwrap();
        }
        // The ring holds 2; the other 2 slots wait on the releasing side.
        assert_eq!(release.flush(), 2);
    }
    assert!(alloc.stats().exhausted >= 5);
    assert_eq!(release.stats().released, 20);
    assert!(release.stats().deferred >= 5);
}

#[test]
fn return_queue_drains_in_batches() {
    let (mut alloc, mut release) = return_queue::new::<u32>(rq(64, 64, 8)).unwrap();
    let boxes: Vec<_> = (0..64).map(|i| alloc.try_alloc(i).unwrap()).collect();
    for b in boxes {
        release.free(b).unwrap();
    }
    assert_eq!(alloc.local_free(), 0);
    let _a = alloc.try_alloc(0).unwrap();
    assert_eq!(alloc.local_free(), 7, "one drain takes `batch` slots");
    assert_eq!(alloc.stats().drains, 1);
    assert_eq!(alloc.stats().drained, 8);
}

#[test]
fn return_queue_hands_returned_slots_out_in_the_order_they_came_back() {
    let (mut alloc, mut release) = return_queue::new::<u32>(rq(16, 16, 8)).unwrap();
    let boxes: Vec<_> = (0..16).map(|i| alloc.try_alloc(i).unwrap()).collect();
    let addr = |b: &return_queue::PoolBox<u32>| &**b as *const u32 as usize;
    // Released in a shuffled order: odd slots first, then even ones.
    let order: Vec<usize> = (0..16)
        .filter(|i| i % 2 == 1)
        .chain((0..16).filter(|i| i % 2 == 0))
        .collect();
    let mut boxes: Vec<_> = boxes.into_iter().map(Some).collect();
    let mut returned = Vec::new();
    for &i in &order {
        let b = boxes[i].take().unwrap();
        returned.push(addr(&b));
        release.free(b).unwrap();
    }
    // Each drain of `batch` slots hands them out oldest first, batch after batch.
    let again: Vec<_> = (0..16).map(|i| alloc.try_alloc(100 + i).unwrap()).collect();
    let handed: Vec<usize> = again.iter().map(addr).collect();
    assert_eq!(handed, returned);
    assert_eq!(alloc.stats().drains, 2);
    for (i, b) in again.iter().enumerate() {
        assert_eq!(**b, 100 + i as u32);
    }
}

#[test]
fn foreign_objects_are_handed_back_live() {
    let ledger = Ledger::new(4);
    let (mut a_alloc, mut a_release) = return_queue::new(rq(2, 2, 2)).unwrap();
    let (mut b_alloc, mut b_release) = return_queue::new(rq(2, 2, 2)).unwrap();
    let from_a = a_alloc.try_alloc(ledger.tok(0)).unwrap();
    let from_b = b_alloc.try_alloc(ledger.tok(1)).unwrap();
    let from_a = b_release.free(from_a).unwrap_err().into_inner();
    let from_b = a_release.free(from_b).unwrap_err().into_inner();
    assert_eq!((from_a.id, from_b.id), (0, 1));
    assert_eq!(ledger.drops(0) + ledger.drops(1), 0);
    a_release.free(from_a).unwrap();
    b_release.free(from_b).unwrap();
    assert_eq!(a_release.stats().foreign, 1);

    let (mut c_alloc, mut c_release) = arena::new(ar(1, 2)).unwrap();
    let (mut d_alloc, mut d_release) = arena::new(ar(1, 2)).unwrap();
    let from_c = c_alloc.try_alloc(ledger.tok(2)).unwrap();
    let from_d = d_alloc.try_alloc(ledger.tok(3)).unwrap();
    let from_c = d_release.free(from_c).unwrap_err().into_inner();
    assert_eq!(ledger.drops(2), 0);
    c_release.free(from_c).unwrap();
    d_release.free(from_d).unwrap();
    assert_eq!(d_release.stats().foreign, 1);
    ledger.assert_dropped(|_| true);
}

#[test]
fn arena_is_reused_only_after_its_whole_fill_is_acknowledged() {
    let (mut alloc, mut release) = arena::new::<usize>(ar(2, 3)).unwrap();
    let first: Vec<_> = (0..3).map(|i| alloc.try_alloc(i).unwrap()).collect();
    assert!(first.iter().all(|b| b.arena() == 0));
    let second: Vec<_> = (3..6).map(|i| alloc.try_alloc(i).unwrap()).collect();
    assert!(second.iter().all(|b| b.arena() == 1));
    let mut first = first.into_iter();
    // Two of arena 0's three objects back: still not reusable.
    release.free(first.next().unwrap()).unwrap();
    release.free(first.next().unwrap()).unwrap();
    assert!(alloc.try_alloc(6).is_err());
    // The last one dropped without the releaser also counts.
    drop(first.next().unwrap());
    let again = alloc.try_alloc(7).unwrap();
    assert_eq!((again.arena(), again.slot()), (0, 0));
    assert_eq!(alloc.stats().exhausted, 1);
    assert_eq!(alloc.stats().rotations, 2);
    assert_eq!(alloc.allocated(), 7);
    for b in second {
        release.free(b).unwrap();
    }
    release.free(again).unwrap();
}

#[test]
fn freelist_counts_drops_and_exhaustion() {
    let ledger = Ledger::new(6);
    let pool = Freelist::new(3).unwrap();
    let a = pool.try_alloc(ledger.tok(0)).unwrap();
    let b = pool.try_alloc(ledger.tok(1)).unwrap();
    let c = pool.try_alloc(ledger.tok(2)).unwrap();
    let back = pool.try_alloc(ledger.tok(3)).unwrap_err().into_inner();
    assert_eq!(back.id, 3);
    drop(back);
    assert_eq!(pool.stats().exhausted, 1);
    drop(b);
    assert_eq!(pool.available(), 1);
    let d = pool.try_alloc(ledger.tok(4)).unwrap();
    drop((a, c, d));
    assert_eq!(pool.available(), 3);
    ledger.assert_dropped(|id| id != 5);
}

/// A destructor that allocates from the same freelist (re-entrancy). The pool must
/// outlive a type that borrows it, so it is leaked, and the test skipped under Miri.
#[test]
fn freelist_destructor_may_use_the_pool() {
    if cfg!(miri) {
        return;
    }
    struct Reenter(&'static Freelist<Reenter>, bool);
    impl Drop for Reenter {
        fn drop(&mut self) {
            if self.1 {
                let inner = self.0.try_alloc(Reenter(self.0, false)).ok();
                assert!(inner.is_some());
            }
        }
    }
    let pool: &'static Freelist<Reenter> = Box::leak(Box::new(Freelist::new(2).unwrap()));
    let outer = pool.try_alloc(Reenter(pool, true)).ok().unwrap();
    drop(outer);
    assert_eq!(pool.available(), 2);
}

/// Objects in flight when the handles go, in every order of (allocator, releaser,
/// boxes): each object is dropped exactly once, and Miri checks the memory is freed.
#[test]
fn teardown_in_every_order_drops_each_object_once() {
    for order in 0..6 {
        let ledger = Ledger::new(8);
        let (mut alloc, mut release) = return_queue::new(rq(8, 4, 2)).unwrap();
        let mut boxes: Vec<_> = (0..6)
            .map(|i| alloc.try_alloc(ledger.tok(i)).unwrap())
            .collect();
        release.free(boxes.remove(0)).unwrap();
        let (mut a, mut r, mut b) = (Some(alloc), Some(release), Some(boxes));
        let seq: [u8; 3] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ][order];
        for step in seq {
            match step {
                0 => drop(a.take()),
                1 => drop(r.take()),
                _ => drop(b.take()),
            }
        }
        ledger.assert_dropped(|id| id < 6);

        let ledger = Ledger::new(8);
        let (mut alloc, mut release) = arena::new(ar(2, 4)).unwrap();
        let mut boxes: Vec<_> = (0..6)
            .map(|i| alloc.try_alloc(ledger.tok(i)).unwrap())
            .collect();
        release.free(boxes.remove(0)).unwrap();
        let (mut a, mut r, mut b) = (Some(alloc), Some(release), Some(boxes));
        for step in seq {
            match step {
                0 => drop(a.take()),
                1 => drop(r.take()),
                _ => drop(b.take()),
            }
        }
        ledger.assert_dropped(|id| id < 6);
    }
}

/// Boxes outliving both handles are dropped on another thread; the last one frees.
#[test]
fn boxes_outlive_the_handles_across_threads() {
    let ledger = Ledger::new(8);
    let (mut alloc, release) = return_queue::new(rq(8, 8, 8)).unwrap();
    let boxes: Vec<_> = (0..4)
        .map(|i| alloc.try_alloc(ledger.tok(i)).unwrap())
        .collect();
    let (mut a2, r2) = arena::new(ar(2, 2)).unwrap();
    let arena_boxes: Vec<_> = (4..8)
        .map(|i| a2.try_alloc(ledger.tok(i)).unwrap())
        .collect();
    std::thread::scope(|s| {
        s.spawn(move || drop(boxes));
        s.spawn(move || drop(arena_boxes));
        drop((alloc, release, a2, r2));
    });
    ledger.assert_dropped(|_| true);
}

#[test]
fn forgotten_boxes_only_leak() {
    // Leaking on purpose: the leaked slab would trip Miri's leak check, so the
    // forgotten boxes are the only thing left alive and the test ends with them.
    if cfg!(miri) {
        return;
    }
    let ledger = Ledger::new(6);
    let (mut alloc, mut release) = return_queue::new(rq(2, 2, 2)).unwrap();
    let kept = alloc.try_alloc(ledger.tok(0)).unwrap();
    std::mem::forget(alloc.try_alloc(ledger.tok(1)).unwrap());
    assert!(
        alloc.try_alloc(ledger.tok(2)).is_err(),
        "the forgotten slot stays in use"
    );
    release.free(kept).unwrap();
    let again = alloc.try_alloc(ledger.tok(3)).unwrap();
    assert_eq!(again.slot(), 0);
    drop((again, alloc, release));

    let (mut alloc, mut release) = arena::new(ar(1, 1)).unwrap();
    std::mem::forget(alloc.try_alloc(ledger.tok(4)).unwrap());
    assert!(
        alloc.try_alloc(ledger.tok(5)).is_err(),
        "the arena never comes back"
    );
    drop((alloc, &mut release));
    ledger.assert_dropped(|id| id == 0 || id == 2 || id == 3 || id == 5);
}

#[test]
fn forgotten_handles_keep_every_box_usable() {
    if cfg!(miri) {
        return; // leaks on purpose (see forgotten_boxes_only_leak)
    }
    let ledger = Ledger::new(4);
    let (mut alloc, release) = return_queue::new(rq(4, 4, 4)).unwrap();
    let a = alloc.try_alloc(ledger.tok(0)).unwrap();
    let b = alloc.try_alloc(ledger.tok(1)).unwrap();
    std::mem::forget(alloc);
    drop(release);
    assert_eq!(a.id + b.id, 1);
    drop((a, b));
    let (mut alloc, release) = arena::new(ar(1, 4)).unwrap();
    let c = alloc.try_alloc(ledger.tok(2)).unwrap();
    let d = alloc.try_alloc(ledger.tok(3)).unwrap();
    drop(alloc);
    std::mem::forget(release);
    drop((c, d));
    ledger.assert_dropped(|_| true);
}

#[test]
fn panicking_destructors_lose_nothing_else() {
    // In `release`: the slot still goes back (return queue) or is still acknowledged
    // (arena); in a box's drop: the object still retires, so teardown frees memory.
    let ledger = Ledger::new(8);
    ledger.panic_on(0);
    let (mut alloc, mut release) = return_queue::new(rq(1, 1, 1)).unwrap();
    let b = alloc.try_alloc(ledger.tok(0)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| release.free(b))).is_err());
    let again = alloc.try_alloc(ledger.tok(1)).unwrap();
    assert_eq!(again.slot(), 0, "the slot came back despite the panic");
    release.free(again).unwrap();

    let (mut alloc2, mut release2) = arena::new(ar(1, 1)).unwrap();
    ledger.panic_on(2);
    let b = alloc2.try_alloc(ledger.tok(2)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| release2.free(b))).is_err());
    let again = alloc2.try_alloc(ledger.tok(3)).unwrap();
    release2.free(again).unwrap();

    ledger.panic_on(4);
    let b = alloc.try_alloc(ledger.tok(4)).unwrap();
    let c = alloc2.try_alloc(ledger.tok(5)).unwrap();
    drop((alloc, release, alloc2, release2));
    assert!(catch_unwind(AssertUnwindSafe(|| drop(b))).is_err());
    ledger.panic_on(5);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(c))).is_err());

    let pool = Freelist::new(1).unwrap();
    ledger.panic_on(6);
    let d = pool.try_alloc(ledger.tok(6)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(d))).is_err());
    assert_eq!(
        pool.available(),
        1,
        "the freelist slot came back despite the panic"
    );
    drop(pool.try_alloc(ledger.tok(7)).unwrap());
    ledger.assert_dropped(|_| true);
}

#[test]
fn debug_does_not_need_t_debug() {
    struct Opaque(#[allow(dead_code)] u8);
    let (mut alloc, release) = return_queue::new::<Opaque>(rq(2, 2, 2)).unwrap();
    let _b = alloc.try_alloc(Opaque(0)).ok().unwrap();
    assert!(format!("{alloc:?} {release:?}").contains("Allocator"));
    let (a2, r2) = arena::new::<Opaque>(ar(1, 1)).unwrap();
    assert!(format!("{a2:?} {r2:?}").contains("Releaser"));
    assert!(format!("{:?}", Freelist::<Opaque>::new(1).unwrap()).contains("capacity"));
    assert_eq!(format!("{:?}", Exhausted(Opaque(1))), "Exhausted(..)");
}

#[test]
fn handles_and_boxes_are_send_not_sync() {
    fn send<T: Send>() {}
    send::<return_queue::Allocator<String>>();
    send::<return_queue::Releaser<String>>();
    send::<arena::Allocator<String>>();
    send::<arena::Releaser<String>>();
    send::<handoff_pool::PoolBox<String>>();
    send::<handoff_pool::ArenaBox<String>>();
}

/// `release` moves the object out of its slot and hands it to the caller, who drops it
/// once; the slot comes back; `free` drops it in its slot. The same for every pool that
/// has a releasing side.
#[test]
fn release_hands_the_object_out_and_free_drops_it_in_place() {
    let ledger = Ledger::new(6);
    let (mut alloc, mut release) = return_queue::new(rq(1, 1, 1)).unwrap();
    let t = release
        .release(alloc.try_alloc(ledger.tok(0)).unwrap())
        .unwrap();
    assert_eq!(
        (t.id, ledger.drops(0)),
        (0, 0),
        "out of the slot, not dropped"
    );
    drop(t);
    let b = alloc.try_alloc(ledger.tok(1)).unwrap(); // the one slot came back
    release.free(b).unwrap();
    assert_eq!((ledger.drops(0), ledger.drops(1)), (1, 1));

    let (mut alloc, mut release) = arena::new(ar(2, 1)).unwrap();
    let t = release
        .release(alloc.try_alloc(ledger.tok(2)).unwrap())
        .unwrap();
    assert_eq!(ledger.drops(2), 0);
    drop(t);
    release
        .free(alloc.try_alloc(ledger.tok(3)).unwrap())
        .unwrap();
    // Both arenas were acknowledged, so the first is ready again.
    release
        .free(alloc.try_alloc(ledger.tok(4)).unwrap())
        .unwrap();

    let pool = Freelist::new(1).unwrap();
    let t = pool
        .release(pool.try_alloc(ledger.tok(5)).unwrap())
        .unwrap();
    assert_eq!((ledger.drops(5), pool.available()), (0, 1));
    drop(t);
    ledger.assert_dropped(|_| true);
}

/// A freelist's `release` and `free` refuse another freelist's box, untouched.
#[test]
fn freelist_release_and_free_refuse_a_foreign_box() {
    let ledger = Ledger::new(1);
    let (a, b) = (Freelist::new(1).unwrap(), Freelist::new(1).unwrap());
    let x = a.try_alloc(ledger.tok(0)).unwrap();
    let x = b.release(x).unwrap_err().into_inner();
    let x = b.free(x).unwrap_err().into_inner();
    assert_eq!((ledger.drops(0), a.available(), b.available()), (0, 0, 1));
    assert_eq!(x.into_inner().id, 0);
    assert_eq!(a.available(), 1);
    ledger.assert_dropped(|_| true);
}
