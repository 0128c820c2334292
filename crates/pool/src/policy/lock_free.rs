//! [`LockFree`](super::LockFree): a Treiber stack of slot indices with a generation
//! in the head word (ABA-safe), links kept beside the slots as atomics.
//!
//! * The head is one `AtomicU64`: the top slot's index in the low 32 bits (`NIL` for
//!   none) and a generation in the high 32 bits, bumped by every successful swap. A
//!   thread that read the head, then slept while others popped that slot, popped more
//!   and pushed it back, finds a different generation and retries: the ABA case of
//!   the pool printed in the memory-patterns write-up, whose bare-pointer head would hand the second
//!   slot out twice. (A generation repeats after 2^32 changes; a thread would have
//!   to sleep through exactly a multiple of that between its read and its swap.)
//! * Each slot's link is an `AtomicU32` in a separate array, never in the slot: a
//!   popper that read a stale head loads the link of a slot that someone else may be
//!   writing an object into, and must not race with that write.
//! * Slots are numbered across blocks: block 0 holds `0..B`, block `k >= 1` holds
//!   `B·2^(k-1)..B·2^k` (B a power of two for growing pools), so an index finds its
//!   block with one leading-zero count, and 33 blocks cover the 2^31 slot limit.
//!   Blocks are added by one thread at a time (a flag, not a lock: poppers never
//!   wait for it, they retry the stack) and freed only with the store.

use core::cell::UnsafeCell;
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crossbeam_utils::CachePadded;

use super::{next_block, Store};
use crate::numa::Placement;
use crate::slab::Slab;
use crate::sync::Shadow;
use crate::sync::{relax, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::{ConfigError, PoolConfig};

const NIL: u32 = u32::MAX;

/// A block's slots and their links.
type Block<T> = (Slab<T>, Links);

/// A block's links, owned through a raw pointer (not a `Box`, whose moves would
/// claim unique access while other threads read the links).
struct Links(NonNull<[AtomicU32]>);

impl Links {
    /// Links for slots `start..start + n`: each to the next, the last to `NIL`.
    fn chain(start: usize, n: usize) -> Self {
        let b: Box<[AtomicU32]> = (0..n)
            .map(|j| {
                AtomicU32::new(if j + 1 < n {
                    (start + j + 1) as u32
                } else {
                    NIL
                })
            })
            .collect();
        Links(NonNull::from(Box::leak(b)))
    }

    fn first(&self) -> *mut AtomicU32 {
        self.0.as_ptr().cast()
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        // SAFETY: made by `Box::leak` in `chain`, freed once, here, when the store
        // (the only owner) is dropped.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}
const BLOCKS: usize = 33;

/// The [`LockFree`](super::LockFree) store.
pub struct LockFreeStore<T> {
    /// Generation (high 32 bits) and top slot index (low 32 bits).
    head: CachePadded<AtomicU64>,
    /// Block `k`'s slots and links. Each entry is stored once, before any index of
    /// its block is published through `head`, and read by whoever holds such an index.
    values: [AtomicPtr<T>; BLOCKS],
    links: [AtomicPtr<AtomicU32>; BLOCKS],
    /// Slots of block 0 (a power of two if the pool grows).
    first: usize,
    /// log2(first) for a growing pool.
    shift: u32,
    grows: bool,
    placement: Placement,
    total: AtomicUsize,
    /// Set while one thread adds a block.
    growing: AtomicBool,
    /// The blocks' memory, touched only by the thread that holds `growing`, and by
    /// `Drop`.
    owned: UnsafeCell<Vec<Block<T>>>,
    /// Ownership marks of block 0's slots (loom only).
    shadow: Shadow,
}

// SAFETY: slot hand-over between threads is ordered by the release/acquire swaps of
// `head`; `owned` is reached only under the `growing` flag or through `&mut`; a `T`
// moves between threads only through the handles, which require `T: Send`.
unsafe impl<T: Send> Send for LockFreeStore<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for LockFreeStore<T> {}

#[inline]
fn pack(generation: u64, index: u32) -> u64 {
    (generation << 32) | u64::from(index)
}

impl<T> LockFreeStore<T> {
    /// Block and offset of slot `i`.
    #[inline(always)]
    fn locate(&self, i: u32) -> (usize, usize) {
        let i = i as usize;
        if i < self.first {
            (0, i)
        } else {
            let top = usize::BITS - 1 - i.leading_zeros();
            ((top - self.shift + 1) as usize, i - (1 << top))
        }
    }

    #[inline(always)]
    fn link(&self, i: u32) -> &AtomicU32 {
        let (b, o) = self.locate(i);
        let links = self.links[b].load(Ordering::Acquire);
        // SAFETY: `i` was published through `head` (or is held by the caller), so
        // block `b` exists, its entry was stored before, and `o` is inside it; the
        // links live until the store is dropped.
        unsafe { &*links.add(o) }
    }

    #[inline(always)]
    fn slot(&self, i: u32) -> NonNull<T> {
        let (b, o) = self.locate(i);
        let base = self.values[b].load(Ordering::Acquire);
        // SAFETY: as in `link`; `base` is the non-null start of block `b`'s slab.
        unsafe { NonNull::new_unchecked(base.add(o)) }
    }

    /// Pops the top slot, or `None` if the stack is empty.
    #[inline(always)]
    fn take(&self) -> Option<(NonNull<T>, u32)> {
        let mut head = self.head.load(Ordering::Acquire);
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            let top = head as u32;
            if top == NIL {
                return None;
            }
            // May be stale (another thread took `top` since): then `head` has
            // changed, its generation with it, and the swap fails.
            let next = self.link(top).load(Ordering::Relaxed);
            // Acquire on success: the releasing thread's last accesses to the slot (and
            // its link store) happen before ours; a successful swap continues the
            // release sequence of the `put` it read from, so later takers synchronise
            // with that `put` too. Acquire on failure: `now` becomes the next `head`
            // we read links from.
            match self.head.compare_exchange_weak(
                head,
                pack((head >> 32).wrapping_add(1), next),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if (top as usize) < self.first {
                        self.shadow.touch(top as usize);
                    }
                    return Some((self.slot(top), top));
                }
                Err(mut now) => {
                    // A weak swap may fail spuriously: count only a changed head.
                    if (now ^ head) >> 32 != 0 {
                        super::contention::failed_swap();
                        backoff.spin();
                        now = self.head.load(Ordering::Acquire);
                    }
                    head = now;
                }
            }
        }
    }

    /// Pushes the chain `first -> ... -> last` (already linked) onto the stack.
    #[inline(always)]
    fn put(&self, first: u32, last: u32) {
        let mut head = self.head.load(Ordering::Relaxed);
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            // Relaxed: the swap below releases it with the chain.
            self.link(last).store(head as u32, Ordering::Relaxed);
            // Release on success: our accesses to the chain's slots and its links happen
            // before the acquire of whoever takes them. Relaxed on failure: we only
            // retry with the new head, reading nothing through it.
            match self.head.compare_exchange_weak(
                head,
                pack((head >> 32).wrapping_add(1), first),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(mut now) => {
                    if (now ^ head) >> 32 != 0 {
                        super::contention::failed_swap();
                        backoff.spin();
                        now = self.head.load(Ordering::Relaxed);
                    }
                    head = now;
                }
            }
        }
    }

    /// The stack is empty: add a block, or wait for the thread that is adding one.
    #[cold]
    #[inline(never)]
    fn grow_pop(&self) -> Option<(NonNull<T>, u32)> {
        if !self.grows {
            return None;
        }
        loop {
            // A flag used as a lock: acquire when taken, release when given back, so
            // one grower's `owned` and `total` happen before the next one's.
            if self
                .growing
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                let got = self.grow();
                self.growing.store(false, Ordering::Release);
                return got;
            }
            relax();
            if let Some(s) = self.take() {
                return Some(s);
            }
        }
    }

    /// Adds a block; the caller holds `growing`.
    fn grow(&self) -> Option<(NonNull<T>, u32)> {
        // Another thread may have added one while this one waited for the flag.
        if let Some(s) = self.take() {
            return Some(s);
        }
        let total = self.total.load(Ordering::Relaxed);
        let n = next_block(total)?;
        let slab = Slab::placed(n, self.placement).ok()?;
        // SAFETY: the caller holds `growing`, the only other way to `owned`.
        let owned = unsafe { &mut *self.owned.get() };
        let b = owned.len();
        let links = Links::chain(total, n);
        // Release: the block's memory and links are initialised before any thread that
        // acquire-loads these entries (`slot`, `link`) uses them. (Such a thread also
        // learnt of the slot through `head`, released by `put` below.)
        self.values[b].store(slab.base().as_ptr(), Ordering::Release);
        self.links[b].store(links.first(), Ordering::Release);
        owned.push((slab, links));
        // Relaxed: read by the next grower under `growing` (which orders it) and by
        // `capacity`, a figure for statistics.
        self.total.store(total + n, Ordering::Relaxed);
        // The caller gets the first slot; the rest go on the stack as one chain.
        if n > 1 {
            self.put(total as u32 + 1, (total + n - 1) as u32);
        }
        Some((self.slot(total as u32), total as u32))
    }
}

