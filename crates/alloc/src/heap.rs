//! Thread-local heaps: the arena, the heaps that own its regions, the per-thread
//! binding, and every slow path of small blocks.
//!
//! Each of the [`HEAPS`] heaps owns one region per size class. A thread claims a free
//! heap the first time it allocates or frees, and gives it back when it exits; the next
//! thread to claim it inherits its magazines, depots and committed memory, and reclaims the
//! blocks other threads freed to it in the meantime. Heap 0 is never claimed: it is
//! the shared heap, behind a lock, for threads that found no free heap or that
//! allocate while their thread-local storage is being torn down.
//!
//! Apart: the outboxes that carry remote frees to their owners (`outbox.rs`), heaps
//! nobody owns and borrowing from them (`orphans.rs`), and when free memory goes back
//! to the system (`crate::release`).

use crate::arena_word::ArenaWord;
use crate::class::{
    class_size, first_block, is_block_offset, Geometry, CLASS_BITS, DEPOT_CHUNK, DEPOT_ENTRY,
    DEPOT_TABLES, GEOMETRIES, HEAPS, MAX_SMALL, NUM_CLASSES,
};
use crate::fatal::debug_check;
use crate::lock::Lock;
use crate::os;
use crate::remote::{next, set_next, Link, RemoteStack};
use core::cell::{Cell, UnsafeCell};
use core::ptr;
use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use crossbeam_utils::CachePadded;

mod outbox;
use outbox::{Outbox, BATCH, EMPTY_OUTBOX, OUTBOXES};

/// The most bytes of blocks a refill moves into an empty magazine from the depot or
/// from new memory (half a magazine, or fewer blocks of the bigger classes; at least
/// one). The thread hands out its magazine before it looks at the blocks other threads
/// returned, so a batch is stock it keeps in use: with half a magazine of every class
/// (earlier versions), a thread that makes blocks of 128 KiB and more for others kept
/// 4-6 MiB per refill circulating, and its depot never went stale.
const REFILL_BYTES: usize = 64 << 10;
/// Blocks of each class a refill moves at a time (see [`REFILL_BYTES`]).
static REFILL_BATCH: [u32; NUM_CLASSES] = blocks_within(REFILL_BYTES, MAG as u32 / 2);

/// Per class, how many of its blocks fit in `bytes`, at most `most` and at least one:
/// the batch sizes of refills and of outboxes, which hold a byte budget.
const fn blocks_within(bytes: usize, most: u32) -> [u32; NUM_CLASSES] {
    let mut t = [0u32; NUM_CLASSES];
    let mut c = 0;
    while c < NUM_CLASSES {
        let fit = bytes / class_size(c);
        t[c] = if fit >= most as usize {
            most
        } else if fit == 0 {
            1
        } else {
            fit as u32
        };
        c += 1;
    }
    t
}
/// Each commit after a region's first (which is what the first refill's blocks need,
/// in whole pages: a heap that uses a class for a few blocks commits little of it, and
/// a program whose threads come and go touches many heaps and classes) is as big as
/// the region's committed part, up to this step (and always enough for the blocks the
/// refill cuts).
const COMMIT: usize = 1 << 20;
/// Once a region has this much committed, what it commits next is backed with memory
/// at once (`os::populate`): a growing heap takes its page faults in bulk, off the
/// allocation path, and a small region still costs only the pages it touches.
const POPULATE_AFTER: usize = 4 << 20;
/// Classes of blocks up to this size are populated as above; bigger blocks are often
/// buffers only partly written, so their pages are left to fault in as touched.
const POPULATE_MAX_BLOCK: usize = 32 << 10;

// ---- the arena -------------------------------------------------------------------

const UNINIT: u8 = 0;
const READY: u8 = 2;
const FAILED: u8 = 3;

static ARENA_STATE: AtomicU8 = AtomicU8::new(UNINIT);
/// Taken by the thread that reserves the arena; others wait on it (it spins briefly,
/// then sleeps).
static ARENA_LOCK: Lock = Lock::new();
/// The arena's first byte (the pointer every block is derived from).
static ARENA: AtomicPtr<u8> = AtomicPtr::new(ptr::null_mut());
/// The arena's address and shape (which of [`GEOMETRIES`]), for decoding, as one
/// word: a load never pairs one arena's base with another's shape. Until the arena
/// exists (or when it could not be reserved) the base is one that no user address minus
/// it falls inside any arena, and the shape the full one's.
static ARENA_WORD: ArenaWord = ArenaWord::new();
// The shape's index fits the word's low bits (`ArenaWord::publish` checks it too).
const _: () = assert!(GEOMETRIES.len() <= crate::arena_word::SHAPES);

/// Where `p` lies: the arena's shape and `p`'s offset from its base, from one load of
/// the arena's word. Inside the arena when the shape's `decode` of the offset says so.
#[inline(always)]
pub(crate) fn locate(p: *mut u8) -> (Geometry, usize) {
    let (base, g) = ARENA_WORD.load();
    (GEOMETRIES[g], p.addr().wrapping_sub(base))
}

/// The owner and class of `p` when it lies in the arena (one load of the arena's word).
#[inline(always)]
pub(crate) fn decode(p: *mut u8) -> Option<(usize, usize)> {
    let (geo, offset) = locate(p);
    geo.decode(offset)
}

/// The link of `p`, a free block of class `c` on a chain (an inbox, a chain returned
/// by other threads, the overflow list, a chain lent by another heap), read after
/// checking that `p` is one: an address of the arena in a region of class `c`, where
/// one of the class's blocks starts. A chain's links lie in the blocks themselves,
/// which a program may write after freeing them: such a link stops the process with a
/// message instead of being followed (or handed out, overlapping another block). (A
/// link to a block's start past the part of its region committed so far is not caught:
/// reading it faults.)
///
/// # Safety
/// `p` came from a chain of free blocks of class `c` that only this thread can reach.
#[inline]
pub(crate) unsafe fn next_checked(p: *mut u8, c: usize) -> *mut u8 {
    let (geo, off) = locate(p);
    let in_region = off & (geo.region_size() - 1);
    if geo
        .decode(off)
        .is_none_or(|(_, class)| class != c || !is_block_offset(c, in_region))
    {
        crate::fatal::corrupt_link(p);
    }
    // SAFETY: a block of class `c` in the arena, committed (every block of a region
    // lies in its committed part), free and ours: its first word is its link.
    unsafe { next(p) }
}

/// The arena's shape.
#[inline(always)]
pub(crate) fn geometry() -> Geometry {
    GEOMETRIES[geometry_index()]
}

/// Which of [`GEOMETRIES`] the arena has.
pub(crate) fn geometry_index() -> usize {
    ARENA_WORD.load().1
}

/// The arena, reserved on first use; `None` if the system refused every reservation
/// (then small requests are served by the C library's allocator, see `big`).
#[inline]
fn arena() -> Option<*mut u8> {
    match ARENA_STATE.load(Ordering::Acquire) {
        READY => Some(ARENA.load(Ordering::Relaxed)),
        FAILED => None,
        _ => reserve_arena(),
    }
}

/// The address space a reduced arena may take: a quarter of the process's limit
/// (`RLIMIT_AS`), or no bound without one.
pub(crate) fn address_budget() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return usize::MAX;
    }
    usize::try_from(lim.rlim_cur / 4).unwrap_or(usize::MAX)
}

