//! `GlobalAlloc` for [`HandoffAlloc`]: the fast paths, inline, and the dispatch to the
//! slow ones.

use crate::class::{
    aligned_within, block_of_aligned, class_for, class_of, MAX_SMALL, REGION_HEAD, TABLE_MAX,
};
use crate::heap::{self, CLASS_SLOTS, LOCAL};
use crate::{big, HandoffAlloc};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// Pops a block of class `c` from this thread's magazine; null when it is empty (or
/// the thread has no heap yet: it points at `NO_HEAP`, whose magazines are empty).
#[inline(always)]
fn pop_local(c: usize) -> *mut u8 {
    LOCAL
        .try_with(|l| {
            // SAFETY: `heap` is `NO_HEAP` or a heap this thread owns; both are
            // statics, and only this thread touches their magazines (`NO_HEAP`'s are
            // never written).
            unsafe { (*l.heap.get()).mags[c & 31].pop() }
        })
        .unwrap_or(ptr::null_mut())
}

/// Pushes `p` onto this thread's magazine for its class if its address says it is a
/// block of this thread's heap and the magazine has room; false otherwise.
///
/// The class comes from the address: the arena and so every heap's span is aligned to
/// the span's size, so the address's bits above the region offset (the thread's
/// `shift`: the arena's region bits), exclusive-or the span's start, are the class when
/// `p` lies in the span and 32 or more when it does not. One exclusive-or, one shift and
/// one comparison do both tests, and a block freed with a layout other than the one it
/// was made with still goes back to its own class. The shift is read from the thread's
/// binding, not a constant, so that a reduced arena (smaller regions) takes the same
/// path: in earlier versions the shift was the full arena's constant, every free in a reduced
/// arena took the slow path, and its pair cost 2.75 times the full arena's; with the
/// shift read, the full arena's pair did not change beyond the noise (see
/// docs/alloc.md).
///
/// `layout`'s class is only a hint: when it equals the address's, the push uses it.
/// Both are the same number, but a magazine whose address comes from the layout does
/// not wait for the block's address, and for a layout the compiler knows (a `Box` of
/// one type) it is a constant. In a loop that allocates a block and frees it, the
/// magazine's count then does not depend on the block the previous allocation loaded:
/// `alloc_pair` in benches/alloc.rs took 1.91 ns per pair with the magazine indexed by
/// the address's class, 1.80 ns with this hint (see docs/alloc.md, "The free's class
/// test"). Sizes up to [`TABLE_MAX`] cost one table lookup for the hint; beyond, the
/// address's class alone.
#[inline(always)]
fn push_local(p: *mut u8, layout: Layout) -> bool {
    LOCAL
        .try_with(|l| {
            let x = (p.addr() ^ l.base.get()) >> l.shift.get();
            // SAFETY: `heap` is `NO_HEAP` or a heap this thread owns, both statics.
            let heap = unsafe { &*l.heap.get() };
            if layout.size() <= TABLE_MAX {
                let c = class_of(layout.size());
                if x == c {
                    // SAFETY: `x` is `c`, a class, so below CLASS_SLOTS: `p` lies in this
                    // thread's heap span (the thread owns a heap and `heap` is it), in the
                    // region of class `c`; the caller is done with it.
                    return unsafe { heap.mags[c & (CLASS_SLOTS - 1)].push(p) };
                }
            }
            if x >= CLASS_SLOTS {
                return false;
            }
            // SAFETY: as above, in the region of class `x`.
            unsafe { heap.mags[x].push(p) }
        })
        .unwrap_or(false)
}

/// A block of class `c`: this thread's magazine, else the slow path; null when the
/// arena cannot serve it.
#[inline]
pub(crate) fn alloc_small(c: usize) -> *mut u8 {
    let p = pop_local(c);
    if p.is_null() {
        heap::alloc_small_slow(c)
    } else {
        p
    }
}

/// Any request the fast path did not serve.
#[cold]
#[inline(never)]
fn alloc_other(layout: Layout) -> (*mut u8, bool) {
    if let Some(c) = class_for(layout.size(), layout.align()) {
        let p = alloc_small(c);
        if !p.is_null() {
            // Over-aligned requests start inside their block; others at its start.
            return (aligned_within(p, layout.align()), false);
        }
        let p = big::alloc_small_elsewhere(c, layout.size(), layout.align());
        return (p, false);
    }
    big::alloc(layout.size(), layout.align())
}

/// Any free the fast path did not take: the owner and the class are read from the
/// address alone.
///
/// # Safety
/// `p` is a live block of this allocator that the caller is done with.
#[cold]
#[inline(never)]
unsafe fn free_slow(p: *mut u8) {
    match heap::decode(p) {
        // SAFETY: inside the arena, `p` is a block of heap `owner` in class `c` (the
        // arena's layout), and the caller is done with it.
        Some((owner, c)) => unsafe { heap::free_small_slow(p, owner, c) },
        // SAFETY: outside the arena, `p` is a large, spilled or big block; the caller
        // is done with it.
        None => unsafe { big::free(p) },
    }
}

