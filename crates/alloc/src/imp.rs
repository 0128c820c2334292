//! `GlobalAlloc` for [`HandoffAlloc`]: the fast paths, inline, and the dispatch to the
//! slow ones.

use crate::class::{class_for, class_of, MAX_SMALL, REGION_BITS, REGION_SIZE};
use crate::heap::{self, arena_offset, geometry, LOCAL};
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

/// Pushes `p` onto this thread's magazine for class `c` if its address says it is a
/// block of this thread's heap in class `c` and the magazine has room; false otherwise.
/// (In an arena smaller than the full one the thread's `base` is `NO_BASE`, so this
/// is always false and the slow path decodes the address.)
///
/// `c` comes from the layout the caller passes to `dealloc`; the address decides. The
/// test is one comparison (is the offset of `p` from the thread's heap span inside the
/// region of class `c`), and because the magazine's address is computed from `c`, not
/// from `p`, the push does not wait for `p` to be known: a free right after an
/// allocation does not lengthen the chain of dependent loads.
#[inline(always)]
fn push_local(p: *mut u8, c: usize) -> bool {
    LOCAL
        .try_with(|l| {
            let off = p.addr().wrapping_sub(l.base.get());
            if off.wrapping_sub(c << REGION_BITS) >= REGION_SIZE {
                return false;
            }
            // SAFETY: `p` lies in this thread's heap's region of class `c` (so the
            // thread owns a heap and `heap` is it); the caller is done with it.
            unsafe { (*l.heap.get()).mags[c & 31].push(p) }
        })
        .unwrap_or(false)
}

#[inline]
fn alloc_small(c: usize) -> *mut u8 {
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
            return (p, false);
        }
        return (big::alloc_libc(layout.size(), layout.align()), false);
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
    match geometry().decode(arena_offset(p)) {
        // SAFETY: inside the arena, `p` is a block of heap `owner` in class `c` (the
        // arena's layout), and the caller is done with it.
        Some((owner, c)) => unsafe { heap::free_small_slow(p, owner, c) },
        // SAFETY: outside the arena, `p` is a big block; the caller is done with it.
        None => unsafe { big::free(p) },
    }
}

/// A small request the arena could not serve (no arena, or the region is full).
#[cold]
#[inline(never)]
fn alloc_fallback(layout: Layout) -> *mut u8 {
    big::alloc_libc(layout.size(), layout.align())
}

// SAFETY: every block handed out is either a whole block of a size class at least as big
// and as aligned as the layout (`class_for`), inside committed memory of the arena and on
// no free store until freed, or a fresh or cached mapping at least as big, aligned as
// asked (`big::alloc`), or (when the arena cannot serve a small request) part of a
// `malloc` block at least as big, aligned as asked (`big::alloc_libc`). A block goes back to exactly one free store or mapping cache when
// freed; its class and owner are read from its address, which the arena's layout fixes.
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
        if let Some(c) = class_for(layout.size(), layout.align()) {
            if push_local(ptr, c) {
                return;
            }
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
        let geo = geometry();
        let off = arena_offset(ptr);
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
