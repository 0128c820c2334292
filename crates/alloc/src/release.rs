//! When memory goes back to the operating system: the policy, in one place.
//!
//! A thread keeps resident the free blocks it keeps using: a block given back costs a
//! page fault (and a page of zeros) when it is used next. Once per purge delay at most
//! (250 ms by default, never with purging off: [`crate::set_purge_delay`]; looked at
//! every [`PURGE_TICKS`] slow-path calls) the owner of a heap
//! takes the blocks other threads returned to it into its depots and gives back the
//! pages of depot entries it has not taken since the last such look ([`Heap::purge`]);
//! refills take returned blocks before the depot's, so stock beyond what the thread
//! needs sinks to the bottom of the depot and goes stale. (`trim` gives everything
//! back on demand.) When the thread exits ([`Heap::retire`]), every free block of each
//! class (the magazine's, the depot's, and those other threads returned) is gathered
//! into the class's depot, whose new entries are sorted so that the next owner gets
//! them in address order; the pages of the blocks other threads returned go back at
//! once (`MADV_DONTNEED`), and so do the committed pages past the last block ever cut,
//! and depot entries no owner has taken for [`DECAY_NS`]. The blocks the thread freed
//! itself keep their memory: a thread that starts next usually claims the same heap
//! and uses them. Once the heap has stayed unclaimed for [`DECAY_NS`], the next thread
//! that starts or exits gives back every whole page only its free blocks cover, beyond
//! [`KEEP`] ([`release_idle`]); blocks other threads return to it later mark it again
//! ([`note_returned`]), so theirs go back a second after they came. The address space
//! stays committed: a block given back reads as zeros when it is next used. (A refill
//! moves at most 64 KiB of blocks into a magazine, `heap::REFILL_BYTES`: what a thread
//! holds in its magazines is stock it keeps using, which no purge sees.)
//!
//! A block of [`RELEASE_REMOTE_MIN`] or more that a thread frees to a heap nobody owns
//! gives back its pages past the first at once ([`on_remote_free`]).
//!
//! In earlier versions an exited heap kept all of its memory resident, and a class whose
//! blocks were all free was forgotten (cut again from its region's start); waves of
//! short-lived threads then grew the process by a few MiB per wave, without bound.
//! Until its second round a live thread kept every free block for as long as it lived.
//! Until its third round a heap whose idle memory had gone back kept what was returned
//! to it afterwards until a thread claimed it again: with threads that come and go, the
//! heaps claimed only when more threads than usual were alive at once kept 0.2-1 MiB
//! each, and more such heaps were touched as the waves went on.

use crate::class::HEAPS;
use crate::class::{class_size, NUM_CLASSES};
use crate::heap::{add, decode, next_checked, Heap, HEAP};
use crate::os;
use crate::remote::set_next;
use core::sync::atomic::{AtomicU64, Ordering};

/// Times a live thread's heap ran [`Heap::purge`].
pub(crate) static PURGES: AtomicU64 = AtomicU64::new(0);
/// Bytes of arena memory given back to the system so far.
pub(crate) static RELEASED_BYTES: AtomicU64 = AtomicU64::new(0);
/// `madvise` calls that gave them back.
pub(crate) static RELEASE_CALLS: AtomicU64 = AtomicU64::new(0);
/// Bytes of free blocks a heap keeps resident each time its free memory is given back
/// (a purge, stale stock at exit, an idle heap, `trim`), the smallest classes' lowest
/// blocks first: the thread that uses it next finds them without a page fault. (256 KiB
/// in earlier versions: with a heap per thread alive at once, that was most of
/// what heaps nobody used kept.)
const KEEP: usize = 64 << 10;

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
    // SAFETY: the caller's contract; the first 8 bytes will hold the chain's link.
    unsafe { release_pages_within(p, 8, size) };
}