// SAFETY: a slot leaves the stack only through a successful swap of `head` that
// removes it (generation-checked, so never twice for one push), and blocks are
// freed only when the store is dropped.
unsafe impl<T> Store<T> for LockFreeStore<T> {
    type Token = u32;

    fn new(config: &PoolConfig) -> Result<Self, ConfigError> {
        config.check_magazine()?;
        let (capacity, placement) = (config.capacity, config.placement);
        let (first, grows) = capacity.first_block::<T>()?;
        let slab = Slab::<T>::placed(first, placement)?;
        let links = Links::chain(0, first);
        let values: [AtomicPtr<T>; BLOCKS] =
            core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut()));
        let link_table: [AtomicPtr<AtomicU32>; BLOCKS] =
            core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut()));
        // Relaxed: the store is not shared yet; whatever shares it later orders this.
        values[0].store(slab.base().as_ptr(), Ordering::Relaxed);
        link_table[0].store(links.first(), Ordering::Relaxed);
        let owned = alloc::vec![(slab, links)];
        Ok(LockFreeStore {
            head: CachePadded::new(AtomicU64::new(pack(0, 0))),
            values,
            links: link_table,
            first,
            shift: first.trailing_zeros(),
            grows,
            placement,
            total: AtomicUsize::new(first),
            growing: AtomicBool::new(false),
            owned: UnsafeCell::new(owned),
            shadow: Shadow::new(first),
        })
    }

    #[inline(always)]
    fn pop(&self) -> Option<(NonNull<T>, u32)> {
        match self.take() {
            Some(s) => Some(s),
            None => self.grow_pop(),
        }
    }

    #[inline(always)]
    unsafe fn push(&self, _slot: NonNull<T>, index: u32) {
        if (index as usize) < self.first {
            self.shadow.touch(index as usize);
        }
        self.put(index, index);
    }

    fn capacity(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }
}