#[cold]
#[inline(never)]
fn reserve_arena() -> Option<*mut u8> {
    // Before any thread can be half-way through the reservation or take the shared
    // heap's lock, a fork must find the handlers in place.
    crate::FORK.register();
    // The purge delay's environment variable, read now (usually before other threads
    // run) rather than at some thread's first purge.
    crate::settings::settle();
    let _held = ARENA_LOCK.lock();
    match ARENA_STATE.load(Ordering::Acquire) {
        READY => return Some(ARENA.load(Ordering::Relaxed)),
        FAILED => return None,
        _ => {}
    }
    // The full arena first, whatever the budget: it is only address space. Then the
    // smaller shapes that fit a quarter of the address-space limit.
    let budget = address_budget();
    for (g, geo) in GEOMETRIES.iter().enumerate() {
        if g > 0 && geo.arena_size() > budget {
            continue;
        }
        // Every arena is aligned to a heap's span (each heap's span then is too), so
        // that the free fast path tells from the bits of an address above its class's
        // region offset whether it lies in the thread's heap, and which class it is in
        // (`imp::push_local`). In earlier versions only the full arena was, and every free in
        // a reduced one took the slow path.
        let align = geo.span();
        let base = os::reserve(geo.arena_size(), align);
        if base.is_null() {
            continue;
        }
        make_exit_key();
        // Relaxed: the ready state's release store below publishes both to every
        // thread that uses the arena (it loads the state with acquire first).
        ARENA.store(base, Ordering::Relaxed);
        if !ARENA_WORD.publish(base.addr(), g) {
            crate::fatal::fatal("internal check failed: the arena's base is aligned to its span");
        }
        ARENA_STATE.store(READY, Ordering::Release);
        return Some(base);
    }
    // Release, as for READY: a thread that sees FAILED (acquire) stops trying and
    // serves small requests elsewhere; nothing else is published with it.
    ARENA_STATE.store(FAILED, Ordering::Release);
    None
}

/// Whether the arena has been reserved (for statistics).
pub(crate) fn arena_ready() -> bool {
    ARENA_STATE.load(Ordering::Acquire) == READY
}

/// Whether every reservation was refused (for statistics).
pub(crate) fn arena_failed() -> bool {
    ARENA_STATE.load(Ordering::Acquire) == FAILED
}

// ---- heaps -----------------------------------------------------------------------

/// Blocks a magazine holds: the fast paths pop and push here.
pub(crate) const MAG: usize = 62;

/// The blocks of one class ready for the fast paths: an array stack, so an allocation
/// reads no block and a free writes none. Only the owning thread touches it; `count` is
/// atomic so that statistics can read it (the owner uses a plain load and store).
///
/// The blocks lie in `slots[1..=count]`, the newest at `slots[count]`; `slots[0]` is
/// always null, so that the newest block can be read without a test for an empty
/// magazine ([`push_fresh`](Self::push_fresh)'s check of a block freed twice in a
/// row). 512 bytes in all.
#[repr(C, align(64))]
pub(crate) struct Mag {
    pub(crate) count: AtomicU32,
    pub(crate) slots: UnsafeCell<[Link; MAG + 1]>,
}

const _: () = assert!(core::mem::size_of::<Mag>() == 512);

impl Mag {
    const fn new() -> Mag {
        Mag {
            count: AtomicU32::new(0),
            slots: UnsafeCell::new([ptr::null_mut(); MAG + 1]),
        }
    }

    /// The magazine's slots for blocks, `slots[1..]`: entries below the count hold its
    /// blocks, oldest first.
    ///
    /// # Safety
    /// The caller owns the heap, and holds no other reference into the slots.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn held(&self) -> &mut [Link] {
        // SAFETY: the caller's contract: the owner alone touches the slots.
        unsafe { &mut (&mut *self.slots.get())[1..] }
    }

    /// Pops a block; null when empty.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    pub(crate) unsafe fn pop(&self) -> *mut u8 {
        let n = self.count.load(Ordering::Relaxed) as usize;
        if n == 0 || n > MAG {
            return ptr::null_mut();
        }
        // SAFETY: the owner alone touches the slots; slot n (1 <= n <= MAG) holds the
        // newest free block.
        let p = unsafe { (*self.slots.get())[n] };
        // Relaxed: only the owner uses the count; statistics read it as a figure.
        self.count.store(n as u32 - 1, Ordering::Relaxed);
        p
    }

    /// Pushes a free block; false when full.
    ///
    /// # Safety
    /// The caller owns the heap; `p` is a free block of the magazine's class and heap.
    #[inline(always)]
    pub(crate) unsafe fn push(&self, p: *mut u8) -> bool {
        let n = self.count.load(Ordering::Relaxed) as usize;
        if n >= MAG {
            return false;
        }
        // SAFETY: the owner alone touches the slots; n + 1 <= MAG.
        unsafe { (*self.slots.get())[n + 1] = p };
        // Relaxed: as in `pop`.
        self.count.store(n as u32 + 1, Ordering::Relaxed);
        true
    }

    /// [`push`](Self::push) for a `free` whose caller may free a block twice (the C
    /// interface): a block that is already the newest in the magazine stops the
    /// process with a message. One more load and comparison (of the slot next to the
    /// one the push writes; slot 0, always null, when the magazine is empty).
    ///
    /// # Safety
    /// The caller owns the heap; `p` is a block of the magazine's class and heap that
    /// its caller frees.
    #[inline(always)]
    pub(crate) unsafe fn push_fresh(&self, p: *mut u8) -> bool {
        let n = self.count.load(Ordering::Relaxed) as usize;
        if n >= MAG {
            return false;
        }
        // SAFETY: the owner alone touches the slots; n < MAG.
        if unsafe { (*self.slots.get())[n] } == p {
            freed_twice(p);
        }
        // SAFETY: as in `push`.
        unsafe { (*self.slots.get())[n + 1] = p };
        // Relaxed: as in `pop`.
        self.count.store(n as u32 + 1, Ordering::Relaxed);
        true
    }

    /// The newest block in the magazine; null when it is empty.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline]
    unsafe fn newest(&self) -> *mut u8 {
        let n = self.count.load(Ordering::Relaxed) as usize;
        if n <= MAG {
            // SAFETY: the owner alone touches the slots; slot 0 is null.
            unsafe { (*self.slots.get())[n] }
        } else {
            ptr::null_mut()
        }
    }
}

/// Stops the process: `p` was freed twice.
#[cold]
#[inline(never)]
pub(crate) fn freed_twice(p: *mut u8) -> ! {
    crate::fatal::Message::new()
        .text("free(")
        .hex(p.addr())
        .text("): a block freed twice; aborting")
        .abort()
}

