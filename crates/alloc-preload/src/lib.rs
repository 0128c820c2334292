//! handoff-alloc as the C library's allocator, for any program:
//!
//! ```sh
//! cargo build --release -p handoff-alloc-preload
//! LD_PRELOAD=$PWD/target/release/libhandoff_alloc.so ./my_system
//! ```
//!
//! `libhandoff_alloc.so` exports the C allocation API (`malloc`, `free`, `calloc`,
//! `realloc`, `reallocarray`, `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`,
//! `pvalloc`, `malloc_usable_size`), glibc's `__libc_*` names for them, and
//! `malloc_trim`, on handoff-alloc's heaps (`handoff_alloc::capi`, where each
//! function's contract is written). Preloaded, it replaces the C library's allocator for
//! the whole process: C code, C++'s `operator new` and `delete` (libstdc++ calls
//! `malloc`, `aligned_alloc` and `free`), and the Rust standard library's `System`
//! allocator. Linked into a program instead, it does the same.
//!
//! `handoff_alloc_owns(p)` tells whether `p` lies in memory this allocator manages, for
//! tests that check a program's blocks came from it.

#![allow(clippy::missing_safety_doc)]

mod cxx;
mod glibc;

use alloc_core::capi;
use core::ffi::{c_int, c_void};

/// C's `malloc`: [`capi::malloc`].
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::malloc(size).cast() }
}

/// C's `free`: [`capi::free`].
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: C's contract, passed on.
    unsafe { capi::free(p.cast()) }
}

/// C's `calloc`: [`capi::calloc`].
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::calloc(n, size).cast() }
}

/// C's `realloc`: [`capi::realloc`].
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::realloc(p.cast(), size).cast() }
}

/// C's `reallocarray`: [`capi::reallocarray`].
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::reallocarray(p.cast(), n, size).cast() }
}

/// C's `posix_memalign`: [`capi::posix_memalign`].
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    // SAFETY: C's contract, passed on.
    unsafe { capi::posix_memalign(out.cast(), align, size) }
}

/// C's `aligned_alloc`: [`capi::aligned_alloc`].
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::aligned_alloc(align, size).cast() }
}

/// C's `memalign`: [`capi::memalign`].
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::memalign(align, size).cast() }
}

/// C's `valloc`: [`capi::valloc`].
#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::valloc(size).cast() }
}

/// C's `pvalloc`: [`capi::pvalloc`].
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { capi::pvalloc(size).cast() }
}

/// C's `malloc_usable_size`: [`capi::usable_size`].
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    // SAFETY: C's contract, passed on.
    unsafe { capi::usable_size(p.cast()) }
}

/// glibc's `malloc_trim`: gives free memory back to the system now
/// (`handoff_alloc::trim`); returns 1, as glibc does when it released memory.
#[no_mangle]
pub extern "C" fn malloc_trim(_pad: usize) -> c_int {
    alloc_core::trim();
    1
}

/// The library's constructor: the allocator's fork handlers are registered before the
/// program runs (`capi::init`).
extern "C" fn init() {
    capi::init();
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// 1 when `p` lies in memory this allocator manages, else 0.
#[no_mangle]
pub extern "C" fn handoff_alloc_owns(p: *const c_void) -> c_int {
    c_int::from(capi::owns(p.cast()))
}

// glibc's own names for its allocator, which a program (or a library that wraps
// `malloc`) may call directly.

/// glibc's name for `malloc`.
#[no_mangle]
pub unsafe extern "C" fn __libc_malloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { malloc(size) }
}

/// glibc's name for `free`.
#[no_mangle]
pub unsafe extern "C" fn __libc_free(p: *mut c_void) {
    // SAFETY: C's contract, passed on.
    unsafe { free(p) }
}

/// glibc's name for `calloc`.
#[no_mangle]
pub unsafe extern "C" fn __libc_calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { calloc(n, size) }
}

/// glibc's name for `realloc`.
#[no_mangle]
pub unsafe extern "C" fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { realloc(p, size) }
}

/// glibc's name for `memalign`.
#[no_mangle]
pub unsafe extern "C" fn __libc_memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { memalign(align, size) }
}

/// glibc's name for `valloc`.
#[no_mangle]
pub unsafe extern "C" fn __libc_valloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { valloc(size) }
}

/// glibc's name for `pvalloc`.
#[no_mangle]
pub unsafe extern "C" fn __libc_pvalloc(size: usize) -> *mut c_void {
    // SAFETY: C's contract, passed on.
    unsafe { pvalloc(size) }
}
