//! When memory goes back to the operating system: the policy, in one place.
//!
//! A heap's free blocks stay resident while a thread owns the heap: the thread will
//! probably allocate them again, and a block given back costs a page fault (and a page
//! of zeros) when it is used next. When the thread exits, its heap keeps its free blocks
//! for whoever needs them next (a new thread that claims the heap, or a thread of
//! another heap that runs out of a class and borrows them), but not their memory:
//! [`Heap::retire`] gathers every free block of each class (the magazine's, the
//! depot's, and those other threads returned) into the class's depot, sorts the depot
//! so that the next owner gets them in address order, and gives back with
//! `MADV_DONTNEED` every whole page that only free blocks cover, and the committed
//! pages past the last block ever cut. The address space stays committed: a block
//! given back reads as zeros when it is next used, and costs a page fault then.
//!
//! So a program whose threads come and go holds, beyond its live blocks, the free
//! stock of its live threads (each at most what it once used), the blocks freed to an
//! exited thread's heap since it exited (until a thread takes them), and the parts of
//! pages shared with live blocks. `Stats::released_bytes` counts what went back.
//!
//! Until issue 48 an exited heap kept all of its memory resident, and a class whose
//! blocks were all free was forgotten (cut again from its region's start); waves of
//! short-lived threads then grew the process by a few MiB per wave, without bound.

use crate::class::{class_size, NUM_CLASSES};
use crate::heap::{add, decode, Heap};
use crate::os;
use crate::remote::{next, set_next};
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes of arena memory given back to the system so far.
pub(crate) static RELEASED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes of free blocks a heap keeps resident when its thread exits, the smallest
/// classes' lowest blocks first: a short-lived thread that claims it next finds them
/// without a page fault.
const KEEP: usize = 256 << 10;
/// `madvise` calls that gave them back.
pub(crate) static RELEASE_CALLS: AtomicU64 = AtomicU64::new(0);

/// Blocks at least this big that a thread frees to a heap nobody owns give back their
/// whole pages past the first at once ([`on_remote_free`]).
const RELEASE_REMOTE_MIN: usize = 4 * os::PAGE;