/// The rest of one size class of one heap: its depot, its never-used memory, and its
/// counters. Only the owning thread writes it; the counters are atomics so that
/// statistics can read them from any thread (the owner updates them with a plain load
/// and store, no read-modify-write).
#[repr(C, align(64))]
pub(crate) struct Bin {
    /// Free blocks beyond the magazine in the depot (an array stack of their offsets in
    /// the region, outside the blocks: moving blocks between the magazine and the depot
    /// reads and writes no block).
    pub(crate) depot_len: UnsafeCell<usize>,
    /// Depot entries backed by committed memory.
    depot_committed: UnsafeCell<usize>,
    /// The depot's entries below this index have not left it since `settled_since`
    /// (the lowest length the depot has had since then); `release::sort_new` sorts
    /// only the entries above it.
    pub(crate) depot_settled: UnsafeCell<usize>,
    /// Since when (`release::now_ns`) the entries below `depot_settled` have not moved:
    /// `release` gives their pages back once that is long enough ago.
    pub(crate) settled_since: UnsafeCell<u64>,
    /// The depot's entries below this index have had their pages given back and have
    /// not left it since (the lowest length since then): `release` does not give them
    /// back again.
    pub(crate) depot_released: UnsafeCell<usize>,
    /// Free blocks beyond the magazine that the depot could not take because the
    /// system refused to commit its memory, linked through their first words. Empty
    /// unless that happened.
    pub(crate) overflow: UnsafeCell<Link>,
    /// Blocks other threads returned, taken from the class's remote stack in one
    /// swap and handed out one per allocation (never walked: each link is a line
    /// another core wrote last, and popping one per allocation lets that miss overlap
    /// with the caller's work). Counted neither as listed nor as reclaimed until popped.
    /// It may hold blocks of another heap's region, borrowed from a heap nobody owns
    /// (`Heap::borrow`); they are handed out the same way.
    pub(crate) inbox: UnsafeCell<Link>,
    /// The next never-used block of the region (null until first used).
    pub(crate) bump: UnsafeCell<*mut u8>,
    /// End of the region's committed part.
    pub(crate) end: UnsafeCell<*mut u8>,
    /// What `end` was when the committed memory past the last block cut was last given
    /// back (`release`): if nothing was committed since, there is nothing more to give.
    pub(crate) tail_released: UnsafeCell<*mut u8>,
    /// Blocks cut from the region so far.
    pub(crate) carved: AtomicU64,
    /// Blocks in the depot and on the overflow list.
    pub(crate) listed: AtomicU64,
    pub(crate) reclaimed: AtomicU64,
    pub(crate) remote_sent: AtomicU64,
    /// Blocks of its depot lent to other heaps while nobody owned this one
    /// ([`Heap::borrow`]): like remote frees in flight, free but listed nowhere here
    /// until they come back through the remote stack and are reclaimed.
    pub(crate) lent: AtomicU64,
    /// Allocations that found the magazine empty (calls of `refill`).
    pub(crate) refills: AtomicU64,
    /// Frees that found the magazine full (calls of `spill`).
    pub(crate) spills: AtomicU64,
    /// Blocks moved from the magazine to the depot (or the overflow list).
    pub(crate) to_depot: AtomicU64,
    /// Blocks moved from the depot (or the overflow list) to the magazine.
    pub(crate) from_depot: AtomicU64,
}

impl Bin {
    const fn new() -> Bin {
        Bin {
            depot_len: UnsafeCell::new(0),
            depot_committed: UnsafeCell::new(0),
            depot_settled: UnsafeCell::new(0),
            settled_since: UnsafeCell::new(0),
            depot_released: UnsafeCell::new(0),
            overflow: UnsafeCell::new(ptr::null_mut()),
            inbox: UnsafeCell::new(ptr::null_mut()),
            bump: UnsafeCell::new(ptr::null_mut()),
            end: UnsafeCell::new(ptr::null_mut()),
            tail_released: UnsafeCell::new(ptr::null_mut()),
            carved: AtomicU64::new(0),
            listed: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            remote_sent: AtomicU64::new(0),
            lent: AtomicU64::new(0),
            refills: AtomicU64::new(0),
            spills: AtomicU64::new(0),
            to_depot: AtomicU64::new(0),
            from_depot: AtomicU64::new(0),
        }
    }
}

impl Bin {
    /// Notes that entries were taken from the depot, leaving `len`: the marks of
    /// entries unmoved (`depot_settled`) and given back (`depot_released`) go down with it.
    ///
    /// # Safety
    /// The caller owns the bin's heap and no reference into its counters is alive.
    #[inline]
    pub(crate) unsafe fn depot_shrunk(&self, len: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let settled = &mut *self.depot_settled.get();
            *settled = (*settled).min(len);
            let released = &mut *self.depot_released.get();
            *released = (*released).min(len);
        }
    }
}

/// Adds `n` to a counter only its owner writes: a plain load and store (relaxed:
/// other threads read it only as a figure for statistics, and reach nothing through it).
#[inline(always)]
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Subtracts `n` from a counter only its owner writes (relaxed, as in [`add`]).
#[inline(always)]
pub(crate) fn sub(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_sub(n), Ordering::Relaxed);
}

pub(crate) const CLASS_SLOTS: usize = 1 << CLASS_BITS;

/// A heap: a region per size class, its magazines and depots, and the stack other
/// threads return its blocks to.
pub(crate) struct Heap {
    pub(crate) mags: [Mag; CLASS_SLOTS],
    pub(crate) bins: [Bin; CLASS_SLOTS],
    /// Where other threads return this heap's blocks, one stack per class, so that
    /// a returned chain needs no sorting.
    pub(crate) remote: [CachePadded<RemoteStack>; CLASS_SLOTS],
    /// Claimed by a thread (for heap 0: the shared heap's lock is held).
    owned: AtomicBool,
    /// Blocks of other heaps freed by this heap's thread, per (owner, class).
    outbox: UnsafeCell<[Outbox; OUTBOXES]>,
    /// Which outboxes hold blocks.
    pending: UnsafeCell<u128>,
    pub(crate) committed: AtomicU64,
    /// Frees of its own blocks by its thread that the fast path did not take (the
    /// magazine was full), counted by the owner.
    pub(crate) own_frees_slow: AtomicU64,
    /// How many threads have owned it.
    pub(crate) owners: AtomicU64,
    /// Slow-path calls left before the owner next looks at the clock for
    /// `release::purge` (the owner's alone).
    pub(crate) purge_tick: UnsafeCell<u32>,
    /// When `release::purge` last ran for this heap (`release::now_ns`; the owner's
    /// alone).
    pub(crate) purged_at: UnsafeCell<u64>,
}

const _: () = assert!(OUTBOXES == 128, "the pending mask is a u128");
const _: () = assert!(
    HEAPS * NUM_CLASSES <= u32::MAX as usize,
    "outbox keys are u32"
);

// SAFETY: the `UnsafeCell` parts (magazines, depots, lists, bump pointers, outboxes, the
// purge counter and time) are touched only by the thread that owns the heap (claimed
// with an acquire CAS on `owned` and given back with a release store) or, for heap 0, by
// the thread holding its lock (the same flag); every other field is atomic.
unsafe impl Sync for Heap {}

impl Heap {
    const fn new() -> Heap {
        Heap {
            mags: [const { Mag::new() }; CLASS_SLOTS],
            bins: [const { Bin::new() }; CLASS_SLOTS],
            remote: [const { CachePadded::new(RemoteStack::new()) }; CLASS_SLOTS],
            owned: AtomicBool::new(false),
            outbox: UnsafeCell::new([EMPTY_OUTBOX; OUTBOXES]),
            pending: UnsafeCell::new(0),
            committed: AtomicU64::new(0),
            own_frees_slow: AtomicU64::new(0),
            owners: AtomicU64::new(0),
            purge_tick: UnsafeCell::new(0),
            purged_at: UnsafeCell::new(0),
        }
    }

    pub(crate) fn index(&self) -> usize {
        // SAFETY: every owned `Heap` is an element of `HEAP`.
        unsafe { (self as *const Heap).offset_from(HEAP.as_ptr()) as usize }
    }

    pub(crate) fn is_owned(&self) -> bool {
        self.owned.load(Ordering::Relaxed)
    }

    /// The first byte of this heap's region for class `c` (the arena is reserved).
    pub(crate) fn region_start(&self, c: usize) -> *mut u8 {
        ARENA
            .load(Ordering::Relaxed)
            .wrapping_add(geometry().region_offset(self.index(), c))
    }

    /// Allocates a block of class `c`: the magazine, else [`refill`](Self::refill).
    ///
    /// # Safety
    /// The caller owns this heap and the arena is reserved.
    #[inline]
    pub(crate) unsafe fn alloc(&self, c: usize) -> *mut u8 {
        // SAFETY: the caller owns the heap.
        let p = unsafe { self.mags[c & (CLASS_SLOTS - 1)].pop() };
        if p.is_null() {
            // SAFETY: as above.
            unsafe { self.refill(c) }
        } else {
            p
        }
    }

