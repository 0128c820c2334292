//! `BumpArena`: alignment, exhaustion, reset, values never dropped, panics inside
//! constructors, and NUMA-placed arenas.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use std::alloc::Layout;
use std::cell::Cell;

use handoff_pool::{BumpArena, ConfigError};

#[test]
fn bad_sizes_are_errors() {
    assert_eq!(BumpArena::new(0).unwrap_err(), ConfigError::Zero("bytes"));
    assert_eq!(
        BumpArena::new(usize::MAX).unwrap_err(),
        ConfigError::ArenaTooLarge { bytes: usize::MAX }
    );
    assert!(ConfigError::ArenaTooLarge { bytes: 7 }
        .to_string()
        .contains("7 bytes"));
}

#[test]
fn every_allocation_is_aligned_and_inside_and_disjoint() {
    let arena = BumpArena::new(1 << 16).unwrap();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, align) in [1usize, 2, 4, 8, 16, 32, 64, 128, 256, 4096]
        .iter()
        .cycle()
        .take(60)
        .enumerate()
    {
        let size = (i * 7) % 50;
        let layout = Layout::from_size_align(size, *align).unwrap();
        let p = arena.try_alloc_layout(layout).unwrap().as_ptr() as usize;
        assert_eq!(p % align, 0, "alignment {align}");
        spans.push((p, p + size));
    }
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlapping allocations {w:?}");
    }
    assert!(arena.used() <= arena.capacity());
}

#[test]
fn fills_exactly_then_refuses_then_reset_reuses_the_same_memory() {
    let mut arena = BumpArena::new(10 * 24).unwrap();
    let first: Vec<usize> = (0..10u64)
        .map(|i| arena.try_alloc([i; 3]).unwrap() as *mut _ as usize)
        .collect();
    assert_eq!(arena.available(), 0);
    assert_eq!(arena.try_alloc(1u8).unwrap_err().into_inner(), 1);
    assert!(arena.try_alloc_with(|| 1u8).is_err());
    assert!(arena.try_alloc_slice_fill_with(1, |_| 1u8).is_err());
    let one = Layout::new::<u8>();
    assert_eq!(arena.try_alloc_layout(one).unwrap_err().into_inner(), one);
    assert_eq!(arena.stats().exhausted, 4, "each refusal counted once");
    // A zero-sized request fits even in a full arena.
    assert!(arena.try_alloc(()).is_ok());
    arena.reset();
    assert_eq!(arena.used(), 0);
    let again: Vec<usize> = (0..10u64)
        .map(|i| arena.try_alloc([i; 3]).unwrap() as *mut _ as usize)
        .collect();
    assert_eq!(first, again);
}

#[test]
fn values_read_back_after_many_allocations() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Tick {
        ts: u64,
        price: f64,
        volume: i32,
        flags: u32,
    }
    let n = if cfg!(miri) { 500 } else { 100_000 };
    let mut arena = BumpArena::new(n * size_of::<Tick>()).unwrap();
    for round in 0..3u64 {
        arena.reset();
        let ticks: Vec<&mut Tick> = (0..n as u64)
            .map(|i| {
                arena
                    .try_alloc(Tick {
                        ts: round * 1_000_000 + i,
                        price: 100.0 + i as f64 * 0.01,
                        volume: i as i32,
                        flags: round as u32,
                    })
                    .unwrap()
            })
            .collect();
        for (i, t) in ticks.iter().enumerate() {
            assert_eq!(t.ts, round * 1_000_000 + i as u64);
            assert_eq!(t.volume, i as i32);
            assert_eq!(t.flags, round as u32);
        }
        assert!(arena.try_alloc(ticks[0].ts).is_err());
    }
}

struct Counted<'a>(&'a Cell<usize>);
impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn values_are_never_dropped_by_the_arena_and_refused_ones_come_back() {
    let drops = Cell::new(0);
    let mut arena = BumpArena::new(4 * size_of::<Counted>()).unwrap();
    for _ in 0..4 {
        assert!(arena.try_alloc(Counted(&drops)).is_ok());
    }
    let back = arena.try_alloc(Counted(&drops)).err().expect("full");
    assert_eq!(drops.get(), 0);
    drop(back); // the refused value is the caller's again
    assert_eq!(drops.get(), 1);
    arena.reset();
    drop(arena);
    assert_eq!(drops.get(), 1, "reset and drop forget the values");
}

#[test]
fn a_panicking_constructor_leaves_the_arena_usable() {
    let arena = BumpArena::new(1024).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.try_alloc_with(|| -> u64 { panic!("constructor failed") })
    }));
    assert!(r.is_err());
    let drops = Cell::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.try_alloc_slice_fill_with(8, |i| {
            if i == 5 {
                panic!("element 5");
            }
            Counted(&drops)
        })
    }));
    assert!(r.is_err());
    assert_eq!(
        drops.get(),
        0,
        "the five written elements are forgotten, not dropped"
    );
    assert_eq!(*arena.try_alloc(9u64).unwrap(), 9);
}

#[test]
fn the_arena_moves_to_another_thread() {
    let mut arena = BumpArena::new(4096).unwrap();
    arena.try_alloc(1u64).unwrap();
    let arena = std::thread::spawn(move || {
        arena.reset();
        *arena.try_alloc(5u64).unwrap() += 1;
        arena
    })
    .join()
    .unwrap();
    assert_eq!(arena.used(), 8);
}
