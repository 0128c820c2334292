//! The runner binaries' process allocator: the system allocator (glibc malloc), or
//! mimalloc, jemalloc or handoff-alloc when the process was started with
//! `HANDOFF_ALLOCATOR=mimalloc|jemalloc|handoff` (the allocator contenders' child
//! processes are started that way, see `lab::child`). Only `runner-contenders` (the
//! `contenders` feature) links mimalloc and jemalloc; `runner` never starts a child
//! that asks for them, and one that did would stop at its first allocation with a
//! message rather than measure the system allocator under their names. The choice is made
//! once, at the first allocation, from the raw environment (no allocation is needed
//! to read it), and never changes, so every block is freed by the allocator that made
//! it. The library and its tests keep Rust's default allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;
const JEMALLOC: u8 = 3;
const HANDOFF: u8 = 4;

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
        let name: &[u8] = if value.is_null() {
            b""
        } else {
            // SAFETY: a non-null result of `getenv` is a NUL-terminated string.
            unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes()
        };
        let want = match name {
            b"mimalloc" => MIMALLOC,
            b"jemalloc" => JEMALLOC,
            b"handoff" => HANDOFF,
            _ => SYSTEM,
        };
        #[cfg(not(feature = "contenders"))]
        if want == MIMALLOC || want == JEMALLOC {
            not_linked();
        }
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

/// Calls `$method` on the allocator `$which` names (mimalloc and jemalloc only where
/// they are linked: elsewhere `decide` never picks them).
macro_rules! dispatch {
    ($which:expr, $method:ident ( $($arg:expr),* )) => {
        match $which {
            #[cfg(feature = "contenders")]
            MIMALLOC => mimalloc::MiMalloc.$method($($arg),*),
            #[cfg(feature = "contenders")]
            JEMALLOC => tikv_jemallocator::Jemalloc.$method($($arg),*),
            HANDOFF => handoff_alloc::HandoffAlloc.$method($($arg),*),
            _ => System.$method($($arg),*),
        }
    };
}

/// Stops a process asked for an allocator this binary does not link (writing to
/// stderr allocates nothing).
#[cfg(not(feature = "contenders"))]
#[cold]
fn not_linked() -> ! {
    let msg = b"runner: HANDOFF_ALLOCATOR names mimalloc or jemalloc, which only runner-contenders links\n";
    // SAFETY: writes a static buffer of its own length to stderr; aborts after.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

// SAFETY: every call goes to the one allocator chosen before the first block was
// made, which upholds `GlobalAlloc`'s contract itself; a block is always returned to
// the allocator that made it because the choice never changes.
unsafe impl GlobalAlloc for Chosen {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { dispatch!(self.which(), alloc(layout)) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this same allocator (the choice never changes).
        unsafe { dispatch!(self.which(), dealloc(ptr, layout)) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { dispatch!(self.which(), alloc_zeroed(layout)) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this same allocator; the caller's contract.
        unsafe { dispatch!(self.which(), realloc(ptr, layout, new_size)) }
    }
}