    /// Frees `p`, a block of this heap's class `c`: the magazine, else half the
    /// magazine moves to the depot first.
    ///
    /// # Safety
    /// The caller owns this heap; `p` is a block of this heap in class `c`, not in use.
    pub(crate) unsafe fn free(&self, c: usize, p: *mut u8) {
        let mag = &self.mags[c & (CLASS_SLOTS - 1)];
        // This is the slow path of a free (the fast one declined): a block freed twice
        // in a row, the magazine's newest, is caught here too.
        // SAFETY: the caller owns the heap.
        if unsafe { mag.newest() } == p {
            freed_twice(p);
        }
        // SAFETY: the caller owns the heap; `p` is free.
        if unsafe { mag.push(p) } {
            return;
        }
        // SAFETY: as above.
        unsafe { self.spill(c) };
        // SAFETY: as above; the magazine now has room.
        let pushed = unsafe { mag.push(p) };
        debug_check!(pushed, "a spilled magazine has room");
    }

    /// Moves the older half of class `c`'s full magazine into its depot (onto the
    /// overflow list if the depot's memory cannot be committed).
    ///
    /// # Safety
    /// The caller owns this heap.
    #[cold]
    #[inline(never)]
    unsafe fn spill(&self, c: usize) {
        // SAFETY: the caller owns the heap; no reference into a bin is alive yet.
        unsafe { self.tick() };
        let mag = &self.mags[c];
        let bin = &self.bins[c];
        let n = mag.count.load(Ordering::Relaxed) as usize;
        let half = n / 2;
        // SAFETY: the owner alone touches the magazine, the depot and the list.
        unsafe {
            let slots = mag.held();
            let len = &mut *bin.depot_len.get();
            if self.depot_room(c, *len + half) {
                let depot = self.depot(c).add(*len);
                let start = self.region_start(c).addr();
                for (k, &p) in slots[..half].iter().enumerate() {
                    // A block's offset in its region is below the region's size, <= 2^32.
                    depot.add(k).write((p.addr() - start) as u32);
                }
                *len += half;
            } else {
                let overflow = &mut *bin.overflow.get();
                for &p in &slots[..half] {
                    set_next(p, *overflow);
                    *overflow = p;
                }
            }
            slots.copy_within(half..n, 0);
        }
        // Relaxed: as in `Mag::pop`.
        mag.count.store((n - half) as u32, Ordering::Relaxed);
        add(&bin.listed, half as u64);
        add(&bin.spills, 1);
        add(&bin.to_depot, half as u64);
    }

    /// The first entry of class `c`'s depot.
    pub(crate) fn depot(&self, c: usize) -> *mut u32 {
        let g = geometry_index();
        ARENA
            .load(Ordering::Relaxed)
            .wrapping_add(GEOMETRIES[g].region_offset(self.index(), 0) + DEPOT_TABLES[g][c])
            .cast()
    }

    /// Makes sure class `c`'s depot has committed memory for `want` entries,
    /// committing more when needed; false when the system refuses.
    ///
    /// # Safety
    /// The caller owns this heap and the arena is reserved.
    pub(crate) unsafe fn depot_room(&self, c: usize, want: usize) -> bool {
        // SAFETY: the owner alone touches the depot's counters.
        let committed = unsafe { &mut *self.bins[c].depot_committed.get() };
        if want <= *committed {
            return true;
        }
        #[cfg(test)]
        if tests::REFUSE_DEPOT.with(Cell::get) {
            return false;
        }
        // Free blocks never outnumber the blocks the region holds.
        debug_check!(
            want <= geometry().depot_capacity(c),
            "free blocks outnumber the region's"
        );
        // Whole pages, at least twice what it had up to a step of `COMMIT` (a depot
        // that holds a few entries commits a page, not a chunk: with 100 threads alive
        // at once, each heap's depots of the classes it used committed 64 KiB each,
        // 96 MB in all), within the chunks laid out for it.
        let laid_out = geometry()
            .depot_capacity(c)
            .next_multiple_of(DEPOT_CHUNK / DEPOT_ENTRY);
        let to = want
            .max(*committed + (*committed).min(COMMIT / DEPOT_ENTRY))
            .next_multiple_of(os::PAGE / DEPOT_ENTRY)
            .min(laid_out);
        let at = self.depot(c).wrapping_add(*committed).cast::<u8>();
        let bytes = (to - *committed) * DEPOT_ENTRY;
        if !os::commit(at, bytes) {
            return false;
        }
        *committed = to;
        add(&self.committed, bytes as u64);
        true
    }

