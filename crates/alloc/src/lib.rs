#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! A size-class global allocator for Rust hot paths, after the write-up "(Re)Actor
//! Allocation at 15 CPU Cycles", made correct for every Rust program: any thread may
//! allocate, and any thread may free what another allocated.
//!
//! ```
//! use handoff_alloc::HandoffAlloc;
//!
//! #[global_allocator]
//! static GLOBAL: HandoffAlloc = HandoffAlloc;
//!
//! let v: Vec<u64> = (0..1000).collect();
//! assert_eq!(v.iter().sum::<u64>(), 499_500);
//! let s = handoff_alloc::stats();
//! assert!(s.small_blocks_live >= 1);
//! ```
//!
//! # Design
//!
//! - **Thread-local heaps.** Each thread claims one of 127 heaps the first time it
//!   allocates or frees. An allocation pops a block from its heap's magazine for the
//!   size class (an array of up to 63 free blocks); a free of one of its own blocks
//!   pushes it back. Neither takes a lock or an atomic read-modify-write, nor touches
//!   the block. A full magazine spills half to the class's depot (an array of free
//!   blocks' addresses kept outside the blocks, so spilling and refilling touch no
//!   block), an empty one refills half from it or, in address order, from never-used
//!   memory.
//! - **Half-exponent size classes**: 8, 16, 24, 32, 48, 64, 96, ... 262144 (256 KiB),
//!   the class computed without a branch from the size's top two bits ([`class`]).
//! - **The class and the owner are in the pointer.** The allocator reserves one 16 TiB
//!   range of address space (committed as it is used, first what a refill needs and
//!   then in steps of up to 1 MiB; once a region has 4 MiB, each new MiB is backed at once, its page
//!   faults taken in one call rather
//!   than on the allocation path). Every heap owns a
//!   4 GiB region per class inside it, so the bits of a block's offset from the arena
//!   base name its heap and its class. A free reads them from the address and loads no
//!   header (the layout's class serves only as a hint that, when it matches, gives the
//!   magazine a constant address for a constant layout). Each class's blocks start one
//!   page further into their region than the previous class's, so the classes' pages do
//!   not share their lower page-number bits.
//! - **Remote frees.** A block freed by a thread that does not own it is collected in
//!   the freeing thread's batch for its owner and class; a batch of 64 blocks (or of
//!   256 KiB, for bigger classes) goes to the owner's stack for that class with one
//!   compare-and-swap. When the owner's magazine of the class runs dry, it takes that
//!   whole stack with one swap, before its depot, and hands its blocks out one per
//!   allocation, so it never walks a chain of lines another core wrote. A
//!   thread flushes its batches when it exits, when it commits new memory, and when it
//!   calls [`flush`].
//! - **Thread exit.** An exiting thread gives its heap back (from a pthread key's
//!   destructor, which takes no loader lock and runs after every thread-local
//!   destructor, so a plugin's threads and a thread whose first call is in a key
//!   destructor are covered); the next thread to start
//!   claims it, with its depots and memory (of the classes of 8 KiB and more, one
//!   refill's worth: the rest becomes spare blocks that any heap takes before cutting
//!   new ones, their pages given back after a second unused), and reclaims the blocks freed to it in
//!   between. Blocks live at exit and freed later by others are therefore never lost,
//!   and they do not wait for that: a heap that runs out of a class, before it cuts new
//!   memory, borrows up to 64 free blocks of it from a heap nobody owns: those other
//!   threads returned to it, then those its thread kept (freed again, they go back to
//!   that heap); then it takes the blocks other threads returned to any other heap that
//!   its thread has not taken yet. An exiting thread gathers its free blocks into its depots, sorted, so
//!   the next owner gets them in address order, not in the order of the frees.
//! - **Memory back to the system.** A live thread keeps the free blocks it uses
//!   resident; once per purge delay at most (250 ms by default; see "Settings"), on its
//!   slow paths, it gives back (`MADV_DONTNEED`) the pages of free blocks it has not
//!   taken for that long (beyond 64 KiB; [`trim`] gives them back at once). With
//!   purging off ([`set_purge_delay`]`(None)`) a live thread never makes that call by
//!   itself. A heap whose thread exited gives back at
//!   once the pages of the blocks other threads returned to it, and, once no thread has
//!   claimed it for a second, every whole page that only free blocks cover (beyond
//!   64 KiB), when another thread starts or exits; blocks of 16 KiB or more that other
//!   threads free to such a heap give back their pages past the first at once, and
//!   smaller ones go back a second after they came.
//!   Resident memory stays bounded in a program whose threads come and go
//!   (docs/alloc.md, "When memory goes back to the system").
//! - **Large blocks.** Above 256 KiB and up to 4 MiB (at most page-aligned), a block is
//!   a slot of one of 16 large classes in a range reserved once; committed slots stay
//!   one mapping however many are freed, and a freed slot gives its memory back (but
//!   one freed slot of up to 1 MiB per class); a slot freed twice stops the process.
//! - **Big blocks.** Above 4 MiB (or aligned beyond a page; a request aligned beyond
//!   a class's 128 bytes and up to a page is served inside a bigger class's block), a
//!   block is a page-granular mapping of its own, recorded in a table outside every
//!   block (no header), so a `free` of any address outside the arena knows exactly
//!   whether it is a block. Freed mappings up to 1 MiB are cached for reuse (at any
//!   alignment; [`trim`] gives them back); bigger ones are unmapped, returning the
//!   memory to the system, and one that `realloc` grows moves its mapping (`mremap`)
//!   instead of being copied.
//!   One that `realloc` shrinks stays in place and, when that frees at least 64 KiB,
//!   gives the tail of its mapping back to the system.
//! - **The shared heap.** Heap 0 is never claimed: threads that find no free heap (more
//!   than 127 alive at once; they claim one as soon as one is free), or that allocate
//!   while their thread-local storage is being destroyed, use it under a lock that spins
//!   briefly, then sleeps on a futex.
//! - **The operating system's limits.** Where the 16 TiB reservation is refused (a
//!   limit on the address space, `ulimit -v`; a kernel with a small one), the arena is
//!   a smaller one of the same layout that fits a quarter of the limit
//!   ([`class::GEOMETRIES`]), with the same fast paths. Small requests no arena can
//!   serve (none could be reserved, or a heap's 4 GiB region of the class is full) come
//!   from chunks of 1 MiB outside it, each cut into blocks of one class (the 256 KiB
//!   class from the large range first), so a program under a tight limit gets about as
//!   far as with the C library's allocator. A mapping the system refuses to unmap is
//!   kept for reuse, its pages released.
//!   [`stats`] reports the mode ([`ArenaMode`]).
//! - **Fork.** `pthread_atfork` handlers hold every lock of the allocator across a
//!   `fork`, so a forked child can always allocate, whatever the parent's other threads
//!   were doing; the forking thread passes through them, so fork handlers the program
//!   registered earlier may allocate. The heaps those threads owned stay theirs in the
//!   child: the child's heaps may take only the blocks freed back to them.
//! - **Misuse.** The allocation paths never panic: a failed check (an address that is
//!   no block, a block freed twice where that is cheap to see, a free list a write after
//!   free corrupted) writes one line to standard error and aborts.
//!
//! Small blocks are never returned to the system: freed blocks go back to their heap's
//! magazines and depots and are reused, the document's choice.
//!
//! # Settings
//!
//! One, for now: the purge delay, how long a live thread's unused free memory stays
//! resident before the thread gives it back on its slow path, or `None` (purging off:
//! a latency-critical thread never makes the `madvise` call by itself; its memory goes
//! back when it calls [`trim`] at a moment of its choosing, and when it exits).
//! [`set_purge_delay`] sets it at run time; the environment variable
//! `HANDOFF_ALLOC_PURGE_DELAY_MS` (milliseconds, or `off`) sets it for a process
//! before it starts, C programs under `LD_PRELOAD` included. The default is 250 ms.
//!
//! ```
//! use std::time::Duration;
//! handoff_alloc::set_purge_delay(None);
//! assert_eq!(handoff_alloc::purge_delay(), None);
//! handoff_alloc::set_purge_delay(Some(Duration::from_secs(1)));
//! ```
//!
//! # What each call costs
//!
//! "The system" below is a system call; "commits" is `mprotect` of reserved address
//! space (its pages fault in when first touched).
//!
//! | call | progress | takes memory from the system | system calls | worst case |
//! |---|---|---|---|---|
//! | `alloc` / `dealloc` of a small block (up to 256 KiB) from the thread's magazine | wait-free | no | no | O(1) |
//! | the same when the magazine is empty or full (a refill or spill, at most once per half a magazine) | wait-free on the thread's own heap; one swap of a remote-free stack | commits a region's next step (up to 1 MiB) when it has none left | `mprotect` then; `madvise` in a purge, at most once per purge delay (never with purging off) | O(refill: 64 KiB of blocks at most) |
//! | `dealloc` of another heap's block | lock-free (one compare-and-swap per batch of 64) | no | no | O(1); a batch push per 64 frees |
//! | `realloc` | as `alloc` + `dealloc` when the block changes class (a copy of the smaller size); in place when the class fits | as `alloc` | big blocks: `mremap` to grow, `munmap` of the tail to shrink | O(size) for a copy |
//! | `alloc_zeroed` | as `alloc`, then zeroing (a big block fresh from the system is not written again) | as `alloc` | as `alloc` | O(size) |
//! | large blocks (256 KiB to 4 MiB) | blocking (a lock per large class) | commits a slot when it is first cut | `mprotect`; `madvise` when a slot is freed | O(1) |
//! | big blocks (above 4 MiB, or aligned beyond a page) | blocking (the table's lock) | a mapping | `mmap`, `munmap`, `mremap` | O(1) plus the mapping |
//! | a thread's first call | blocking (claims a heap) | reserves the arena once per process | `mmap` once; `pthread_setspecific` | O(heaps) |
//! | a thread's exit | blocking (gives its heap back) | no | `madvise` of returned blocks' pages | O(classes x depot) |
//! | the shared heap (more than 127 threads alive, or during thread-local destruction) | blocking (spins, then a futex) | as above | `futex` when contended | the lock's wait |
//! | [`flush`] | lock-free | no | no | O(batches) |
//! | [`trim`] | blocking | no | `madvise`, `munmap` of cached mappings | O(heaps x classes) |
//! | [`stats`], [`heap_stats`], [`thread_heap`] | wait-free | no | no | O(heaps x classes) |
//! | [`set_purge_delay`], [`purge_delay`] | wait-free | no | no (`getenv` reads the environment once, without allocating) | O(1) |
//!
//! The C functions of [`capi`] (`malloc`, `free`, `calloc`, `realloc`, `posix_memalign`,
//! ...; `libhandoff_alloc.so` exports them) are the same paths; `free` without a size
//! reads the class from the address, as `dealloc` does.
//!
//! # Statistics
//!
//! [`stats`] gives process totals and [`heap_stats`] one heap's, readable from any
//! thread at any time. The owners update their counters with plain stores, so a
//! reading taken while threads run is a consistent-enough snapshot, exact once they
//! stop.
//!
//! # Platforms
//!
//! 64-bit Linux. Elsewhere [`HandoffAlloc`] passes every call to [`std::alloc::System`].

