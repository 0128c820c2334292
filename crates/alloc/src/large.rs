//! Large blocks: over [`MAX_SMALL`] and up to [`LARGE_TOP`], at most page-aligned. They
//! are slots of 16 large classes (four per doubling, 320 KiB to 4 MiB) in one range of
//! address space reserved at their first use (`PROT_NONE`, `MAP_NORESERVE`): each
//! class owns a 256 GiB part of it, whose slots are committed (`mprotect`) as they are
//! first cut and never uncommitted. Committed slots are all readable and writable and
//! lie end to end, so the kernel keeps them in one mapping however many are freed:
//! freeing every other one of 140 000 blocks of 1 MiB no longer makes 70 000 holes in
//! 70 000 mappings (the kernel's limit is 65 530), as a mapping per block did in earlier
//! versions. A freed slot gives its memory back with `MADV_DONTNEED`, except the most
//! recently freed slot of each class up to 1 MiB ([`DIRTY_MAX`], [`DIRTY_SIZE_MAX`]),
//! which the next allocation of the class reuses as it is.
//!
//! Each class has a lock, a count of the slots cut so far, a stack of its free slots'
//! indices kept at the end of its part of the range, and before it a bitmap of the
//! slots in use (both committed as slots are cut, so a free never needs memory). A
//! block's slot is its offset in its class's part divided by the class size: no
//! header. A free of a slot that is not in use (a block freed twice) stops the process
//! with a message; until 2026-11-29 the slot went on the stack twice and the next two
//! allocations returned the same block.
//!
//! A small request that its heap's region cannot serve (the region is full) also comes
//! here, from the smallest large class, before the C library's `malloc`.
//!
//! If the range cannot be reserved (a limit on the address space), or a class's part is
//! full, big blocks are mappings of their own, as before (`big`).

use crate::class::MAX_SMALL;
use crate::fatal::debug_check;
use crate::lock::Lock;
use crate::os::{self, PAGE};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// The biggest large block; bigger blocks are mappings of their own (and `realloc`
/// moves them with `mremap`).
pub(crate) const LARGE_TOP: usize = 4 << 20;
/// Large classes: four per doubling from 256 KiB to 4 MiB.
pub(crate) const LARGE_CLASSES: usize = 16;
/// Bits of one class's part of the range: 256 GiB.
const PART_BITS: u32 = 38;
const PART: usize = 1 << PART_BITS;
/// The end of each part holds its class's stack of free slots (4 bytes a slot).
const STACK_BYTES: usize = 4 << 20;
/// Before the stack, the bitmap of the class's slots in use (a bit a slot).
const LIVE_MAP_BYTES: usize = 128 << 10;
/// The stack's memory is committed this much at a time.
const STACK_CHUNK: usize = 64 << 10;
/// Freed slots of a class that keep their memory (the most recently freed): a program
/// that frees and allocates a buffer of the same size again and again makes no system
/// call and takes no page fault. One: keeping four of every class held `runner alloc`'s
/// own growing buffers resident (its memory ratio 1.087 of jemalloc's instead of 1.063).
const DIRTY_MAX: u32 = 1;
/// Only slots up to this size keep their memory when freed.
const DIRTY_SIZE_MAX: usize = 1 << 20;
/// A stack entry's flag: the slot still has its memory.
const DIRTY: u32 = 1 << 31;

/// The size of large class `i`.
const fn class_size(i: usize) -> usize {
    let base = (MAX_SMALL) << (i / 4);
    base / 4 * (5 + i % 4)
}

const _: () = assert!(class_size(LARGE_CLASSES - 1) == LARGE_TOP);
// Every slot is whole pages (so every slot starts on a page), the smallest beyond the
// size classes.
const _: () = {
    assert!(class_size(0) > MAX_SMALL);
    let mut i = 0;
    while i < LARGE_CLASSES {
        assert!(class_size(i).is_multiple_of(PAGE));
        i += 1;
    }
};
// Every slot index fits below the dirty flag.
const _: () = assert!(PART / class_size(0) < DIRTY as usize);
const _: () = assert!((PART / class_size(0)) * 4 <= STACK_BYTES);
const _: () = assert!(capacity(0).div_ceil(8) <= LIVE_MAP_BYTES);

/// The large class of `size` bytes, if it is one.
fn class_of(size: usize) -> Option<usize> {
    if size <= MAX_SMALL || size > LARGE_TOP {
        return None;
    }
    (0..LARGE_CLASSES).find(|&i| class_size(i) >= size)
}