/// Gives back every whole page inside `[base + lo, base + hi)`, and counts it.
///
/// # Safety
/// The range is committed arena memory whose contents nobody needs and that no other
/// thread can reach (free blocks, or memory past every block cut, of a heap the caller
/// owns, a block only it holds, or spare blocks it has set aside).
pub(crate) unsafe fn release_pages_within(base: *mut u8, lo: usize, hi: usize) {
    let from = base.addr().wrapping_add(lo).next_multiple_of(os::PAGE);
    let to = base.addr().wrapping_add(hi) & !(os::PAGE - 1);
    if to > from {
        // SAFETY: whole pages inside the caller's range.
        unsafe { os::release(base.wrapping_add(from - base.addr()), to - from) };
        // Relaxed: figures for statistics.
        RELEASED_BYTES.fetch_add((to - from) as u64, Ordering::Relaxed);
        RELEASE_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// How long a heap nobody owns keeps its free blocks' memory before [`release_idle`]
/// gives it back.
pub(crate) const DECAY_NS: u64 = 1_000_000_000;
// How often, at most, a thread that keeps allocating looks at its heap's free stock
// ([`Heap::purge`]), and how long a depot entry it has not taken keeps its memory, is
// the purge delay (`crate::settings`: `set_purge_delay`, `HANDOFF_ALLOC_PURGE_DELAY_MS`),
// 250 ms by default. (A second, with half a second's staleness, in earlier versions:
// the long-lived thread of tests/thread_waves.rs then still held the stock of a wave
// whose workers had run late a second or two later, so the growth measured after the
// last wave reached 27 and 37 MiB in two of ten release runs with 100 workers a wave.)

/// Slow-path calls (magazine refills and spills) between two looks at the clock. A
/// thread that allocates the blocks other threads return to it calls `refill` once per
/// allocation, so a look (a clock read, about 20 ns) every 256 calls costs it about
/// 0.1 ns per allocation. (With 64, `alloc_paired`'s pair across threads ran at
/// 7.4-8.0x glibc's against 8.1-8.8x for the code before the purge, in one alternated
/// set of three; with 2048, 7.4-8.0x against 7.4-8.3x; with 256, 7.8-8.0x against
/// 8.0-8.5x.)
const PURGE_TICKS: u32 = 256;

/// Heaps given up whose free blocks still have their memory: bit `h % 64` of word
/// `h / 64`. Set by [`Heap::give_up`], cleared by the thread that claims the heap (it
/// will use the memory) or by [`release_idle`].
static PENDING: [AtomicU64; HEAPS / 64] = [const { AtomicU64::new(0) }; HEAPS / 64];
/// When each heap was last given up (`CLOCK_MONOTONIC_COARSE`, nanoseconds).
static RETIRED_AT: [AtomicU64; HEAPS] = [const { AtomicU64::new(0) }; HEAPS];

/// The coarse monotonic clock, in nanoseconds (a read of the vDSO's copy, no system
/// call on Linux).
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes the struct it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Heap `h` has just been given up with its free blocks' memory: [`release_idle`] gives
/// it back once the heap has stayed unclaimed for [`DECAY_NS`].
pub(crate) fn note_given_up(h: usize) {
    // Relaxed: hints. A thread that acts on them takes the heap with an acquire
    // compare-and-swap before it touches anything of it.
    RETIRED_AT[h].store(now_ns(), Ordering::Relaxed);
    PENDING[h / 64].fetch_or(1 << (h % 64), Ordering::Relaxed);
}

/// Blocks were returned to heap `h`, which nobody owns: unless it is marked already,
/// its memory goes back once it has stayed unclaimed for [`DECAY_NS`] from now. (A
/// heap whose idle memory went back already would otherwise keep what a long-lived
/// thread returns to it later for as long as nobody claims it: with threads that come
/// and go, heaps claimed only when more threads than usual were alive at once.)
pub(crate) fn note_returned(h: usize) {
    let bit = 1 << (h % 64);
    if PENDING[h / 64].load(Ordering::Relaxed) & bit == 0 {
        // Relaxed: hints, as in `note_given_up`.
        RETIRED_AT[h].store(now_ns(), Ordering::Relaxed);
        PENDING[h / 64].fetch_or(bit, Ordering::Relaxed);
    }
}

/// Heap `h` has just been claimed by a thread, which will use its memory.
pub(crate) fn note_claimed(h: usize) {
    if PENDING[h / 64].load(Ordering::Relaxed) & (1 << (h % 64)) != 0 {
        // Relaxed: a hint, as in `note_given_up`.
        PENDING[h / 64].fetch_and(!(1 << (h % 64)), Ordering::Relaxed);
    }
}

/// Gives back the memory of the spare blocks nobody has taken for `age` (see
/// `heap::release_stale_spares`) and of the free blocks of every heap nobody has owned
/// for at least `age` nanoseconds ([`DECAY_NS`] when threads start and exit; 0 for
/// [`trim`](crate::trim)), but [`KEEP`] bytes each: each such heap is taken for a
/// moment (skipped if another thread holds it), its depots sorted, the whole pages
/// only free blocks cover and its committed pages past the last block cut given back.
/// Returns how many heaps it went through.
pub(crate) fn release_idle(age: u64) -> usize {
    let mut done = 0;
    let now = now_ns();
    // The spare blocks nobody took meanwhile give their pages back too.
    crate::heap::release_stale_spares(now, age);
    for (word, bits) in PENDING.iter().enumerate() {
        let mut bits = bits.load(Ordering::Relaxed);
        while bits != 0 {
            let h = word * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if now.wrapping_sub(RETIRED_AT[h].load(Ordering::Relaxed)) < age {
                continue;
            }
            let heap = &HEAP[h];
            if !heap.try_take() {
                continue; // claimed (or held by a borrower) meanwhile
            }
            PENDING[word].fetch_and(!(1 << (h % 64)), Ordering::Relaxed);
            // SAFETY: this thread took the heap from nobody; the arena is reserved
            // (the heap was owned once); its outboxes are empty (flushed when its
            // thread gave it up).
            unsafe {
                for c in 0..NUM_CLASSES {
                    heap.gather_returned(c, true);
                }
                heap.flush_outboxes();
                heap.release_all();
                heap.hand_back();
            }
            done += 1;
        }
    }
    done
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
    /// of other heaps it holds go back to their owners through the outboxes), gives
    /// back the pages of the blocks other threads returned and of the committed memory
    /// past the last block cut, and sorts the depot's new entries. Called when the
    /// heap's thread exits, and by `trim`.
    ///
    /// # Safety
    /// The caller owns this heap, the arena is reserved, and no reference into the
    /// class's magazine or bin is alive. The caller flushes the outboxes afterwards.
    pub(crate) unsafe fn retire(&self, c: usize, now: u64, keep: &mut usize) {
        let mag = &self.mags[c];
        let bin = &self.bins[c];
        // The magazine's blocks first.
        let n = mag.count.load(Ordering::Relaxed) as usize;
        for k in 0..n {
            // SAFETY: the owner alone touches the magazine; slots below the count hold
            // free blocks of this class and heap.
            let p = unsafe { mag.held()[k] };
            // SAFETY: as above; the block leaves the magazine just below.
            unsafe { self.stash(c, p) };
        }
        // Relaxed: as in `Mag::pop`.
        mag.count.store(0, Ordering::Relaxed);
        add(&bin.to_depot, n as u64);
        // Then the blocks other threads returned; their whole pages go back now.
        // SAFETY: the caller owns the heap and flushes the outboxes afterwards.
        unsafe { self.gather_returned(c, true) };
        // SAFETY: the caller owns the heap; nothing else refers into the depot.
        unsafe {
            self.sort_new(c);
            self.release_stale(c, now, DECAY_NS, keep);
            self.release_tail(c);
        }
    }

    /// Takes the blocks other threads returned to class `c` (its inbox, and its remote
    /// stack) into its depot; with `release_now`, gives back their whole pages first.
    /// Blocks borrowed from another heap go back to their owner through the outboxes.
    ///
    /// # Safety
    /// The caller owns this heap, the arena is reserved, and no reference into the
    /// class's bin is alive. The caller flushes the outboxes afterwards.
    unsafe fn gather_returned(&self, c: usize, release_now: bool) {
        let bin = &self.bins[c];
        let me = self.index();
        // The inbox may hold blocks borrowed from another heap.
        // SAFETY: the owner alone touches the inbox.
        let inbox = unsafe { core::mem::replace(&mut *bin.inbox.get(), core::ptr::null_mut()) };
        for first in [inbox, self.remote[c].take_all()] {
            let mut p = first;
            while !p.is_null() {
                // SAFETY: a chain of free blocks of class `c` linked through their
                // first words, which only this thread can reach (the acquire in
                // `take_all`, or this heap's own inbox, made the links visible); `p`
                // is checked to be one before its link is read.
                let after = unsafe { next_checked(p, c) };
                match decode(p) {
                    Some((owner, _)) if owner == me => {
                        if release_now {
                            // The link was read above; nothing in the block is needed.
                            // SAFETY: a free block of this class that only this thread
                            // can reach.
                            unsafe { release_pages_within(p, 0, class_size(c)) };
                        }
                        // SAFETY: a free block of this heap and class, off every chain.
                        unsafe { self.stash(c, p) };
                        add(&bin.reclaimed, 1);
                    }
                    Some((owner, class)) => {
                        // A borrowed block, counted as in flight since it was borrowed:
                        // back to its owner without counting it again.
                        // SAFETY: the caller owns this heap; `p` is `owner`'s, free.
                        unsafe { self.forward(owner, class, p) };
                    }
                    // `next_checked` stopped the process for an address outside the
                    // arena.
                    None => {}
                }
                p = after;
            }
        }
    }

    /// Counts a slow-path call of the owner (a magazine refill or spill); every
    /// [`PURGE_TICKS`] of them, looks whether [`purge`](Self::purge) is due.
    ///
    /// # Safety
    /// The caller owns this heap, the arena is reserved, and no reference into its bins
    /// or outboxes is alive.
    #[inline]
    pub(crate) unsafe fn tick(&self) {
        // SAFETY: the owner alone touches the counter.
        let left = unsafe { &mut *self.purge_tick.get() };
        if *left > 0 {
            *left -= 1;
            return;
        }
        *left = PURGE_TICKS;
        // SAFETY: the caller's contract.
        unsafe { self.purge() };
    }

    /// Once per purge delay at most, for the thread that owns this heap: takes the
    /// blocks other threads returned into the depots, and gives back the pages of depot
    /// entries the thread has not taken for at least that long (beyond [`KEEP`]).
    ///
    /// # Safety
    /// As for [`tick`](Self::tick).
    #[cold]
    #[inline(never)]
    unsafe fn purge(&self) {
        let delay = crate::settings::purge_delay_ns();
        // Purging off (`set_purge_delay(None)`): the look still comes at the default
        // cadence, to take the blocks other threads returned and send this thread's
        // remote frees on (no system call), but gives no memory back.
        let off = delay == u64::MAX;
        let cadence = if off {
            crate::settings::DEFAULT_PURGE_DELAY.as_nanos() as u64
        } else {
            delay
        };
        let now = now_ns();
        // SAFETY: the owner alone touches the time.
        let at = unsafe { &mut *self.purged_at.get() };
        if now.wrapping_sub(*at) < cadence {
            return;
        }
        *at = now;
        let mut keep = KEEP;
        for c in 0..NUM_CLASSES {
            // SAFETY: the caller owns the heap; no reference into the bin is alive.
            unsafe {
                self.gather_returned(c, false);
                if !off {
                    self.release_stale(c, now, delay, &mut keep);
                }
            }
        }
        // SAFETY: the caller owns the heap (borrowed blocks may have been forwarded).
        unsafe { self.flush_outboxes() };
        if off {
            return;
        }
        // And the spare blocks nobody took, in a program whose threads stopped exiting
        // (not by the shared heap's thread, which holds that heap's lock: the
        // allocator's locks are never nested).
        if self.index() != 0 {
            crate::heap::release_stale_spares(now, DECAY_NS);
        }
        // Relaxed: a figure for statistics.
        PURGES.fetch_add(1, Ordering::Relaxed);
    }

    /// Gives back the pages of class `c`'s depot entries that no owner has taken for
    /// `age` (those below `depot_settled`, unmoved since `settled_since`) and that were
    /// not given back already, beyond what `keep` still allows; then starts a new
    /// period. Nothing when the period is younger than `age`. A heap whose owners use
    /// all of its stock gives nothing back here.
    ///
    /// # Safety
    /// The caller owns this heap and no reference into the class's bin is alive.
    unsafe fn release_stale(&self, c: usize, now: u64, age: u64, keep: &mut usize) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot's counters.
        let (len, settled, since, released) = unsafe {
            (
                *bin.depot_len.get(),
                &mut *bin.depot_settled.get(),
                &mut *bin.settled_since.get(),
                &mut *bin.depot_released.get(),
            )
        };
        if now.wrapping_sub(*since) < age {
            return;
        }
        if *settled > *released {
            // SAFETY: entries below the depot's length are committed, initialised, and
            // only this thread touches them; the slice lives only in this call.
            let stale = unsafe {
                core::slice::from_raw_parts_mut(self.depot(c).add(*released), *settled - *released)
            };
            // SAFETY: the caller owns the heap.
            unsafe { self.release_runs(c, stale, keep) };
            *released = *settled;
        }
        *settled = len;
        *since = now;
    }

    /// Sorts the entries class `c`'s depot gained since it was last sorted, so that
    /// allocations take them in address order (then the older ones, in order too).
    ///
    /// # Safety
    /// The caller owns this heap and no reference into the class's bin is alive.
    unsafe fn sort_new(&self, c: usize) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and its counters.
        let (len, settled) = unsafe { (*bin.depot_len.get(), *bin.depot_settled.get()) };
        // SAFETY: entries below the depot's length are committed, initialised, and only
        // this thread touches them; the slice lives only in this function.
        let new =
            unsafe { core::slice::from_raw_parts_mut(self.depot(c).add(settled), len - settled) };
        // Largest first: `refill` takes from the end, and the magazine hands out the
        // last it took first, so blocks leave in ascending address order. In place: no
        // allocation.
        new.sort_unstable_by(|a, b| b.cmp(a));
    }

    /// Sorts class `c`'s whole depot, and gives back to the system every whole page that
    /// only its free blocks cover (beyond what `keep` still allows, lowest first), and
    /// the committed pages past the last block cut.
    ///
    /// # Safety
    /// The caller owns this heap and no reference into the class's bin is alive.
    unsafe fn release_class(&self, c: usize, keep: &mut usize) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and the bump pointers.
        let (len, bump) = unsafe { (*bin.depot_len.get(), *bin.bump.get()) };
        if bump.is_null() {
            return; // the class was never used
        }
        // SAFETY: the owner alone touches the depot's counters.
        let released = unsafe {
            *bin.depot_settled.get() = len;
            *bin.settled_since.get() = now_ns();
            &mut *bin.depot_released.get()
        };
        // The entries below `released` went back already and have not moved since.
        // SAFETY: entries below the depot's length are committed, initialised, and only
        // this thread touches them; the slice lives only in this function.
        let depot = unsafe {
            core::slice::from_raw_parts_mut(self.depot(c).add(*released), len - *released)
        };
        *released = len;
        // SAFETY: the caller owns the heap.
        unsafe {
            self.release_runs(c, depot, keep);
            self.release_tail(c);
        }
    }

    /// Sorts `entries` (part of class `c`'s depot) largest first, as `sort_new` does,
    /// and gives back every whole page that a run of their blocks, lying end to end,
    /// covers, beyond what `keep` still allows (lowest first).
    ///
    /// # Safety
    /// The caller owns this heap; `entries` are entries of class `c`'s depot.
    unsafe fn release_runs(&self, c: usize, entries: &mut [u32], keep: &mut usize) {
        let start = self.region_start(c);
        // In place: no allocation.
        entries.sort_unstable_by(|a, b| b.cmp(a));
        let size = class_size(c);
        let released = |lo: usize, hi: usize, keep: &mut usize| {
            // The lowest free blocks stay resident while the heap's allowance lasts.
            let kept = (*keep).min(hi.saturating_sub(lo));
            *keep -= kept;
            // SAFETY: a run of free blocks of this heap's class, which this thread owns;
            // free blocks hold nothing.
            unsafe { release_pages_within(start, lo + kept, hi) };
        };
        // Runs of free blocks that lie end to end, ascending.
        let mut run: Option<(usize, usize)> = None;
        for &offset in entries.iter().rev() {
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
        if let Some((lo, hi)) = run {
            released(lo, hi, keep);
        }
    }

    /// Gives back the committed memory of class `c` past the last block cut (it holds
    /// no block; a region past 4 MiB populates each new MiB at once, so it may be
    /// resident), unless nothing was committed since it was last given back.
    ///
    /// # Safety
    /// The caller owns this heap.
    unsafe fn release_tail(&self, c: usize) {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the bump pointers.
        let (bump, end, tail) = unsafe {
            (
                *bin.bump.get(),
                *bin.end.get(),
                &mut *bin.tail_released.get(),
            )
        };
        if bump.is_null() || *tail == end {
            return;
        }
        *tail = end;
        // SAFETY: committed memory of this heap's class past every block cut, which
        // nothing uses.
        unsafe { release_pages_within(bump, 0, end.addr().saturating_sub(bump.addr())) };
    }

    /// [`retire`](Self::retire) for every class.
    ///
    /// # Safety
    /// As for [`retire`](Self::retire).
    pub(crate) unsafe fn retire_all(&self, now: u64) {
        let mut keep = KEEP;
        for c in 0..NUM_CLASSES {
            // SAFETY: the caller's contract.
            unsafe { self.retire(c, now, &mut keep) };
        }
    }

    /// [`release_class`](Self::release_class) for every class, keeping [`KEEP`] bytes
    /// resident in all.
    ///
    /// # Safety
    /// The caller owns this heap, the arena is reserved, and no reference into its bins
    /// is alive.
    pub(crate) unsafe fn release_all(&self) {
        let mut keep = KEEP;
        for c in 0..NUM_CLASSES {
            // SAFETY: the caller's contract.
            unsafe { self.release_class(c, &mut keep) };
        }
    }
}
