//! glibc's extensions to the allocation API, answered with handoff-alloc's own figures
//! instead of glibc's (whose arenas a preloaded program never uses), and the
//! compatibility names programs and libraries still call.

use alloc_core::capi;
use core::ffi::{c_char, c_int, c_void};
use core::fmt::Write;

/// glibc's `struct mallinfo2`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Mallinfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

/// glibc's `struct mallinfo`: the same fields as `int`s (which wrap beyond 2 GiB, as
/// glibc's do).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Mallinfo {
    arena: c_int,
    ordblks: c_int,
    smblks: c_int,
    hblks: c_int,
    hblkhd: c_int,
    usmblks: c_int,
    fsmblks: c_int,
    uordblks: c_int,
    fordblks: c_int,
    keepcost: c_int,
}

/// `mallinfo2()`: `arena` is the memory the allocator took for small blocks (its
/// committed arena and its chunks outside it), `uordblks` the bytes of small blocks in
/// use (at their class's size), `fordblks` the rest of `arena`, `ordblks` the free small
/// blocks, `hblks` and `hblkhd` the blocks of the large range and the big mappings in
/// use and their bytes; `smblks`, `usmblks`, `fsmblks` and `keepcost` are 0 (no fast
/// bins, no top chunk).
#[no_mangle]
pub extern "C" fn mallinfo2() -> Mallinfo2 {
    let s = alloc_core::stats();
    let arena = s.committed_bytes + s.spill_chunks * (1 << 20);
    let used = s.small_bytes_live + s.spill_bytes_live;
    let to = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    Mallinfo2 {
        arena: to(arena),
        ordblks: to(s.blocks_carved.saturating_sub(s.small_blocks_live)),
        hblks: to(s.big_blocks_live),
        hblkhd: to(s.big_bytes_live),
        uordblks: to(used),
        fordblks: to(arena.saturating_sub(used)),
        ..Mallinfo2::default()
    }
}

/// `mallinfo()`: [`mallinfo2`] in `int`s.
#[no_mangle]
pub extern "C" fn mallinfo() -> Mallinfo {
    let m = mallinfo2();
    let i = |v: usize| v as c_int;
    Mallinfo {
        arena: i(m.arena),
        ordblks: i(m.ordblks),
        smblks: i(m.smblks),
        hblks: i(m.hblks),
        hblkhd: i(m.hblkhd),
        usmblks: i(m.usmblks),
        fsmblks: i(m.fsmblks),
        uordblks: i(m.uordblks),
        fordblks: i(m.fordblks),
        keepcost: i(m.keepcost),
    }
}

/// glibc's name for `mallinfo`.
#[no_mangle]
pub extern "C" fn __libc_mallinfo() -> Mallinfo {
    mallinfo()
}

/// A line of text built on the stack (no allocation), NUL-terminated for C.
struct Text {
    buf: [u8; 2048],
    len: usize,
}

impl Text {
    fn new() -> Text {
        Text {
            buf: [0; 2048],
            len: 0,
        }
    }
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        // One byte stays for the NUL.
        let k = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + k].copy_from_slice(&s.as_bytes()[..k]);
        self.len += k;
        Ok(())
    }
}

/// `malloc_stats()`: the allocator's figures, one per line, on standard error.
/// (`C-unwind`: `write` is a cancellation point, and a thread cancelled there unwinds
/// through this function, which holds nothing to drop.)
#[no_mangle]
pub extern "C-unwind" fn malloc_stats() {
    let s = alloc_core::stats();
    let m = mallinfo2();
    let mut t = Text::new();
    // Writing into the stack buffer cannot fail (it cuts at its end).
    let _ = write!(
        t,
        "handoff-alloc ({:?} arena, {} heaps, {} owned now, {} ever used):\n\
         system bytes     = {:>12}\n\
         in use bytes     = {:>12}\n\
         big blocks       = {:>12}\n\
         big bytes        = {:>12}\n\
         mapped bytes     = {:>12}\n\
         released bytes   = {:>12}\n\
         remote frees     = {:>12}\n",
        s.arena_mode,
        s.heaps,
        s.heaps_owned,
        s.heaps_used,
        m.arena,
        m.uordblks,
        m.hblks,
        m.hblkhd,
        s.mapped_bytes,
        s.released_bytes,
        s.remote_frees,
    );
    // SAFETY: writes `t.len` initialised bytes to standard error.
    unsafe { libc::write(2, t.buf.as_ptr().cast(), t.len) };
}