    /// The slow path of an allocation of class `c`, its magazine empty: fill half the
    /// magazine from the depot (or the overflow list); else hand out one block other
    /// threads returned (taking the class's remote stack when the inbox is empty); else
    /// fill half the magazine from never-used memory (committing more of the region
    /// when needed).
    /// Null when the region is exhausted or the system refuses memory.
    ///
    /// # Safety
    /// The caller owns this heap and the arena is reserved.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn refill(&self, c: usize) -> *mut u8 {
        debug_check!(c < NUM_CLASSES, "a refill of a class");
        let mag = &self.mags[c];
        let bin = &self.bins[c];
        add(&bin.refills, 1);
        // SAFETY: the caller owns the heap; no reference into a bin is alive yet.
        unsafe { self.tick() };
        // SAFETY: the owner alone touches its depot and lists.
        let (len, overflow, inbox) = unsafe {
            (
                &mut *bin.depot_len.get(),
                &mut *bin.overflow.get(),
                &mut *bin.inbox.get(),
            )
        };
        // Blocks other threads returned go out before the depot's: a thread whose
        // blocks come back (made here, freed elsewhere) reuses those first, and the
        // depot's stock beyond what it needs stays unused, so `release::purge` gives
        // its memory back. (Depot first, a burst's whole stock kept circulating.)
        if inbox.is_null() {
            *inbox = self.remote[c].take_all();
        }
        if !inbox.is_null() {
            let p = *inbox;
            // SAFETY: a free block (checked) that its freeing thread linked and pushed;
            // the acquire in `take_all` made the link visible.
            *inbox = unsafe { next_checked(p, c) };
            add(&bin.reclaimed, 1);
            return p;
        }
        let want = REFILL_BATCH[c] as usize;
        let mut got = 0u64;
        debug_check!(
            mag.count.load(Ordering::Relaxed) == 0,
            "a refill finds its magazine empty"
        );
        if *len > 0 {
            let take = want.min(*len);
            *len -= take;
            // SAFETY: the owner alone touches the depot's counters.
            unsafe { bin.depot_shrunk(*len) };
            let start = self.region_start(c);
            // SAFETY: the owner alone touches the magazine, which is empty; entries
            // `len..len + take` of the depot are committed and hold the offsets of free
            // blocks of this region.
            unsafe {
                let depot = self.depot(c).add(*len);
                let slots = mag.held();
                for (k, slot) in slots[..take].iter_mut().enumerate() {
                    *slot = start.wrapping_add(depot.add(k).read() as usize);
                }
                // Relaxed: as in `Mag::pop`.
                mag.count.store(take as u32, Ordering::Relaxed);
            }
            got = take as u64;
        }
        while got < want as u64 && !overflow.is_null() {
            let p = *overflow;
            // SAFETY: a free block of this heap on its list, holding its link; the
            // magazine has room.
            unsafe {
                *overflow = next_checked(p, c);
                mag.push(p);
            }
            got += 1;
        }
        if got > 0 {
            sub(&bin.listed, got);
            add(&bin.from_depot, got);
        } else {
            // Before cutting new memory: a heap nobody owns may hold blocks of this
            // class that other threads returned to it after its thread exited.
            if any_orphan(c) && self.index() != 0 {
                // SAFETY: the caller owns the heap; its inbox was found empty above
                // (the depot and the list were empty too, so it was looked at).
                let p = unsafe { self.borrow(c) };
                if !p.is_null() {
                    return p;
                }
            }
            // Or another heap, owned or not, may have blocks of this class returned to
            // it that its thread has not taken yet.
            if any_returned(c) && self.index() != 0 {
                // SAFETY: as above.
                let p = unsafe { self.take_returned(c) };
                if !p.is_null() {
                    return p;
                }
            }
            // Or blocks another heap's exited thread left spare.
            if class_size(c) >= SPARE_MIN && self.index() != 0 {
                // SAFETY: as above; no allocator lock is held here (the shared heap,
                // whose callers hold its lock, does not look).
                let p = unsafe { self.take_spares(c) };
                if !p.is_null() {
                    return p;
                }
            }
            // SAFETY: the caller owns the heap and the arena is reserved.
            unsafe { self.carve(c, want) };
        }
        // SAFETY: as above.
        unsafe { mag.pop() }
    }

    /// Cuts up to `want` never-used blocks of class `c` into its magazine, committing
    /// more of the region when needed; returns how many.
    ///
    /// # Safety
    /// The caller owns this heap and the arena is reserved.
    unsafe fn carve(&self, c: usize, want: usize) -> usize {
        let mag = &self.mags[c];
        let bin = &self.bins[c];
        debug_check!(
            mag.count.load(Ordering::Relaxed) == 0,
            "new blocks are cut into an empty magazine"
        );
        let size = class_size(c);
        // SAFETY: the owner alone touches the bump pointers.
        let (bump, end) = unsafe { (&mut *bin.bump.get(), &mut *bin.end.get()) };
        let start = self.region_start(c);
        // The region's pages below its first block's are never used, nor committed.
        let base = start.wrapping_add(first_block(c) & !(os::PAGE - 1));
        if bump.is_null() {
            *bump = start.wrapping_add(first_block(c));
            *end = base;
        }
        let mut got = 0;
        while got < want {
            if bump.addr() + size > end.addr() {
                if got > 0 {
                    break;
                }
                let committed = end.addr() - base.addr();
                let need = (bump.addr() + size - end.addr()).next_multiple_of(os::PAGE);
                // What the rest of this refill needs: the first commit's size.
                let batch =
                    (bump.addr() + size * (want - got) - end.addr()).next_multiple_of(os::PAGE);
                let room = start.addr() + geometry().region_size() - end.addr();
                let step = committed.min(COMMIT).max(batch).min(room);
                if step < need {
                    break;
                }
                // New memory is about to be committed: first send the remote frees
                // this thread holds for others, so they can reuse them.
                // SAFETY: the caller owns the heap.
                unsafe { self.flush_outboxes() };
                if !os::commit(*end, step) {
                    break;
                }
                if committed >= POPULATE_AFTER && size <= POPULATE_MAX_BLOCK {
                    os::populate(*end, step);
                }
                *end = end.wrapping_add(step);
                add(&self.committed, step as u64);
            }
            // SAFETY: a never-used block inside committed memory; the magazine was
            // empty and takes at most `REFILL_BATCH[c] <= MAG / 2` here.
            unsafe { mag.push(*bump) };
            *bump = bump.wrapping_add(size);
            got += 1;
        }
        // The magazine pops from its top: reversed, the new blocks go out in address
        // order, which the hardware prefetcher follows.
        // SAFETY: the owner alone touches the magazine, which held nothing before.
        unsafe { mag.held()[..got].reverse() };
        add(&bin.carved, got as u64);
        got
    }
}

/// The heap a thread without one points at: its magazines are always empty, so every
/// allocation takes the slow path, which claims a real heap.
pub(crate) static NO_HEAP: Heap = Heap::new();

/// The arena offset a thread without a heap subtracts: no address minus it falls
/// inside one heap's span.
const NO_BASE: usize = 1 << 63;

/// Bytes of the full arena one heap spans.
pub(crate) const HEAP_SPAN: usize = 1 << (CLASS_BITS + crate::class::REGION_BITS);
const _: () = assert!(GEOMETRIES[0].span() == HEAP_SPAN);

/// Every heap. Heap 0 is the shared one.
pub(crate) static HEAP: [Heap; HEAPS] = [const { Heap::new() }; HEAPS];

/// Remote frees pushed one by one by threads without a heap of their own, per class.
pub(crate) static UNBATCHED_REMOTE: [AtomicU64; NUM_CLASSES] =
    [const { AtomicU64::new(0) }; NUM_CLASSES];

/// Heaps a thread owns now (heap 0 not counted).
static OWNED: AtomicUsize = AtomicUsize::new(0);

/// Times a heap whose class ran dry took the blocks returned to a heap nobody owns.
pub(crate) static BORROWS: AtomicU64 = AtomicU64::new(0);
/// Times a heap whose class ran dry took the blocks returned to another heap (owned or
/// not) from that heap's remote stack.
pub(crate) static TAKEN_RETURNED: AtomicU64 = AtomicU64::new(0);

// ---- heaps nobody owns: in orphans.rs ---------------------------------------------

mod orphans;
use orphans::{any_orphan, any_returned, note_remote};
mod spare;
use spare::SPARE_MIN;
pub(crate) use spare::{release_stale_spares, spare_blocks, TAKEN_SPARES};

// ---- the thread's binding --------------------------------------------------------

const NONE: u8 = 0;
const OWNER: u8 = 1;
const CLAIMING: u8 = 2;
/// On the shared heap for good: the arena could not be reserved, or the thread's exit
/// could not be watched (no thread-specific key, see [`EXIT_KEY`]).
const SHARED: u8 = 3;
const EXITED: u8 = 4;
/// On the shared heap because every heap was taken: it claims one when one is free.
const WAITING: u8 = 5;

/// This thread's heap. No destructor, so it stays readable while the thread's other
/// thread-locals are destroyed.
pub(crate) struct Local {
    /// The heap, or [`NO_HEAP`] without one.
    pub(crate) heap: Cell<*const Heap>,
    /// The arena address where the heap's span starts, or [`NO_BASE`] without one: a
    /// block is this thread's when its address minus `base` is below the arena's span
    /// ([`HEAP_SPAN`] in the full arena).
    pub(crate) base: Cell<usize>,
    /// The arena's region bits: `(address ^ base) >> shift` is the class of a block of
    /// this thread's heap, and 32 or more for any other address.
    pub(crate) shift: Cell<u32>,
    mode: Cell<u8>,
}

std::thread_local! {
    pub(crate) static LOCAL: Local = const {
        Local {
            heap: Cell::new(&raw const NO_HEAP),
            base: Cell::new(NO_BASE),
            shift: Cell::new(crate::class::REGION_BITS),
            mode: Cell::new(NONE),
        }
    };
}

impl Local {
    fn owned(&self) -> Option<&'static Heap> {
        if self.mode.get() == OWNER {
            // SAFETY: in OWNER mode `heap` is an element of `HEAP` this thread owns.
            Some(unsafe { &*self.heap.get() })
        } else {
            None
        }
    }

    fn release(&self) -> Option<&'static Heap> {
        let h = self.owned();
        self.heap.set(&raw const NO_HEAP);
        self.base.set(NO_BASE);
        h
    }
}