/// The block that holds `p`, a live allocation of `layout`, an over-aligned one
/// (beyond [`REGION_HEAD`]): when the arena served it, `p` lies inside a block of the
/// class `class_for` gives (see `class::aligned_within`); otherwise (a mapping of its
/// own) `p` is what is freed.
#[inline]
fn block_start(p: *mut u8, layout: Layout) -> *mut u8 {
    match class_for(layout.size(), layout.align()) {
        Some(c) if heap::decode(p).is_some_and(|(_, at)| at == c) => block_of_aligned(p, c),
        _ => p,
    }
}

/// A small request (at most 8-aligned) the arena could not serve (no arena, or the
/// region is full).
#[cold]
#[inline(never)]
fn alloc_fallback(layout: Layout) -> *mut u8 {
    big::alloc_small_elsewhere(class_of(layout.size()), layout.size(), layout.align())
}

// SAFETY: every block handed out is either a whole block of a size class at least as big
// and as aligned as the layout (`class_for`), inside committed memory of the arena and on
// no free store until freed, or a block of that class in a chunk outside the arena
// (`spill`, aligned as the arena's), or a slot of the large range or a fresh or cached
// mapping at least as big, aligned as asked (`big::alloc`). A block goes back to exactly
// one free store, slot stack or mapping cache when freed; its class and owner are read
// from its address, which the arena's layout fixes, and a block outside the arena is
// found in the part that recorded it (`big::free`).
unsafe impl GlobalAlloc for HandoffAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size();
        if layout.align() <= 8 && size <= MAX_SMALL {
            let p = alloc_small(class_of(size));
            if !p.is_null() {
                return p;
            }
            return alloc_fallback(layout);
        }
        alloc_other(layout).0
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // For a layout the compiler knows, this folds away unless it is over-aligned.
        let ptr = if layout.align() > REGION_HEAD {
            block_start(ptr, layout)
        } else {
            ptr
        };
        if push_local(ptr, layout) {
            return;
        }
        // SAFETY: the caller's live block, no longer used.
        unsafe { free_slow(ptr) };
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let (p, zero) = if layout.align() <= 8 && layout.size() <= MAX_SMALL {
            let p = alloc_small(class_of(layout.size()));
            if p.is_null() {
                (alloc_fallback(layout), false)
            } else {
                (p, false)
            }
        } else {
            alloc_other(layout)
        };
        if !p.is_null() && !zero {
            // SAFETY: `p` is a fresh block of at least `layout.size()` bytes.
            unsafe { ptr::write_bytes(p, 0, layout.size()) };
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // One load of the arena's base and shape (`heap::locate`), so the two match.
        let (geo, off) = heap::locate(ptr);
        match geo.decode(off) {
            Some((_, c)) if class_for(new_size, layout.align()) == Some(c) => return ptr,
            // A big block stays in place while it fits and is still big; a shrink gives
            // the tail of its mapping back.
            // SAFETY: outside the arena, `ptr` is a live big block.
            None if new_size > MAX_SMALL && new_size <= unsafe { big::usable(ptr) } => {
                // SAFETY: as above, and the new size fits the block.
                unsafe { big::shrink(ptr, new_size) };
                return ptr;
            }
            _ => {}
        }
        if off >= geo.arena_size() && new_size > MAX_SMALL {
            // A big block that stays big: move its mapping rather than copy it.
            // SAFETY: outside the arena, `ptr` is a live big block with this alignment.
            let moved = unsafe { big::remap(ptr, layout.align(), new_size) };
            if !moved.is_null() {
                return moved;
            }
        }
        // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`,
        // does not overflow, so this layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid, non-zero layout (the caller's contract).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least this long.
            unsafe { ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: `ptr` is the caller's live block, no longer used.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use crate::class::{class_align, class_size, NUM_CLASSES};
    use core::sync::atomic::Ordering;

    /// This thread's magazine count for class `c`.
    fn in_magazine(c: usize) -> u32 {
        // SAFETY: `heap` is `NO_HEAP` or this thread's heap, both statics.
        LOCAL.with(|l| unsafe { (*l.heap.get()).mags[c].count.load(Ordering::Relaxed) })
    }

    #[test]
    fn the_free_fast_path_takes_this_heaps_blocks_of_every_class_and_nothing_else() {
        let a = HandoffAlloc;
        let layouts: Vec<Layout> = (0..NUM_CLASSES)
            .map(|c| Layout::from_size_align(class_size(c), 8).unwrap())
            .collect();
        // A block through the allocator binds this thread to a heap.
        let first = Layout::from_size_align(8, 8).unwrap();
        // SAFETY: a valid layout of non-zero size.
        let bound = unsafe { a.alloc(first) };
        assert!(!bound.is_null());
        // The arena's shape: full here, unless the system refused it.
        let geo = heap::geometry();
        let (span, bits) = (geo.span(), geo.region_bits);
        assert_eq!(LOCAL.with(|l| l.shift.get()), bits);
        let base = LOCAL.with(|l| l.base.get());
        let big_hint = Layout::from_size_align(TABLE_MAX + 1, 8).unwrap();
        assert_eq!(base % span, 0, "the heap's span is aligned to its size");
        let (own, _) = heap::decode(base as *mut u8).expect("this heap lies in the arena");
        // A block of every class of this heap's own. An allocation may first hand out
        // blocks borrowed from a heap whose thread exited (other tests of this binary
        // leave such heaps with free blocks): each of those must still be of the
        // class asked for, in another heap's region; they are kept aside while this
        // heap's own block is sought, and freed at the end.
        let mut borrowed = Vec::new();
        let blocks: Vec<*mut u8> = layouts
            .iter()
            .enumerate()
            .map(|(c, &l)| loop {
                // SAFETY: a valid layout of non-zero size.
                let p = unsafe { a.alloc(l) };
                assert!(!p.is_null());
                let (h, class) = heap::decode(p).expect("a class's block lies in the arena");
                assert_eq!(class, c, "the block of a {} byte request", l.size());
                if h == own {
                    break p;
                }
                borrowed.push((p, l));
                assert!(
                    borrowed.len() < 1 << 20,
                    "class {c}: never this heap's block"
                );
            })
            .collect();
        for (c, (&p, &l)) in blocks.iter().zip(&layouts).enumerate() {
            assert_eq!((p.addr() - base) >> bits, c, "class {c}");
            assert_eq!(
                p.addr() % class_align(c),
                0,
                "class {c}: its promised alignment"
            );
            if in_magazine(c) as usize == heap::MAG {
                // A full magazine: the push declines and the slow path spills.
                // SAFETY: allocated above with `l`.
                unsafe { a.dealloc(p, l) };
                continue;
            }
            // The layout is a hint only: its own layout, another class's (the address's
            // class then decides) and one beyond the class table all put the block in
            // its own magazine.
            let other = layouts[(c + 1) % NUM_CLASSES];
            for hint in [l, other, big_hint] {
                let before = in_magazine(c);
                assert!(
                    push_local(p, hint),
                    "class {c}, hint {hint:?}: this heap's block takes the fast path"
                );
                assert_eq!(
                    in_magazine(c),
                    before + 1,
                    "class {c}, hint {hint:?}: into its own magazine"
                );
                // The block comes back out of the same magazine.
                assert_eq!(pop_local(c), p);
            }
            // SAFETY: allocated above with `l`, handed back once here.
            unsafe { a.dealloc(p, l) };
        }
        // Not this heap's blocks: the neighbouring heaps' spans, the arena's outside,
        // a big block. None is read or written; each is refused before any access,
        // whatever class the layout names.
        let big_layout = Layout::from_size_align(1 << 20, 8).unwrap();
        // SAFETY: a valid layout.
        let big = unsafe { a.alloc(big_layout) };
        assert!(!big.is_null());
        let foreign = [
            base.wrapping_add(span),
            base.wrapping_add(span + (4 << bits)),
            base.wrapping_sub(8),
            8,
            big.addr(),
        ];
        for q in foreign {
            for hint in layouts.iter().chain([&big_hint, &big_layout]) {
                assert!(
                    !push_local(q as *mut u8, *hint),
                    "{q:#x} with hint {hint:?} is not this heap's block"
                );
            }
        }
        // SAFETY: allocated just above with this layout.
        unsafe { a.dealloc(big, big_layout) };
        // Aligned requests: up to a page from a class (beyond the region head's
        // alignment, inside a bigger block), beyond it from a mapping of their own;
        // aligned either way, and the block goes back to its class: allocated again,
        // the same address comes back.
        for shift in 3..=13 {
            for size in [1, 100, 4096] {
                let l = Layout::from_size_align(size, 1 << shift).unwrap();
                // SAFETY: a valid layout.
                let p = unsafe { a.alloc(l) };
                assert!(!p.is_null());
                assert_eq!(p.addr() % l.align(), 0, "{l:?}");
                // SAFETY: `p` is live with `l`'s size.
                unsafe { p.write_bytes(0xa5, size) };
                // In the arena (this heap's span, or a borrowed block of another's).
                let in_arena = heap::decode(p).is_some();
                assert_eq!(
                    in_arena,
                    l.align() <= crate::class::MAX_CLASS_ALIGN,
                    "{l:?}"
                );
                // SAFETY: allocated just above with `l`.
                unsafe { a.dealloc(p, l) };
                if in_arena {
                    // SAFETY: a valid layout.
                    let q = unsafe { a.alloc(l) };
                    assert_eq!(q, p, "{l:?}: the block went back to its magazine");
                    // SAFETY: allocated just above with `l`.
                    unsafe { a.dealloc(q, l) };
                }
            }
        }
        // A thread that has no heap takes nothing on the fast path.
        let (p, l) = (blocks[4].addr(), layouts[4]);
        let taken = std::thread::spawn(move || push_local(p as *mut u8, l))
            .join()
            .unwrap();
        assert!(!taken, "a thread without a heap");
        for (p, l) in borrowed.into_iter().chain([(bound, first)]) {
            // SAFETY: allocated above with `l`, handed back once here.
            unsafe { a.dealloc(p, l) };
        }
    }
}