/// Slots of class `i` its part holds.
const fn capacity(i: usize) -> usize {
    (PART - STACK_BYTES - LIVE_MAP_BYTES) / class_size(i)
}

struct Inner {
    /// Slots cut so far (the next never-used slot).
    cut: usize,
    /// Free slots on the stack.
    free: usize,
    /// Of those, slots that kept their memory.
    dirty: u32,
    /// Bytes of the stack committed.
    stack_committed: usize,
    /// Bytes of the bitmap of slots in use committed.
    live_committed: usize,
}

struct Class {
    lock: Lock,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` and the class's stack are touched only with `lock` held.
unsafe impl Sync for Class {}

static CLASSES: [Class; LARGE_CLASSES] = [const {
    Class {
        lock: Lock::new(),
        inner: UnsafeCell::new(Inner {
            cut: 0,
            free: 0,
            dirty: 0,
            stack_committed: 0,
            live_committed: 0,
        }),
    }
}; LARGE_CLASSES];

const UNINIT: u8 = 0;
const READY: u8 = 1;
const FAILED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static BASE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());
static RESERVE: Lock = Lock::new();

/// The range's first byte, reserving it on first use; `None` if the system refused.
fn base() -> Option<*mut u8> {
    match STATE.load(Ordering::Acquire) {
        READY => return Some(BASE.load(Ordering::Relaxed)),
        FAILED => return None,
        _ => {}
    }
    reserve()
}

#[cold]
#[inline(never)]
fn reserve() -> Option<*mut u8> {
    // Before any thread can hold one of these locks, a fork must find the handlers.
    crate::FORK.register();
    let _held = RESERVE.lock();
    match STATE.load(Ordering::Acquire) {
        READY => return Some(BASE.load(Ordering::Relaxed)),
        FAILED => return None,
        _ => {}
    }
    let len = LARGE_CLASSES * PART;
    // Only within a quarter of an address-space limit, as the arena.
    let p = if crate::heap::address_budget() >= len {
        os::reserve(len, PART)
    } else {
        core::ptr::null_mut()
    };
    if p.is_null() {
        // Release: nothing is published with it; a thread that sees it stops trying.
        STATE.store(FAILED, Ordering::Release);
        return None;
    }
    // Relaxed: the ready state's release store publishes it.
    BASE.store(p, Ordering::Relaxed);
    STATE.store(READY, Ordering::Release);
    Some(p)
}

/// Where `p` lies in the range: its class and slot, or `None` outside it.
#[inline]
fn locate(p: *mut u8) -> Option<(usize, usize)> {
    if STATE.load(Ordering::Acquire) != READY {
        return None;
    }
    let off = p.addr().wrapping_sub(BASE.load(Ordering::Relaxed).addr());
    let i = off >> PART_BITS;
    if i >= LARGE_CLASSES {
        return None;
    }
    Some((i, (off & (PART - 1)) / class_size(i)))
}

/// Where `p`, a large block, lies: its class and slot.
fn located(p: *mut u8) -> (usize, usize) {
    match locate(p) {
        Some(at) => at,
        None => crate::fatal::fatal("internal check failed: a large block lies in the range"),
    }
}

/// Whether `p` is a large block (a slot of the range).
pub(crate) fn holds(p: *mut u8) -> bool {
    locate(p).is_some()
}

/// Whether `p`, inside the range ([`holds`]), is where a slot starts: the only
/// addresses of the range the allocator hands out. The C API's `free` checks it, since
/// a C caller may pass any address.
pub(crate) fn is_slot(p: *mut u8) -> bool {
    match (locate(p), base()) {
        (Some((i, k)), Some(b)) => k < capacity(i) && p == slot(b, i, k),
        _ => false,
    }
}

/// Slot `k` of class `i`.
fn slot(base: *mut u8, i: usize, k: usize) -> *mut u8 {
    base.wrapping_add((i << PART_BITS) + k * class_size(i))
}

/// The first entry of class `i`'s stack of free slots.
fn stack(base: *mut u8, i: usize) -> *mut u32 {
    base.wrapping_add((i << PART_BITS) + PART - STACK_BYTES)
        .cast()
}

/// The byte of class `i`'s bitmap of slots in use that holds slot `k`'s bit.
fn live_byte(base: *mut u8, i: usize, k: usize) -> *mut u8 {
    base.wrapping_add((i << PART_BITS) + PART - STACK_BYTES - LIVE_MAP_BYTES + k / 8)
}

/// A block of `size` bytes (a large size, or a small one whose region is full: then
/// the smallest large class) aligned to `align`, and whether its memory is known to be
/// zero. `None` when the request is not for this range (bigger than [`LARGE_TOP`],
/// aligned beyond a page), the range could not be reserved, the class's part is full,
/// or the system refuses memory; the caller then maps it on its own.
pub(crate) fn alloc(size: usize, align: usize) -> Option<(*mut u8, bool)> {
    if align > PAGE {
        return None;
    }
    let i = class_of(size.max(MAX_SMALL + 1))?;
    let base = base()?;
    let c = &CLASSES[i];
    let size = class_size(i);
    let _held = c.lock.lock();
    // SAFETY: the lock is held.
    let inner = unsafe { &mut *c.inner.get() };
    let (p, fresh) = if inner.free > 0 {
        inner.free -= 1;
        // SAFETY: entries below `free` are committed (the stack is committed for every
        // slot cut) and hold free slots' indices.
        let e = unsafe { stack(base, i).add(inner.free).read() };
        if e & DIRTY != 0 {
            inner.dirty -= 1;
        }
        let k = (e & !DIRTY) as usize;
        // SAFETY: the bitmap is committed for every slot cut.
        unsafe { *live_byte(base, i, k) |= 1 << (k % 8) };
        (slot(base, i, k), false)
    } else {
        if inner.cut >= capacity(i) {
            return None;
        }
        // Room on the stack for this slot when it is freed, and its bit, first.
        let need = (inner.cut + 1) * 4;
        if need > inner.stack_committed {
            let at = stack(base, i)
                .cast::<u8>()
                .wrapping_add(inner.stack_committed);
            if !os::commit(at, STACK_CHUNK) {
                return None;
            }
            inner.stack_committed += STACK_CHUNK;
        }
        if inner.cut / 8 + 1 > inner.live_committed {
            let at = live_byte(base, i, 0).wrapping_add(inner.live_committed);
            if !os::commit(at, STACK_CHUNK) {
                return None;
            }
            inner.live_committed += STACK_CHUNK;
        }
        let k = inner.cut;
        let p = slot(base, i, k);
        if !os::commit(p, size) {
            return None;
        }
        inner.cut += 1;
        // SAFETY: committed just above (or before) for this slot.
        unsafe { *live_byte(base, i, k) |= 1 << (k % 8) };
        crate::big::MAPPED_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        (p, true)
    };
    crate::big::LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
    crate::big::LIVE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    Some((p, fresh))
}

/// The bytes the large block at `p` may use in place: its class's size.
///
/// # Safety
/// `p` is a live large block ([`holds`]).
pub(crate) unsafe fn usable(p: *mut u8) -> usize {
    let (i, _) = located(p);
    class_size(i)
}

/// Gives back the pages of the large block at `p` past its first `keep` bytes (a
/// `realloc` that shrinks it in place); the slot stays the block's.
///
/// # Safety
/// `p` is a live large block and `keep <= usable(p)`; nothing uses its bytes past
/// `keep`.
pub(crate) unsafe fn shrink(p: *mut u8, keep: usize) {
    let (i, _) = located(p);
    let from = keep.max(1).next_multiple_of(PAGE);
    let size = class_size(i);
    if size - from.min(size) >= crate::big::TRIM_MIN {
        // SAFETY: whole pages of the block's slot past what it still uses.
        unsafe { os::release(p.wrapping_add(from), size - from) };
    }
}

/// Frees the large block at `p`: its slot goes on its class's stack, keeping its
/// memory if the class is small enough and fewer than [`DIRTY_MAX`] freed slots of it
/// do, else giving it back. A slot not in use (freed twice) stops the process with a
/// message.
///
/// # Safety
/// `p` is a large slot's start (`is_slot`), and nobody uses the block again.
pub(crate) unsafe fn free(p: *mut u8) {
    let (i, k) = located(p);
    debug_check!(
        p == slot(BASE.load(Ordering::Relaxed), i, k),
        "a large block is a slot's start"
    );
    let c = &CLASSES[i];
    let size = class_size(i);
    let base = BASE.load(Ordering::Relaxed);
    {
        let _held = c.lock.lock();
        // SAFETY: the lock is held.
        let inner = unsafe { &*c.inner.get() };
        // SAFETY: the bitmap is committed for every slot cut; an uncut slot is free.
        let live = k < inner.cut && unsafe { *live_byte(base, i, k) } & (1 << (k % 8)) != 0;
        if !live {
            crate::fatal::Message::new()
                .text("free(")
                .hex(p.addr())
                .text("): a block freed twice (or never allocated); aborting")
                .abort();
        }
        // SAFETY: as above.
        unsafe { *live_byte(base, i, k) &= !(1 << (k % 8)) };
    }
    crate::big::LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    crate::big::LIVE_BYTES.fetch_sub(size as u64, Ordering::Relaxed);
    let push = |entry: u32| {
        let _held = c.lock.lock();
        // SAFETY: the lock is held.
        let inner = unsafe { &mut *c.inner.get() };
        if entry & DIRTY != 0 {
            if inner.dirty >= DIRTY_MAX || size > DIRTY_SIZE_MAX {
                return false;
            }
            inner.dirty += 1;
        }
        // SAFETY: the stack is committed for every slot cut, and at most every slot cut
        // is free at once.
        unsafe { stack(base, i).add(inner.free).write(entry) };
        inner.free += 1;
        true
    };
    if push(k as u32 | DIRTY) {
        return;
    }
    // SAFETY: the whole slot, committed, which nobody uses.
    unsafe { os::release(p, size) };
    let pushed = push(k as u32);
    debug_check!(pushed, "a slot whose memory went back is taken");
}

/// This part's locks, for the fork handlers (see `crate::fork`): the reservation's and
/// every class's.
pub(crate) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    f(&RESERVE);
    for c in &CLASSES {
        f(&c.lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_large_size_gets_the_smallest_class_that_holds_it() {
        for i in 1..LARGE_CLASSES {
            assert!(class_size(i) > class_size(i - 1));
        }
        assert_eq!(class_of(MAX_SMALL), None);
        assert_eq!(class_of(LARGE_TOP + 1), None);
        for size in (MAX_SMALL + 1..=LARGE_TOP).step_by(4093) {
            let i = class_of(size).unwrap();
            assert!(class_size(i) >= size, "{size}");
            assert!(i == 0 || class_size(i - 1) < size, "{size}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    #[cfg_attr(
        handoff_global_alloc,
        ignore = "the test harness's threads allocate from the same range"
    )]
    fn a_freed_slot_is_reused_and_beyond_the_few_kept_gives_its_memory_back() {
        // A class the crate's other unit tests do not use: 3 MiB.
        let size = 3 << 20;
        let n = DIRTY_MAX as usize + 3;
        let blocks: Vec<*mut u8> = (0..n)
            .map(|k| {
                let (p, fresh) = alloc(size, 8).expect("the range has room");
                assert!(holds(p));
                assert_eq!(p.addr() % PAGE, 0);
                // SAFETY: usable holds the block's size; the block is ours.
                assert!(unsafe { usable(p) } >= size);
                if fresh {
                    // SAFETY: a fresh slot of `size` bytes, committed and unused.
                    let bytes = unsafe { core::slice::from_raw_parts(p, size) };
                    assert!(bytes.iter().step_by(4096).all(|&b| b == 0));
                }
                // SAFETY: as above.
                unsafe { p.write_bytes(k as u8 | 1, size) };
                p
            })
            .collect();
        let resident = |p: *mut u8| {
            let mut v = [0u8; 768];
            // SAFETY: a committed slot of 768 pages; one byte per page into `v`.
            assert_eq!(unsafe { libc::mincore(p.cast(), size, v.as_mut_ptr()) }, 0);
            v.iter().filter(|&&b| b & 1 != 0).count()
        };
        for &p in &blocks {
            // SAFETY: a live large block, freed once.
            unsafe { free(p) };
        }
        // The first freed beyond the kept few gave their pages back (other tests may
        // have left kept slots of their own classes, not of this one).
        let released = blocks.iter().filter(|&&p| resident(p) == 0).count();
        assert!(
            released >= n - DIRTY_MAX as usize,
            "{released} of {n} given back"
        );
        // The last freed comes back first.
        let (again, _) = alloc(size, 8).unwrap();
        assert_eq!(again, blocks[n - 1]);
        // SAFETY: a live large block, freed once.
        unsafe { free(again) };
    }
}
