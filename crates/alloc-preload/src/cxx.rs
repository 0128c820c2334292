//! C++'s `operator new` and `operator delete`, every form (plain and array, sized,
//! aligned, `nothrow`), exported under their Itanium ABI names as jemalloc, mimalloc and
//! tcmalloc do: a C++ program's `new` comes here directly instead of through libstdc++'s
//! own `operator new`, which calls `malloc`.
//!
//! When memory runs out, `new` does what the standard says: it calls the program's new
//! handler (`std::get_new_handler`) and tries again while there is one; without one, the
//! throwing forms throw `std::bad_alloc` and the `nothrow` forms return null. Both come
//! from libstdc++, looked up when first needed (a program that uses `new` has it
//! loaded); the exception unwinds through these functions (`extern "C-unwind"`). Where
//! libstdc++ is not loaded, a throwing `new` that fails stops the process with a
//! message. (A new handler that throws out of a `nothrow` form propagates its exception,
//! where libstdc++'s own `nothrow` forms would catch it and return null.)

use alloc_core::capi;
use core::ffi::{c_char, c_void};

/// Looks a symbol up among the process's loaded objects.
fn symbol(name: &[u8]) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; `dlsym` only reads it.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast::<c_char>()) }
}

/// A block for `new`: `align` 0 for the plain forms (at least the default 16 of
/// `__STDCPP_DEFAULT_NEW_ALIGNMENT__`, which `malloc` gives every size above 8).
#[inline]
fn allocate(size: usize, align: usize) -> *mut c_void {
    // SAFETY: C's contracts; `align` is a power of two (C++ requires it).
    unsafe {
        if align == 0 {
            capi::malloc(size).cast()
        } else {
            capi::memalign(align, size).cast()
        }
    }
}

/// The slow path of a `new` that found no memory: the new handler, then `bad_alloc` or
/// null.
#[cold]
#[inline(never)]
fn out_of_memory(size: usize, align: usize, nothrow: bool) -> *mut c_void {
    loop {
        let get = symbol(b"_ZSt15get_new_handlerv\0");
        let handler = if get.is_null() {
            None
        } else {
            // SAFETY: `std::get_new_handler()` of libstdc++: no argument, returns the
            // handler or null.
            let get: extern "C" fn() -> Option<unsafe extern "C-unwind" fn()> =
                unsafe { core::mem::transmute(get) };
            get()
        };
        match handler {
            Some(h) => {
                // SAFETY: the program's new handler; it frees memory, throws, or ends
                // the program.
                unsafe { h() };
                let p = allocate(size, align);
                if !p.is_null() {
                    return p;
                }
            }
            None if nothrow => return core::ptr::null_mut(),
            None => {
                let throw = symbol(b"_ZSt17__throw_bad_allocv\0");
                if !throw.is_null() {
                    // SAFETY: libstdc++'s `std::__throw_bad_alloc()`: throws
                    // `std::bad_alloc`, never returns.
                    let throw: unsafe extern "C-unwind" fn() -> ! =
                        unsafe { core::mem::transmute(throw) };
                    // SAFETY: as above.
                    unsafe { throw() };
                }
                // SAFETY: writes a fixed message; abort does not return.
                unsafe {
                    let msg = b"handoff-alloc: operator new: out of memory, and no std::bad_alloc to throw; aborting\n";
                    libc::write(2, msg.as_ptr().cast(), msg.len());
                    libc::abort()
                }
            }
        }
    }
}

#[inline]
fn new(size: usize, align: usize, nothrow: bool) -> *mut c_void {
    let p = allocate(size, align);
    if p.is_null() {
        out_of_memory(size, align, nothrow)
    } else {
        p
    }
}

#[inline]
fn delete(p: *mut c_void) {
    // SAFETY: C++'s contract: `p` is null or a block from `new` that nobody uses again.
    unsafe { capi::free(p.cast()) }
}

macro_rules! news {
    ($($name:ident($($arg:ident: $t:ty),*) => $align:expr, $nothrow:expr;)*) => {$(
        /// An `operator new` (see the module's documentation).
        #[no_mangle]
        pub extern "C-unwind" fn $name(size: usize $(, $arg: $t)*) -> *mut c_void {
            new(size, $align, $nothrow)
        }
    )*};
}

macro_rules! deletes {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        /// An `operator delete` (see the module's documentation).
        ///
        /// # Safety
        /// C++'s: `p` is null or a block from `operator new` that nobody uses again.
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *mut c_void $(, $arg: $t)*) {
            $(let _ = $arg;)*
            delete(p)
        }
    )*};
}

/// `std::nothrow_t` as a parameter: a reference, never read.
type Nothrow = *const c_void;

news! {
    _Znwm() => 0, false;
    _Znam() => 0, false;
    _ZnwmRKSt9nothrow_t(_nt: Nothrow) => 0, true;
    _ZnamRKSt9nothrow_t(_nt: Nothrow) => 0, true;
    _ZnwmSt11align_val_t(align: usize) => align, false;
    _ZnamSt11align_val_t(align: usize) => align, false;
    _ZnwmSt11align_val_tRKSt9nothrow_t(align: usize, _nt: Nothrow) => align, true;
    _ZnamSt11align_val_tRKSt9nothrow_t(align: usize, _nt: Nothrow) => align, true;
}

deletes! {
    _ZdlPv();
    _ZdaPv();
    _ZdlPvm(size: usize);
    _ZdaPvm(size: usize);
    _ZdlPvRKSt9nothrow_t(nt: Nothrow);
    _ZdaPvRKSt9nothrow_t(nt: Nothrow);
    _ZdlPvSt11align_val_t(align: usize);
    _ZdaPvSt11align_val_t(align: usize);
    _ZdlPvmSt11align_val_t(size: usize, align: usize);
    _ZdaPvmSt11align_val_t(size: usize, align: usize);
    _ZdlPvSt11align_val_tRKSt9nothrow_t(align: usize, nt: Nothrow);
    _ZdaPvSt11align_val_tRKSt9nothrow_t(align: usize, nt: Nothrow);
}