/// The thread-specific data key whose destructor gives a thread's heap back when the
/// thread exits (`pthread_key_create`), plus one; 0 until it is made, or if the system
/// had no key left.
///
/// A key rather than a thread-local destructor: Rust registers those (and C++ its
/// `thread_local` ones) through `__cxa_thread_atexit_impl`, which takes the dynamic
/// loader's lock. A library whose constructor starts a thread and joins it (plugins, JNI
/// and Python extension modules) runs while `dlopen` holds that lock, so that thread's
/// first allocation waited for it forever. And glibc runs those destructors before the
/// keys' destructors: a thread whose first allocator call was in a key destructor (a
/// `free` of a context another thread made) registered its guard too late, it never ran,
/// and the heap stayed claimed for good. A key's destructor set during another key's
/// destructor still runs: glibc goes over the keys again while any has a value (up to
/// `PTHREAD_DESTRUCTOR_ITERATIONS`, 4, rounds; a thread whose first call is in the
/// fourth round keeps its heap, docs/alloc.md).
static EXIT_KEY: AtomicU32 = AtomicU32::new(0);

/// Makes [`EXIT_KEY`] (under the arena's lock, once per process).
fn make_exit_key() {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `pthread_key_create` writes the key it makes; `thread_exit` is an
    // `extern "C"` function that lives forever. It takes no loader lock and allocates
    // nothing.
    if unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) } == 0 {
        // Release: a thread that reads the key (acquire) sees it made.
        EXIT_KEY.store(key + 1, Ordering::Release);
    }
}

/// The destructor of [`EXIT_KEY`]: gives the thread's heap back.
extern "C" fn thread_exit(_: *mut libc::c_void) {
    let _ = LOCAL.try_with(|l| {
        let h = l.release();
        l.mode.set(EXITED);
        if let Some(h) = h {
            // SAFETY: this thread still owns it, and its binding is gone.
            unsafe { h.give_up() };
        }
    });
}

/// Arranges for [`thread_exit`] to run when the calling thread exits; false when it
/// cannot (no key, or the system refused the value's memory).
fn watch_exit() -> bool {
    let key = EXIT_KEY.load(Ordering::Acquire);
    // SAFETY: a key made by `make_exit_key`; any non-null value makes its destructor
    // run. For a key beyond glibc's first 32 this allocates (`calloc`): that call
    // finds the thread claiming a heap and uses the shared heap.
    key != 0 && unsafe { libc::pthread_setspecific(key - 1, ptr::dangling::<libc::c_void>()) } == 0
}

/// Points the thread's binding at `h`, which it has just taken.
fn bind(l: &Local, h: &'static Heap) {
    l.heap.set(h);
    // The free fast path's test (one exclusive-or, one shift by the arena's region
    // bits) finds the thread's blocks in any arena.
    // One load for both: this thread took a heap of the arena, so it reached the arena
    // through its ready state (acquire) and sees the published word.
    let (arena, g) = ARENA_WORD.load();
    // Every arena is reserved aligned to its heaps' span, so each span is aligned to
    // its size.
    let span = arena + h.index() * GEOMETRIES[g].span();
    debug_check!(
        span.is_multiple_of(GEOMETRIES[g].span()),
        "a heap's span is aligned to its size"
    );
    l.base.set(span);
    l.shift.set(GEOMETRIES[g].region_bits);
    l.mode.set(OWNER);
}

/// This thread's heap, claiming one on first use; `None` when the thread uses the
/// shared heap (no heap was free, the arena could not be reserved, or the thread is
/// exiting).
#[inline]
pub(crate) fn current() -> Option<&'static Heap> {
    LOCAL
        .try_with(|l| l.owned().or_else(|| claim(l)))
        .ok()
        .flatten()
}

#[cold]
#[inline(never)]
fn claim(l: &Local) -> Option<&'static Heap> {
    match l.mode.get() {
        NONE => {}
        // Every heap was taken when it last looked: look again only if one is free.
        WAITING if OWNED.load(Ordering::Relaxed) + 1 < geometry().heaps => {}
        _ => return None,
    }
    l.mode.set(CLAIMING);
    // Watching the thread's exit may allocate: that allocation sees CLAIMING and uses
    // the shared heap.
    if arena().filter(|_| watch_exit()).is_none() {
        l.mode.set(SHARED);
        return None;
    }
    if let Some(h) = HEAP[1..geometry().heaps].iter().find(|h| h.try_take()) {
        // Relaxed: a figure for statistics.
        h.owners.fetch_add(1, Ordering::Relaxed);
        crate::release::note_claimed(h.index());
        bind(l, h);
        // A thread's start is a moment to give back the memory of heaps left idle.
        crate::release::release_idle(crate::release::DECAY_NS);
        return Some(h);
    }
    l.mode.set(WAITING);
    None
}

// ---- the shared heap -------------------------------------------------------------

/// The shared heap's lock. Heap 0's `owned` flag says, for statistics, whether a
/// thread is inside; no thread claims heap 0.
static SHARED_LOCK: Lock = Lock::new();

fn with_shared<R>(f: impl FnOnce(&Heap) -> R) -> R {
    let h = &HEAP[0];
    let _held = SHARED_LOCK.lock();
    // Relaxed: the lock orders the shared heap; this flag is only a figure for
    // statistics (nobody claims heap 0).
    h.owned.store(true, Ordering::Relaxed);
    let r = f(h);
    h.owned.store(false, Ordering::Relaxed);
    r
}

// ---- fork ------------------------------------------------------------------------

/// This part's locks, for the fork handlers (see `crate::fork`): the arena's
/// reservation and the shared heap.
pub(crate) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    f(&ARENA_LOCK);
    f(&SHARED_LOCK);
    spare::fork_locks(f);
}

/// In a forked child, once every lock is free (see [`fork_locks`]).
pub(crate) fn in_fork_child() {
    spare::in_fork_child();
}

// ---- the slow paths --------------------------------------------------------------

/// Allocates a block of class `c` when the fast path found none. Null when the arena
/// cannot serve it (the caller falls back to a page-granular block).
#[cold]
#[inline(never)]
pub(crate) fn alloc_small_slow(c: usize) -> *mut u8 {
    match current() {
        // SAFETY: this thread owns `h`, so the arena exists.
        Some(h) => unsafe { h.alloc(c) },
        // SAFETY: the lock makes this thread heap 0's owner; the arena exists.
        None if arena_ready() => with_shared(|h| unsafe { h.alloc(c) }),
        None => ptr::null_mut(),
    }
}

/// Frees a small block the fast path did not take: the thread's magazine for the
/// class is full, or the block is another heap's.
///
/// # Safety
/// `p` is a live block of heap `owner` in class `c`, and the caller is done with it.
#[cold]
#[inline(never)]
pub(crate) unsafe fn free_small_slow(p: *mut u8, owner: usize, c: usize) {
    match current() {
        Some(me) if me.index() == owner => {
            add(&me.own_frees_slow, 1);
            // SAFETY: this thread owns `me`; `p` belongs to it.
            unsafe { me.free(c, p) }
        }
        // SAFETY: as above; `owner` is another heap.
        Some(me) => unsafe { me.send_remote(owner, c, p) },
        // SAFETY: the lock makes this thread heap 0's owner.
        None if owner == 0 => with_shared(|h| unsafe { h.free(c, p) }),
        None => {
            // Relaxed: a figure for statistics.
            UNBATCHED_REMOTE[c].fetch_add(1, Ordering::Relaxed);
            // SAFETY: `p` is free and this thread's until it is pushed.
            unsafe { crate::release::on_remote_free(owner, c, p) };
            // SAFETY: a one-block chain of `owner`'s that nobody uses.
            unsafe { HEAP[owner].remote[c].push_chain(p, p) };
            note_remote(owner, c);
        }
    }
}