#![warn(missing_docs)]

#[doc(hidden)]
pub mod arena_word;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod big;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
pub mod capi;
#[cfg(not(loom))]
pub mod class;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod fatal;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod fork;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod heap;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod large;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod lock;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod os;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod release;
#[doc(hidden)]
pub mod remote;
// On every platform: elsewhere (and under loom) the setting is kept and read back, and
// nothing purges.
mod settings;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod spill;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod stats;
mod sync;
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
pub mod takes;

pub use settings::{purge_delay, set_purge_delay, DEFAULT_PURGE_DELAY, PURGE_DELAY_ENV};
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
pub use stats::{heap_stats, stats, ArenaMode, HeapStats, Stats};

#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
mod imp;

/// Every lock of the allocator, held across a fork: each part lists its own.
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
struct AllLocks;

#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
impl fork::LockSet for AllLocks {
    fn each(mut f: impl FnMut(&'static lock::Lock)) {
        heap::fork_locks(&mut f);
        big::fork_locks(&mut f);
        large::fork_locks(&mut f);
        spill::fork_locks(&mut f);
    }

    fn in_child() {
        heap::in_fork_child();
    }
}

/// The allocator's fork handlers, registered once for every part together, before any
/// part first takes one of its locks (and, in libhandoff_alloc.so, from its constructor:
/// [`capi::init`]). Registered part by part, as each was first used, a part first used
/// while another thread ran a fork's prepare handlers could miss that fork (newer glibc
/// lets a registration through then and skips the handlers registered after the fork
/// began), and its lock could stay held in the child.
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
pub(crate) static FORK: fork::Handlers = fork::Handlers::new::<AllLocks>();

/// The allocator. Install it with `#[global_allocator]`, or call its [`GlobalAlloc`]
/// methods directly: it keeps all its state in statics, so every value of it is the
/// same allocator.
///
/// [`GlobalAlloc`]: core::alloc::GlobalAlloc
#[derive(Clone, Copy, Debug, Default)]
pub struct HandoffAlloc;

/// Under `--cfg handoff_global_alloc` (how `.ci/run` runs the workspace's tests a second
/// time, every crate linking this one), the global allocator of every binary that
/// links this crate.
#[cfg(all(
    handoff_global_alloc,
    target_os = "linux",
    target_pointer_width = "64",
    not(loom)
))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

