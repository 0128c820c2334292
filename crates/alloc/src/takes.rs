//! The size-class allocator write-up's three designs for finding a block's size class at `free`, built as
//! small single-threaded allocators so that `runner alloc` can show what each step
//! buys: **Take 1** keeps a header before every block, **Take 2** one header per 4 KiB
//! page (the document's "bucket page header"), **Take 3** reads the class from the
//! pointer's bits. Take 3 also comes with power-of-two classes instead of half-exponent ones
//! (the document's other comparison).
//!
//! They are comparison contenders, not general allocators: one value serves one thread
//! (the document's (Re)Actor model: "we do NOT need our allocator to be
//! multi-threaded"), sizes go up to [`MAX_SIZE`], alignment is 8, and memory is never
//! given back until the value is dropped. [`HandoffAlloc`](crate::HandoffAlloc) is the
//! allocator for programs.
//!
//! All four lay their memory out the same way, so that only the class lookup and the
//! header bytes differ. One reservation of address space (not committed: untouched
//! pages cost no memory) is cut into groups of 32 runs of 64 KiB; run `c` of every
//! group belongs to class `c`, and a class that fills its run takes its run in the next
//! group it has not used. This is the document's Take 3 layout ("pick the page which
//! has `page_start & 0xF000 == 0x7000`") with 64 KiB runs for its 4 KiB pages, so that
//! every class up to 16 KiB fits several blocks in one run. In Take 1 and Take 3 every
//! run starts with 64 unused bytes (so their blocks lie at the same addresses, Take 1's
//! own headers aside). Take 2 formats each 4 KiB page of a run as the document's
//! "bucket page": a 16-byte header holding the class at the page's start, then blocks
//! that never cross into the next page (the page's tail that no block fits is left
//! unused); a block too big for a page after its header starts at a page's start + 16
//! and takes whole pages (the document's large items, "`CPU_page_start+16`"). So
//! `free` always finds the header at `pointer & !0xFFF`. Free blocks of a class form a
//! list linked through their first word, as in the document.
//!
//! ```
//! use handoff_alloc::takes::{Take1, Take3};
//!
//! let mut a = Take3::new().expect("address space");
//! let p = a.alloc(100);
//! assert!(!p.is_null());
//! // SAFETY: `p` came from `a.alloc` and is freed once; no size is passed.
//! unsafe { a.free(p) };
//! let mut b = Take1::new().expect("address space");
//! let q = b.alloc(24);
//! // SAFETY: as above.
//! unsafe { b.free(q) };
//! ```

use crate::class::{class_of, class_size};
use crate::os;
use core::ptr;

/// The largest size the takes serve; bigger requests get null.
pub const MAX_SIZE: usize = 16 * 1024;
/// A run: the memory a class cuts its blocks from at a time.
pub const RUN: usize = 64 * 1024;
const RUN_SHIFT: u32 = RUN.trailing_zeros();
/// Runs per group: one per class slot.
const SLOTS: usize = 32;
const GROUP: usize = RUN * SLOTS;
/// Address space one value reserves: 64 GiB, 32 768 groups.
const RESERVED: usize = 64 << 30;
/// The bytes before the first block of every run, in every take: Take 2's header (the
/// class, padded to a cache line), unused by the others, so that every take puts its
/// blocks at the same addresses (Take 1's own headers aside). Without it Take 3's
/// blocks started at the run's start, and Take 3 ran 10% slower than Take 2 in the
/// 256 MiB test even with Take 2's header read replaced by Take 3's lookup (49.6
/// against 44.6 ns per pair): a cache-placement effect, not the lookup.
const RUN_HEADER: usize = 64;
/// Take 1's header before every block (the class, padded to the blocks' alignment).
const BLOCK_HEADER: usize = 8;
/// Take 2's page: the header it reads at `free` lies at the start of the block's page.
pub const PAGE: usize = 4096;
/// Take 2's header at the start of every page (the document's large-item header size).
const PAGE_HEADER: usize = 16;

/// Take 1: a header before every block holds its class; `free` reads it.
pub const HEADER_PER_BLOCK: u8 = 1;
/// Take 2: a header at the start of every 4 KiB page holds its class; `free` masks
/// the pointer down to the page and reads it.
pub const HEADER_PER_PAGE: u8 = 2;
/// Take 3: `free` computes the class from the pointer's bits, reading nothing.
pub const CLASS_IN_POINTER: u8 = 3;

