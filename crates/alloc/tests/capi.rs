//! `handoff_alloc::capi`, the C allocation API, called from Rust: its contracts
//! (crates/alloc-preload's C suite checks them again through the C names, preloaded).
//! An integration test, in a process of its own: a thread that allocates here leaves
//! its heap, with free blocks, to the next thread, and the heap unit tests in the
//! library's test binary count the blocks of the heaps they take.
#![cfg(all(target_os = "linux", target_pointer_width = "64"))]

use core::ptr;
use handoff_alloc::capi::*;

const PAGE: usize = 4096;

#[test]
fn the_c_functions_keep_their_contracts() {
    // SAFETY: each block is used within its size and freed once.
    unsafe {
        let a = malloc(0);
        let b = malloc(0);
        assert!(!a.is_null() && !b.is_null() && a != b);
        assert!(owns(a) && usable_size(a) >= 1);
        free(a);
        free(b);
        free(ptr::null_mut());
        let z = calloc(1000, 3);
        assert!((0..3000).all(|i| *z.add(i) == 0));
        assert!(calloc(usize::MAX / 2, 3).is_null());
        assert_eq!(*libc::__errno_location(), libc::ENOMEM);
        let p = realloc(z, 100_000);
        assert!((0..3000).all(|i| *p.add(i) == 0));
        assert!(realloc(p, usize::MAX).is_null());
        let q = realloc(p, 8 << 20);
        assert!(!q.is_null() && usable_size(q) >= 8 << 20);
        assert!(realloc(q, 0).is_null());
        for shift in 3..=21 {
            let mut out = ptr::null_mut();
            assert_eq!(posix_memalign(&mut out, 1 << shift, 100), 0);
            assert_eq!(out.addr() % (1 << shift), 0);
            assert!(usable_size(out) >= 100);
            out.write_bytes(1, 100);
            free(out);
        }
        let mut out = ptr::null_mut();
        assert_eq!(posix_memalign(&mut out, 24, 8), libc::EINVAL);
        assert_eq!(posix_memalign(&mut out, 4, 8), libc::EINVAL);
        assert!(out.is_null());
        assert!(aligned_alloc(24, 8).is_null());
        let m = memalign(24, 8);
        assert_eq!(m.addr() % 32, 0);
        free(m);
        let v = pvalloc(1);
        assert_eq!((v.addr() % PAGE, usable_size(v) >= PAGE), (0, true));
        free(v);
    }
}