/// Sends the remote frees this thread has collected to their owning heaps now,
/// instead of when a batch fills, the thread commits new memory, or it exits. A thread
/// that frees other threads' blocks and then goes idle for long can call it.
///
/// ```
/// handoff_alloc::flush();
/// ```
pub fn flush() {
    #[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
    heap::flush();
}

/// Gives memory back to the system now, as `malloc_trim` does: the whole pages that only
/// free blocks cover in the calling thread's heap (its magazines and the blocks other
/// threads returned to it are moved to its depots first), beyond 64 KiB, and in every
/// heap whose thread has exited (which otherwise happens once such a heap has stayed
/// unclaimed for a second, when another thread starts or exits), the spare blocks that
/// exited threads left (otherwise once nobody has taken them for a second), and the
/// freed mappings kept for reuse. The blocks stay free and are used again; their pages fault
/// in again when they are. Returns how many heaps it went through.
///
/// ```
/// let v = vec![0u8; 100 << 10];
/// drop(v);
/// let heaps = handoff_alloc::trim();
/// assert!(heaps <= 128);
/// ```
pub fn trim() -> usize {
    #[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
    return heap::trim();
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(loom))))]
    0
}

/// The number of this thread's heap (see [`heap_stats`]), or `None` while it has none:
/// before its first allocation or free, when it uses the shared heap, and on platforms
/// where the allocator passes everything to the system.
///
/// ```
/// let b = Box::new(1u64); // the thread may not have allocated through handoff-alloc
/// drop(b);
/// let _ = handoff_alloc::thread_heap();
/// ```
pub fn thread_heap() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]
    return heap::thread_heap();
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(loom))))]
    return None;
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(loom))))]
// SAFETY: every call is passed to the system allocator, which upholds the contract.
unsafe impl core::alloc::GlobalAlloc for HandoffAlloc {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