/// The document's Take 1 (header before every block), half-exponent classes.
pub type Take1 = Single<HEADER_PER_BLOCK, false>;
/// The document's Take 2 (a header per 4 KiB page), half-exponent classes.
pub type Take2 = Single<HEADER_PER_PAGE, false>;
/// The document's Take 3 (the class in the pointer's bits), half-exponent classes:
/// 8, 16, 24, 32, 48, 64, ... 12288, 16384.
pub type Take3 = Single<CLASS_IN_POINTER, false>;
/// Take 3 with power-of-two classes: 8, 16, 32, ... 16384.
pub type Take3Pow2 = Single<CLASS_IN_POINTER, true>;

/// A single-threaded size-class allocator; `LOOKUP` says how `free` finds the class
/// ([`HEADER_PER_BLOCK`], [`HEADER_PER_PAGE`] or [`CLASS_IN_POINTER`]), `POW2` whether
/// classes double at each step. See the [module](self) documentation.
pub struct Single<const LOOKUP: u8, const POW2: bool> {
    base: *mut u8,
    /// The next group index each class takes a run from.
    next_group: [usize; SLOTS],
    /// Where each class cuts its next block, and where its run ends.
    cursor: [*mut u8; SLOTS],
    end: [*mut u8; SLOTS],
    /// Each class's free list, linked through the blocks' first words.
    free: [*mut u8; SLOTS],
}

impl<const LOOKUP: u8, const POW2: bool> Single<LOOKUP, POW2> {
    /// A new allocator with its own 64 GiB reservation of address space (no memory
    /// until blocks are touched); `None` when the system refuses the reservation.
    pub fn new() -> Option<Self> {
        let base = os::reserve(RESERVED, GROUP);
        if base.is_null() {
            return None;
        }
        if !os::commit(base, RESERVED) {
            // SAFETY: the whole reservation made above, which nothing uses.
            unsafe { os::unmap(base, RESERVED) };
            return None;
        }
        Some(Single {
            base,
            next_group: [0; SLOTS],
            cursor: [ptr::null_mut(); SLOTS],
            end: [ptr::null_mut(); SLOTS],
            free: [ptr::null_mut(); SLOTS],
        })
    }

    /// The class of `size` bytes (at most [`MAX_SIZE`]).
    #[inline(always)]
    pub fn class(size: usize) -> usize {
        if POW2 {
            let v = size.max(8) - 1;
            (usize::BITS - 1 - v.leading_zeros()) as usize - 2
        } else {
            class_of(size)
        }
    }

    /// The block size of class `c`.
    #[inline(always)]
    pub fn class_bytes(c: usize) -> usize {
        if POW2 {
            8 << c
        } else {
            class_size(c)
        }
    }

    /// Bytes one block of class `c` takes in its run, header included.
    #[inline(always)]
    fn stride(c: usize) -> usize {
        Self::class_bytes(c)
            + if LOOKUP == HEADER_PER_BLOCK {
                BLOCK_HEADER
            } else {
                0
            }
    }

    /// A block of at least `size` bytes, 8-aligned; null when `size` is above
    /// [`MAX_SIZE`] or the reservation is used up.
    #[inline]
    pub fn alloc(&mut self, size: usize) -> *mut u8 {
        if size > MAX_SIZE {
            return ptr::null_mut();
        }
        let c = Self::class(size);
        let head = self.free[c];
        if head.is_null() {
            return self.cut(c);
        }
        // SAFETY: `head` is a free block of this allocator; its first word holds the
        // next free block of the class (written by `free`).
        self.free[c] = unsafe { head.cast::<*mut u8>().read() };
        head
    }

    /// A never-used block of class `c`, from its run or a new one.
    #[cold]
    #[inline(never)]
    fn cut(&mut self, c: usize) -> *mut u8 {
        if LOOKUP == HEADER_PER_PAGE {
            return self.cut_paged(c);
        }
        let stride = Self::stride(c);
        if self.end[c].addr() - self.cursor[c].addr() < stride {
            let Some(run) = self.new_run(c) else {
                return ptr::null_mut();
            };
            self.cursor[c] = run.wrapping_add(RUN_HEADER);
            self.end[c] = run.wrapping_add(RUN);
        }
        let at = self.cursor[c];
        self.cursor[c] = at.wrapping_add(stride);
        if LOOKUP == HEADER_PER_BLOCK {
            // SAFETY: `[at, at + stride)` is unused memory of the class's run; its
            // first byte is the block's header.
            unsafe { at.write(c as u8) };
            return at.wrapping_add(BLOCK_HEADER);
        }
        at
    }

    /// The next run of class `c` (the class's run in the next group it has not used);
    /// `None` when the reservation is used up.
    fn new_run(&mut self, c: usize) -> Option<*mut u8> {
        let g = self.next_group[c];
        let offset = g * GROUP + c * RUN;
        if offset + RUN > RESERVED {
            return None;
        }
        self.next_group[c] = g + 1;
        Some(self.base.wrapping_add(offset))
    }