/// The index of this thread's heap, if it has claimed one.
pub(crate) fn thread_heap() -> Option<usize> {
    LOCAL
        .try_with(|l| l.owned().map(Heap::index))
        .ok()
        .flatten()
}

/// Sends the remote frees this thread has collected to their owners now.
pub(crate) fn flush() {
    if let Ok(Some(h)) = LOCAL.try_with(|l| l.owned()) {
        // SAFETY: a heap this thread owns.
        unsafe { h.flush_outboxes() };
    }
}

/// See [`crate::trim`].
pub(crate) fn trim() -> usize {
    let mut done = 0;
    if let Ok(Some(h)) = LOCAL.try_with(|l| l.owned()) {
        // SAFETY: a heap this thread owns (so the arena is reserved); no reference into
        // its bins is alive here. Its magazines and returned blocks go to its depots
        // first (borrowed blocks back to their owners), as at thread exit.
        unsafe {
            h.retire_all(crate::release::now_ns());
            h.flush_outboxes();
            h.release_all();
        }
        done += 1;
    }
    if arena_ready() {
        // The shared heap too, under its lock: the blocks other threads returned to it
        // go to its depots and the pages only free blocks cover go back.
        // SAFETY: the lock makes this thread heap 0's owner; the arena is reserved.
        with_shared(|h| unsafe {
            h.retire_all(crate::release::now_ns());
            h.flush_outboxes();
            h.release_all();
        });
        done += 1;
    }
    crate::big::trim();
    done + crate::release::release_idle(0)
}

#[cfg(test)]
mod tests {
    use super::orphans::ORPHANS;
    use super::outbox::{OUTBOX_BATCH, OUTBOX_BYTES};
    use super::*;
    use crate::class::{class_align, class_of, CLASS_STAGGER};
    use std::collections::HashSet;

    std::thread_local! {
        /// Makes this thread's depots refuse to grow, as if the system refused memory.
        pub(super) static REFUSE_DEPOT: Cell<bool> = const { Cell::new(false) };
    }

    /// Runs `f` on a heap this thread claims the way a thread's first allocation does
    /// (these unit tests run on the system allocator, so the heaps are theirs), and gives
    /// it back.
    fn with_heap(f: impl FnOnce(&'static Heap)) {
        arena().expect("the arena is reserved");
        let h = HEAP
            .iter()
            .skip(1)
            .rev()
            .find(|h| {
                h.owned
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })
            .expect("a free heap");
        f(h);
        h.owned.store(false, Ordering::Release);
    }

    /// Allocates `n` blocks of class `c` and fills every byte of each with its number.
    fn fill(h: &Heap, c: usize, n: usize) -> Vec<*mut u8> {
        (0..n)
            .map(|k| {
                // SAFETY: this thread owns `h` and the arena is reserved.
                let p = unsafe { h.alloc(c) };
                assert!(!p.is_null());
                // SAFETY: a fresh block of `class_size(c)` bytes, committed.
                unsafe { p.write_bytes(k as u8, class_size(c)) };
                p
            })
            .collect()
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    #[cfg_attr(
        handoff_global_alloc,
        ignore = "the binary's other threads allocate through these heaps too: a refill may take their spare blocks, which this test would free as its own"
    )]
    fn a_refill_moves_at_most_its_bytes_of_a_big_class() {
        with_heap(|h| {
            for size in [16_000, 150_000] {
                let c = class_of(size);
                let batch = REFILL_BATCH[c] as usize;
                assert!(batch >= 1 && batch * class_size(c) <= REFILL_BYTES.max(class_size(c)));
                // From new memory: the blocks cut go into the empty magazine.
                let blocks = fill(h, c, 40);
                // SAFETY: this thread owns `h`; the blocks are its, freed once.
                unsafe {
                    for &p in &blocks {
                        h.free(c, p);
                    }
                    // Everything free into the depot, the magazine emptied.
                    h.retire(c, crate::release::now_ns(), &mut 0);
                }
                assert_eq!(h.mags[c].count.load(Ordering::Relaxed), 0);
                // SAFETY: the owner reads its depot's length.
                let depot = unsafe { *h.bins[c].depot_len.get() };
                assert!(depot >= 40, "{depot}");
                // From the depot: one refill moves a batch, of which one is handed out.
                // SAFETY: this thread owns `h` and the arena is reserved.
                let p = unsafe { h.alloc(c) };
                assert_eq!(
                    h.mags[c].count.load(Ordering::Relaxed) as usize,
                    batch - 1,
                    "class of {size} B"
                );
                // SAFETY: as above.
                assert_eq!(unsafe { *h.bins[c].depot_len.get() }, depot - batch);
                // SAFETY: as above; `p` is a free block of `h` again.
                unsafe { h.free(c, p) };
            }
        });
    }

    /// Every byte of each block still holds its number.
    fn intact(c: usize, blocks: &[*mut u8]) {
        for (k, &p) in blocks.iter().enumerate() {
            // SAFETY: committed arena memory, written by `fill`.
            let bytes = unsafe { core::slice::from_raw_parts(p, class_size(c)) };
            assert!(bytes.iter().all(|&b| b == k as u8), "block {k} was written");
        }
    }

    fn free_all(h: &Heap, c: usize, blocks: &[*mut u8]) {
        for &p in blocks {
            // SAFETY: this thread owns `h`; `p` is its block of class `c`, not in use.
            unsafe { h.free(c, p) };
        }
    }

    /// Allocates all `carved` blocks of class `c`, every one free: they must come
    /// back distinct, with none cut anew, leaving the class's depot and lists empty.
    fn take_every_free_block(h: &Heap, c: usize, carved: u64) -> HashSet<*mut u8> {
        let mut all = HashSet::new();
        for _ in 0..carved {
            // SAFETY: this thread owns `h` and the arena is reserved.
            let p = unsafe { h.alloc(c) };
            assert!(all.insert(p), "a block was handed out twice");
        }
        assert_eq!(h.bins[c].carved.load(Ordering::Relaxed), carved, "cut anew");
        assert_eq!(listed(h, c), 0);
        assert_eq!(h.mags[c].count.load(Ordering::Relaxed), 0);
        all
    }

