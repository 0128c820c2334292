//! The runner binary's process allocator: the system allocator (glibc malloc), or
//! mimalloc when the process was started with `HANDOFF_ALLOCATOR=mimalloc` (the
//! pipeline's `mimalloc` variant re-executes the runner that way). The choice is made
//! once, at the first allocation, from the raw environment (no allocation is needed
//! to read it), and never changes, so every block is freed by the allocator that made
//! it. The library and its tests keep Rust's default allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;

/// The allocator, chosen at the first allocation.
pub struct Chosen {
    which: AtomicU8,
}

impl Chosen {
    /// Undecided until the first allocation.
    pub const fn new() -> Chosen {
        Chosen {
            which: AtomicU8::new(UNDECIDED),
        }
    }

    #[inline]
    fn which(&self) -> u8 {
        match self.which.load(Ordering::Relaxed) {
            UNDECIDED => self.decide(),
            w => w,
        }
    }

    #[cold]
    fn decide(&self) -> u8 {
        // SAFETY: `getenv` reads the environment block and allocates nothing; the
        // name is a NUL-terminated literal. The runner sets no variables while
        // single-threaded start-up runs, so nothing writes the block concurrently.
        let value = unsafe { libc::getenv(c"HANDOFF_ALLOCATOR".as_ptr()) };
        let mi = !value.is_null()
            // SAFETY: a non-null result of `getenv` is a NUL-terminated string.
            && unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes() == b"mimalloc";
        let want = if mi { MIMALLOC } else { SYSTEM };
        // The first decision wins; every thread decides the same anyway.
        match self
            .which
            .compare_exchange(UNDECIDED, want, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => want,
            Err(already) => already,
        }
    }
}

// SAFETY: every call goes to the one allocator chosen before the first block was
// made, which upholds `GlobalAlloc`'s contract itself; a block is always returned to
// the allocator that made it because the choice never changes.
unsafe impl GlobalAlloc for Chosen {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.which() == MIMALLOC {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.which() == MIMALLOC {
            // SAFETY: `ptr` came from this same allocator (the choice never changes).
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        } else {
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.which() == MIMALLOC {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.which() == MIMALLOC {
            // SAFETY: `ptr` came from this same allocator; the caller's contract.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        } else {
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}