    /// Take 2's cut: blocks packed into 4 KiB pages behind each page's header, never
    /// across a page's end; a block too big for that starts at a page's start + 16 and
    /// takes whole pages.
    fn cut_paged(&mut self, c: usize) -> *mut u8 {
        let size = Self::class_bytes(c);
        // Whole pages for a big block; otherwise the page's own room.
        let needs = if PAGE_HEADER + size > PAGE {
            (PAGE_HEADER + size).div_ceil(PAGE) * PAGE
        } else {
            PAGE_HEADER + size
        };
        loop {
            let at = self.cursor[c];
            let in_page = at.addr() & (PAGE - 1);
            let fits_page = in_page != 0 && in_page + size <= PAGE && needs <= PAGE;
            if fits_page {
                self.cursor[c] = at.wrapping_add(size);
                return at;
            }
            // A fresh page: the next page start in the run, or a new run.
            let next = if in_page == 0 {
                at
            } else {
                at.wrapping_add(PAGE - in_page)
            };
            let page = if self.end[c].addr() >= next.addr() + needs && !self.end[c].is_null() {
                next
            } else {
                let Some(run) = self.new_run(c) else {
                    return ptr::null_mut();
                };
                self.end[c] = run.wrapping_add(RUN);
                run
            };
            // SAFETY: the page's first bytes, inside the committed reservation, hold no
            // block: its header.
            unsafe { page.write(c as u8) };
            let block = page.wrapping_add(PAGE_HEADER);
            if needs > PAGE {
                self.cursor[c] = page.wrapping_add(needs);
                return block;
            }
            self.cursor[c] = block;
        }
    }

    /// The class of a block of this allocator, found the way the take finds it.
    ///
    /// # Safety
    /// `p` came from [`alloc`](Self::alloc) on this value.
    #[inline(always)]
    pub unsafe fn class_at(&self, p: *mut u8) -> usize {
        match LOOKUP {
            // SAFETY: a block of Take 1 follows its header, written when it was cut.
            HEADER_PER_BLOCK => usize::from(unsafe { p.sub(BLOCK_HEADER).read() }),
            // SAFETY: a block of Take 2 starts in a page whose first byte is its header.
            HEADER_PER_PAGE => usize::from(unsafe { p.map_addr(|a| a & !(PAGE - 1)).read() }),
            _ => (p.addr() >> RUN_SHIFT) & (SLOTS - 1),
        }
    }

    /// Gives `p` back; the class comes from `p` alone, as C's `free` gets it.
    ///
    /// # Safety
    /// `p` came from [`alloc`](Self::alloc) on this value and was not freed since.
    #[inline]
    pub unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: the caller's contract.
        let c = unsafe { self.class_at(p) };
        // SAFETY: `p` is a block of at least 8 bytes that nobody uses any more; its
        // first word links it into the class's list.
        unsafe { p.cast::<*mut u8>().write(self.free[c]) };
        self.free[c] = p;
    }
}

impl<const LOOKUP: u8, const POW2: bool> Drop for Single<LOOKUP, POW2> {
    fn drop(&mut self) {
        // SAFETY: the reservation made in `new`; every block of it dies with the value.
        unsafe { os::unmap(self.base, RESERVED) };
    }
}