    fn listed(h: &Heap, c: usize) -> u64 {
        h.bins[c].listed.load(Ordering::Relaxed)
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn blocks_move_through_the_depot_without_being_read_or_written() {
        with_heap(|h| {
            let c = class_of(256);
            let n = 20 * MAG;
            let blocks = fill(h, c, n);
            let carved = h.bins[c].carved.load(Ordering::Relaxed);
            free_all(h, c, &blocks);
            assert!(listed(h, c) > 0, "nothing was spilled");
            // SAFETY: this thread owns `h`.
            assert!(unsafe { *h.bins[c].overflow.get() }.is_null());
            intact(c, &blocks);
            // SAFETY: this thread owns `h`; the newest free block comes back first.
            let newest = unsafe { h.alloc(c) };
            assert_eq!(newest, blocks[n - 1]);
            // SAFETY: as above; it goes back.
            unsafe { h.free(c, newest) };
            let again = take_every_free_block(h, c, carved);
            assert!(blocks.iter().all(|p| again.contains(p)), "a block was lost");
            intact(c, &blocks);
            free_all(h, c, &again.into_iter().collect::<Vec<_>>());
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn each_class_starts_its_blocks_one_page_further_into_its_region() {
        with_heap(|h| {
            let mut checked = 0;
            for c in 0..NUM_CLASSES {
                // SAFETY: this thread owns `h`.
                if !unsafe { *h.bins[c].bump.get() }.is_null()
                    || h.mags[c].count.load(Ordering::Relaxed) != 0
                {
                    continue; // a class another test of this binary used first
                }
                // Cut one block straight into the empty magazine (not `alloc`, whose
                // refill may first borrow blocks another test returned to a heap
                // nobody owns).
                // SAFETY: this thread owns `h`, the arena is reserved and the
                // magazine is empty.
                assert_eq!(unsafe { h.carve(c, 1) }, 1, "class {c}: a block cut");
                // SAFETY: this thread owns `h`.
                let p = unsafe { h.mags[c].pop() };
                let offset = p.addr() - h.region_start(c).addr();
                assert_eq!(offset, first_block(c), "class {c}");
                assert_eq!(
                    offset / CLASS_STAGGER,
                    c,
                    "class {c}: page {c} of its region"
                );
                assert_eq!(p.addr() % class_align(c), 0, "class {c}: its alignment");
                // The first commit starts at the first block's page: what the block
                // needs, in whole pages.
                let base = h.region_start(c).addr() + c * CLASS_STAGGER;
                // SAFETY: this thread owns `h`.
                let end = unsafe { *h.bins[c].end.get() }.addr();
                let need = (first_block(c) % os::PAGE + class_size(c)).next_multiple_of(os::PAGE);
                assert_eq!(end - base, need, "class {c}: first commit");
                // SAFETY: this thread owns `h`; `p` is its block of class `c`, unused.
                unsafe { h.free(c, p) };
                checked += 1;
            }
            assert!(checked > 0, "every class of this heap was used before");
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    #[cfg_attr(
        handoff_global_alloc,
        ignore = "the heap it gives up is open to every thread of the binary, which allocates through these heaps too"
    )]
    fn blocks_returned_to_a_heap_nobody_owns_are_borrowed_before_new_memory() {
        // Heap `a` cuts blocks; they are returned to it (as another thread's frees
        // would be) after it is given up; heap `b`, out of the class, takes them.
        with_heap(|a| {
            let c = class_of(700);
            let blocks = fill(a, c, 100);
            let bit = |h: usize| ORPHANS[c][h / 64].load(Ordering::Relaxed) & (1 << (h % 64));
            // `b` is taken first, so that it is not `a` once `a` is given up.
            with_heap(|b| {
                OWNED.fetch_add(1, Ordering::Relaxed);
                // SAFETY: this thread owns `a`, and gives it up here.
                unsafe { a.give_up() };
                for &p in &blocks {
                    // SAFETY: a block of `a` in class `c` that nobody uses.
                    unsafe { a.remote[c].push_chain(p, p) };
                    note_remote(a.index(), c);
                }
                assert_ne!(
                    bit(a.index()),
                    0,
                    "a heap nobody owns with returned blocks is not marked"
                );
                let carved = b.bins[c].carved.load(Ordering::Relaxed);
                let mut again = HashSet::new();
                for _ in 0..blocks.len() {
                    // SAFETY: this thread owns `b` and the arena is reserved.
                    assert!(again.insert(unsafe { b.alloc(c) }));
                }
                assert_eq!(b.bins[c].carved.load(Ordering::Relaxed), carved, "cut anew");
                assert!(
                    blocks.iter().all(|p| again.contains(p)),
                    "not every block reused"
                );
                for p in again {
                    // The blocks are still `a`'s: freed, they go back to it.
                    assert_eq!(decode(p), Some((a.index(), c)));
                    // SAFETY: as above.
                    unsafe { a.remote[c].push_chain(p, p) };
                }
            });
            assert!(a.try_take(), "nobody else takes it");
            assert_eq!(bit(a.index()), 0, "its new owner did not clear the mark");
            // SAFETY: this thread owns `a` again; the blocks are back on its stack.
            assert!(unsafe { a.holds_free(c) });
            // Its magazine's leftovers come first, then the returned blocks.
            let mut mine = HashSet::new();
            while !blocks.iter().all(|p| mine.contains(p)) && mine.len() < 2 * blocks.len() {
                // SAFETY: this thread owns `a`.
                let p = unsafe { a.alloc(c) };
                assert!(mine.insert(p));
            }
            assert!(
                blocks.iter().all(|p| mine.contains(p)),
                "not every block back"
            );
            free_all(a, c, &mine.into_iter().collect::<Vec<_>>());
            OWNED.fetch_sub(1, Ordering::Relaxed);
        });
    }

    #[test]
    fn an_outbox_holds_at_most_its_byte_budget() {
        for (c, &batch) in OUTBOX_BATCH.iter().enumerate() {
            let batch = batch as usize;
            assert!((1..=BATCH as usize).contains(&batch), "class {c}");
            assert!(
                batch == 1 || batch * class_size(c) <= OUTBOX_BYTES,
                "class {c}: {batch} blocks of {}",
                class_size(c)
            );
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn big_blocks_freed_by_another_heap_reach_their_owner_a_few_at_a_time() {
        // In earlier versions a freeing heap held 64 blocks of every class (16 MiB of the
        // 256 KiB class) before it sent them.
        with_heap(|owner| {
            for size in [256 << 10, 64 << 10, 16 << 10] {
                let c = class_of(size);
                let batch = OUTBOX_BATCH[c] as usize;
                let blocks = fill(owner, c, 2 * batch);
                with_heap(|freer| {
                    for (k, &p) in blocks.iter().enumerate() {
                        assert_eq!(
                            owner.remote[c].is_empty(),
                            k < batch,
                            "{size} bytes: {k} blocks sent"
                        );
                        // SAFETY: this thread owns `freer`; `p` is `owner`'s block of
                        // class `c`, which nobody uses.
                        unsafe { freer.send_remote(owner.index(), c, p) };
                    }
                    // SAFETY: this thread owns `freer`.
                    unsafe { freer.flush_outboxes() };
                });
                // The blocks come back (after what the magazine still holds).
                let mut back = HashSet::new();
                while !blocks.iter().all(|p| back.contains(p)) && back.len() < 2 * MAG {
                    // SAFETY: this thread owns `owner`.
                    assert!(back.insert(unsafe { owner.alloc(c) }), "{size} bytes");
                }
                assert!(blocks.iter().all(|p| back.contains(p)), "{size} bytes");
                free_all(owner, c, &back.into_iter().collect::<Vec<_>>());
            }
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn blocks_go_to_the_overflow_list_when_the_depot_cannot_grow() {
        with_heap(|h| {
            let c = class_of(1000);
            let n = 20 * MAG;
            let blocks = fill(h, c, n);
            let carved = h.bins[c].carved.load(Ordering::Relaxed);
            // The first half of the frees finds the depot refusing, the rest finds it
            // growing again: both stores hold blocks.
            REFUSE_DEPOT.with(|r| r.set(true));
            free_all(h, c, &blocks[..n / 2]);
            // SAFETY: this thread owns `h`.
            let in_depot = || unsafe { *h.bins[c].depot_len.get() };
            assert_eq!(in_depot(), 0);
            // SAFETY: as above.
            assert!(!unsafe { *h.bins[c].overflow.get() }.is_null());
            REFUSE_DEPOT.with(|r| r.set(false));
            free_all(h, c, &blocks[n / 2..]);
            assert!(in_depot() > 0);
            // Every block cut is free: those handed out and the magazine's leftovers.
            let free = listed(h, c) + u64::from(h.mags[c].count.load(Ordering::Relaxed));
            assert_eq!(free, carved);
            let again = take_every_free_block(h, c, carved);
            assert!(blocks.iter().all(|p| again.contains(p)), "a block was lost");
            free_all(h, c, &again.into_iter().collect::<Vec<_>>());
        });
    }
}