/// Called for `p`, a block of class `c` owned by heap `owner`, freed by another thread
/// before it goes into an outbox: when nobody owns `owner` (its thread exited) and the
/// block spans several pages, its whole pages past the first go back to the system
/// now. Nobody will use the block before a thread takes it from that heap, and a
/// freeing thread may return many such blocks to heaps whose threads are gone (a
/// long-lived thread freeing what short-lived ones made). The first page keeps the
/// word that links the block into its chain.
///
/// # Safety
/// `p` is a free block of class `c` that only the calling thread can reach.
#[inline]
pub(crate) unsafe fn on_remote_free(owner: usize, c: usize, p: *mut u8) {
    let size = class_size(c);
    if size < RELEASE_REMOTE_MIN || crate::heap::HEAP[owner].is_owned() {
        return;
    }
    let from = (p.addr() & !(os::PAGE - 1)) + os::PAGE;
    let to = (p.addr() + size) & !(os::PAGE - 1);
    if to > from {
        // SAFETY: whole pages inside a free block only this thread can reach, past
        // the page that holds its link word; committed arena memory.
        unsafe { os::release(p.wrapping_add(from - p.addr()), to - from) };
        // Relaxed: figures for statistics.
        RELEASED_BYTES.fetch_add((to - from) as u64, Ordering::Relaxed);
        RELEASE_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

impl Heap {
    /// Puts `p`, a free block of this heap's class `c` held nowhere else, into the
    /// class's depot (onto its overflow list if the depot cannot grow).
    ///
    /// # Safety
    /// The caller owns this heap and the arena is reserved; `p` is a free block of this
    /// heap in class `c`, in no magazine, depot, list or chain.
    unsafe fn stash(&self, c: usize, p: *mut u8) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and the list.
        unsafe {
            let len = &mut *bin.depot_len.get();
            if self.depot_room(c, *len + 1) {
                // A block's offset in its region is below the region's size, <= 2^32.
                let offset = (p.addr() - self.region_start(c).addr()) as u32;
                self.depot(c).add(*len).write(offset);
                *len += 1;
            } else {
                let overflow = &mut *bin.overflow.get();
                set_next(p, *overflow);
                *overflow = p;
            }
        }
        add(&bin.listed, 1);
    }

    /// Gathers every free block of class `c` this heap holds into its depot (blocks
    /// of other heaps it holds go back to their owners through the outboxes), sorts
    /// the depot, and gives back the pages only free blocks cover. Called when the
    /// heap's thread exits.
    ///
    /// # Safety
    /// The caller owns this heap, the arena is reserved, and no reference into the
    /// class's magazine or bin is alive. The caller flushes the outboxes afterwards.
    pub(crate) unsafe fn retire(&self, c: usize, keep: &mut usize) {
        let mag = &self.mags[c];
        let bin = &self.bins[c];
        let me = self.index();
        // The magazine's blocks first.
        let n = mag.count.load(Ordering::Relaxed) as usize;
        for k in 0..n {
            // SAFETY: the owner alone touches the magazine; slots below the count hold
            // free blocks of this class and heap.
            let p = unsafe { (*mag.slots.get())[k] };
            // SAFETY: as above; the block leaves the magazine just below.
            unsafe { self.stash(c, p) };
        }
        // Relaxed: as in `Mag::pop`.
        mag.count.store(0, Ordering::Relaxed);
        add(&bin.to_depot, n as u64);
        // Then the blocks other threads returned: taken into the inbox, and still on
        // the remote stack. The inbox may hold blocks borrowed from another heap.
        // SAFETY: the owner alone touches the inbox.
        let inbox = unsafe { core::mem::replace(&mut *bin.inbox.get(), core::ptr::null_mut()) };
        for first in [inbox, self.remote[c].take_all()] {
            let mut p = first;
            while !p.is_null() {
                // SAFETY: a chain of free blocks linked through their first words,
                // which only this thread can reach (the acquire in `take_all`, or this
                // heap's own inbox, made the links visible).
                let after = unsafe { next(p) };
                match decode(p) {
                    Some((owner, class)) if owner == me => {
                        debug_assert_eq!(class, c);
                        // SAFETY: a free block of this heap and class, off every chain.
                        unsafe { self.stash(c, p) };
                        add(&bin.reclaimed, 1);
                    }
                    Some((owner, class)) => {
                        debug_assert_eq!(class, c);
                        // A borrowed block, counted as in flight since it was borrowed:
                        // back to its owner without counting it again.
                        // SAFETY: the caller owns this heap; `p` is `owner`'s, free.
                        unsafe { self.forward(owner, class, p) };
                    }
                    None => unreachable!("a block outside the arena on a remote chain"),
                }
                p = after;
            }
        }
        // SAFETY: the caller owns the heap; nothing else refers into the depot.
        unsafe { self.sort_and_release(c, keep) };
    }

    /// Sorts class `c`'s depot so that allocations take its blocks in address order,
    /// and gives back to the system every whole page that only its free blocks cover,
    /// and the committed pages past the last block cut.
    ///
    /// # Safety
    /// The caller owns this heap and no reference into the class's bin is alive.
    unsafe fn sort_and_release(&self, c: usize, keep: &mut usize) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and the bump pointers.
        let (len, bump, end) = unsafe { (*bin.depot_len.get(), *bin.bump.get(), *bin.end.get()) };
        if bump.is_null() {
            return; // the class was never used
        }
        let start = self.region_start(c);
        // SAFETY: the owner alone touches the depot's counters.
        let settled = unsafe { &mut *bin.depot_settled.get() };
        // Entries below `settled` are where the last release left them (sorted, their
        // whole pages given back or kept): only those above are new.
        // SAFETY: entries below the depot's length are committed, initialised, and only
        // this thread touches them; the slice lives only in this function.
        let depot =
            unsafe { core::slice::from_raw_parts_mut(self.depot(c).add(*settled), len - *settled) };
        *settled = len;
        // Largest first: `refill` takes from the end, and the magazine hands out the
        // last it took first, so blocks leave in ascending address order (the new ones
        // first, then the settled ones, each part in order). In place: no allocation.
        depot.sort_unstable_by(|a, b| b.cmp(a));
        let size = class_size(c);
        let released = |lo: usize, hi: usize, keep: &mut usize| {
            // The lowest free blocks stay resident while the heap's allowance lasts.
            let kept = (*keep).min(hi.saturating_sub(lo));
            *keep -= kept;
            let lo = lo + kept;
            let from = start.addr().wrapping_add(lo).next_multiple_of(os::PAGE);
            let to = (start.addr().wrapping_add(hi)) & !(os::PAGE - 1);
            if to > from {
                // SAFETY: page-aligned, committed arena memory covered only by free
                // blocks of this heap's class (or never cut), which no thread reads:
                // this thread owns the heap, and its free blocks hold nothing.
                unsafe { os::release(start.wrapping_add(from - start.addr()), to - from) };
                // Relaxed: figures for statistics.
                RELEASED_BYTES.fetch_add((to - from) as u64, Ordering::Relaxed);
                RELEASE_CALLS.fetch_add(1, Ordering::Relaxed);
            }
        };
        // Runs of free blocks that lie end to end, ascending.
        let mut run: Option<(usize, usize)> = None;
        for &offset in depot.iter().rev() {
            let offset = offset as usize;
            run = match run {
                Some((lo, hi)) if hi == offset => Some((lo, hi + size)),
                Some((lo, hi)) => {
                    released(lo, hi, keep);
                    Some((offset, offset + size))
                }
                None => Some((offset, offset + size)),
            };
        }
        // The committed memory past the last block cut holds no block.
        let (cut, committed) = (bump.addr() - start.addr(), end.addr() - start.addr());
        if let Some((lo, hi)) = run {
            released(lo, hi, keep);
        }
        // SAFETY: the owner alone touches the bump pointers.
        let tail = unsafe { &mut *bin.tail_released.get() };
        if *tail != end {
            released(cut, committed, &mut 0);
            *tail = end;
        }
    }

    /// [`retire`](Self::retire) for every class.
    ///
    /// # Safety
    /// As for [`retire`](Self::retire).
    pub(crate) unsafe fn retire_all(&self) {
        let mut keep = KEEP;
        for c in 0..NUM_CLASSES {
            // SAFETY: the caller's contract.
            unsafe { self.retire(c, &mut keep) };
        }
    }
}