/// `malloc_info(options, stream)`: the allocator's figures as XML on `stream` (the
/// shape of glibc's: `<malloc version=...>` with `total`, `system` and `aspace`
/// elements). `options` must be 0 (else `EINVAL` and -1).
///
/// # Safety
/// `stream` is an open `FILE *`. (`C-unwind`, as `malloc_stats`: `fputs` is a
/// cancellation point.)
#[no_mangle]
pub unsafe extern "C-unwind" fn malloc_info(options: c_int, stream: *mut libc::FILE) -> c_int {
    if options != 0 {
        // SAFETY: the calling thread's errno.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    }
    let s = alloc_core::stats();
    let m = mallinfo2();
    let mut t = Text::new();
    let _ = write!(
        t,
        "<malloc version=\"handoff-alloc-1\">\n\
         <heaps count=\"{}\" owned=\"{}\" used=\"{}\"/>\n\
         <total type=\"small\" count=\"{}\" size=\"{}\"/>\n\
         <total type=\"free\" count=\"{}\" size=\"{}\"/>\n\
         <total type=\"mmap\" count=\"{}\" size=\"{}\"/>\n\
         <system type=\"current\" size=\"{}\"/>\n\
         <system type=\"released\" size=\"{}\"/>\n\
         <aspace type=\"total\" size=\"{}\"/>\n\
         </malloc>\n",
        s.heaps,
        s.heaps_owned,
        s.heaps_used,
        s.small_blocks_live + s.spill_blocks_live,
        m.uordblks,
        m.ordblks,
        m.fordblks,
        m.hblks,
        m.hblkhd,
        s.mapped_bytes,
        s.released_bytes,
        s.arena_bytes,
    );
    // SAFETY: `t.buf` holds `t.len` bytes and a NUL after them; `stream` is the
    // caller's open stream. (The C library may allocate its buffer: a call into this
    // allocator, which holds no lock here.)
    if unsafe { libc::fputs(t.buf.as_ptr().cast::<c_char>(), stream) } < 0 {
        return -1;
    }
    0
}

/// `mallopt(param, value)`: no parameter changes this allocator. glibc's own
/// parameters (`M_MXFAST` 1, `M_NLBLKS` 2, `M_GRAIN` 3, `M_KEEP` 4, `M_TRIM_THRESHOLD`
/// -1, `M_TOP_PAD` -2, `M_MMAP_THRESHOLD` -3, `M_MMAP_MAX` -4, `M_CHECK_ACTION` -5,
/// `M_PERTURB` -6, `M_ARENA_TEST` -7, `M_ARENA_MAX` -8) are accepted and ignored
/// (returns 1, as glibc on success), so that a program that tunes glibc runs as it
/// did; any other is refused (returns 0).
#[no_mangle]
pub extern "C" fn mallopt(param: c_int, _value: c_int) -> c_int {
    c_int::from((-8..=4).contains(&param) && param != 0)
}

/// glibc's name for `mallopt`.
#[no_mangle]
pub extern "C" fn __libc_mallopt(param: c_int, value: c_int) -> c_int {
    mallopt(param, value)
}

/// `cfree(p)`: `free(p)`. glibc keeps `cfree` only as a compatibility symbol, which
/// binaries linked before glibc 2.26 still call; without this one it reached glibc's
/// `free` with this allocator's block and aborted.
///
/// # Safety
/// As for `free`.
#[no_mangle]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: C's contract, passed on.
    unsafe { capi::free(p.cast()) }
}

/// C23's `free_sized(p, size)`: `free(p)` (the size is not needed: the block's address
/// says what it is).
///
/// # Safety
/// As for `free`.
#[no_mangle]
pub unsafe extern "C" fn free_sized(p: *mut c_void, _size: usize) {
    // SAFETY: C's contract, passed on.
    unsafe { capi::free(p.cast()) }
}

/// C23's `free_aligned_sized(p, align, size)`: `free(p)`.
///
/// # Safety
/// As for `free`.
#[no_mangle]
pub unsafe extern "C" fn free_aligned_sized(p: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: C's contract, passed on.
    unsafe { capi::free(p.cast()) }
}