impl<const LOOKUP: u8, const POW2: bool> core::fmt::Debug for Single<LOOKUP, POW2> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Single")
            .field("lookup", &LOOKUP)
            .field("pow2", &POW2)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_size_round_trips<const L: u8, const P: bool>() {
        let mut a = Single::<L, P>::new().expect("reservation");
        let mut live = Vec::new();
        for round in 0..3u64 {
            for size in (1..=MAX_SIZE)
                .step_by(37)
                .chain([8, 16, 24, 4096, MAX_SIZE])
            {
                let p = a.alloc(size);
                assert!(!p.is_null(), "size {size}");
                assert_eq!(p.addr() % 8, 0, "alignment");
                let c = Single::<L, P>::class(size);
                assert!(Single::<L, P>::class_bytes(c) >= size, "class too small");
                assert!(
                    c == 0 || Single::<L, P>::class_bytes(c - 1) < size.max(8),
                    "not the smallest class"
                );
                // SAFETY: from `alloc` just now.
                assert_eq!(unsafe { a.class_at(p) }, c, "lookup of size {size}");
                // SAFETY: the block has `size` bytes.
                unsafe { ptr::write_bytes(p, (size as u64 ^ round) as u8, size) };
                live.push((p, size, round));
            }
            // Free every other block, so lists and fresh runs both serve the next round.
            let mut keep = Vec::new();
            for (k, (p, size, r)) in live.drain(..).enumerate() {
                // SAFETY: still live.
                let bytes = unsafe { core::slice::from_raw_parts(p, size) };
                assert!(
                    bytes.iter().all(|&b| b == (size as u64 ^ r) as u8),
                    "block overwritten"
                );
                if k % 2 == 0 {
                    // SAFETY: live, freed once.
                    unsafe { a.free(p) };
                } else {
                    keep.push((p, size, r));
                }
            }
            live = keep;
        }
        let mut spans: Vec<(usize, usize)> = live.iter().map(|&(p, s, _)| (p.addr(), s)).collect();
        spans.sort_unstable();
        assert!(
            spans.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0),
            "live blocks overlap"
        );
        assert!(a.alloc(MAX_SIZE + 1).is_null());
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn take1_round_trips() {
        every_size_round_trips::<HEADER_PER_BLOCK, false>();
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn take2_round_trips() {
        every_size_round_trips::<HEADER_PER_PAGE, false>();
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn take3_round_trips() {
        every_size_round_trips::<CLASS_IN_POINTER, false>();
        every_size_round_trips::<CLASS_IN_POINTER, true>();
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn a_freed_block_is_reused_first() {
        let mut a = Take3::new().unwrap();
        let p = a.alloc(40);
        let q = a.alloc(40);
        // SAFETY: live, freed once each.
        unsafe {
            a.free(p);
            a.free(q);
        }
        assert_eq!(a.alloc(48), q, "the list is last in, first out");
        assert_eq!(a.alloc(33), p);
    }

    #[test]
    fn the_class_tables() {
        assert_eq!(Take3Pow2::class(1), 0);
        assert_eq!(Take3Pow2::class(8), 0);
        assert_eq!(Take3Pow2::class(9), 1);
        assert_eq!(Take3Pow2::class(17), 2);
        assert_eq!(
            Take3Pow2::class(MAX_SIZE),
            MAX_SIZE.trailing_zeros() as usize - 3
        );
        assert_eq!(Take3::class(24), 2);
        assert_eq!(Take3::class(25), 3);
        assert!(Take3::class(MAX_SIZE) < SLOTS, "every class has a slot");
        assert_eq!(Take3::class_bytes(Take3::class(MAX_SIZE)), MAX_SIZE);
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn headers_cost_what_the_document_says() {
        // Take 1 spends 8 bytes per block, Take 2 and Take 3 none: 100 blocks of 16
        // bytes span 2400 bytes with headers, 1600 without.
        let span = |ps: &[*mut u8]| ps.last().unwrap().addr() - ps[0].addr();
        let mut t1 = Take1::new().unwrap();
        let mut t3 = Take3::new().unwrap();
        let a: Vec<_> = (0..101).map(|_| t1.alloc(16)).collect();
        let b: Vec<_> = (0..101).map(|_| t3.alloc(16)).collect();
        assert_eq!(span(&a), 100 * 24);
        assert_eq!(span(&b), 100 * 16);
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn take2_formats_4_kib_pages_as_the_document_does() {
        let mut t2 = Take2::new().unwrap();
        // 16-byte blocks: 255 behind each page's 16-byte header, then the next page.
        let a: Vec<_> = (0..256).map(|_| t2.alloc(16)).collect();
        assert_eq!(a[0].addr() & (PAGE - 1), PAGE_HEADER);
        assert_eq!(a[254].addr() - a[0].addr(), 254 * 16);
        assert_eq!(a[255].addr() & (PAGE - 1), PAGE_HEADER, "a fresh page");
        for size in [
            8, 24, 48, 100, 700, 1500, 2048, 3000, 4000, 4096, 9000, MAX_SIZE,
        ] {
            for _ in 0..20 {
                let p = t2.alloc(size);
                let at = p.addr() & (PAGE - 1);
                let bytes = Take2::class_bytes(Take2::class(size));
                if PAGE_HEADER + bytes > PAGE {
                    assert_eq!(at, PAGE_HEADER, "a big block starts at page start + 16");
                } else {
                    assert!(
                        at >= PAGE_HEADER && at + bytes <= PAGE,
                        "size {size} at {at}"
                    );
                }
                // SAFETY: the page's first byte is Take 2's header, written at the cut.
                let header = unsafe { p.map_addr(|x| x & !(PAGE - 1)).read() };
                assert_eq!(usize::from(header), Take2::class(size));
            }
        }
    }
}
