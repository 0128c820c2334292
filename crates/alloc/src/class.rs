//! Size classes and address arithmetic: pure functions of integers, tested under Miri.
//!
//! Classes run in half-exponent steps, 8, 16, 24, 32, 48, 64, 96, 128, ... up to
//! [`MAX_SMALL`] (256 KiB): two classes per power of two, so a block wastes at most a
//! third of itself. The class of a size is computed without a branch from the position
//! of the size's highest set bit and the bit below it.
//!
//! The arena is one reservation of `2^ARENA_BITS` bytes. An address inside it reads as
//! `heap | class | offset`: [`HEAP_BITS`] bits name the heap that owns the block,
//! [`CLASS_BITS`] bits its size class, and the low [`REGION_BITS`] bits the offset in
//! that heap's region for that class. So a free learns the owner and the class from the
//! pointer alone.
//!
//! Where the system refuses that reservation (a limit on the address space, a kernel
//! with a small one), the allocator reserves a smaller arena of the same shape, with
//! fewer offset bits per region and perhaps fewer heaps: a [`Geometry`] from
//! [`GEOMETRIES`].

/// Bits of an arena address that name the owning heap: 128 heaps.
pub const HEAP_BITS: u32 = 7;
/// Bits that name the size class: 32 class regions per heap (24 are used).
pub const CLASS_BITS: u32 = 5;
/// Bits of the offset inside one heap's region for one class: 4 GiB each.
pub const REGION_BITS: u32 = 32;
/// Bits of the whole arena: 16 TiB of address space, reserved, not committed.
pub const ARENA_BITS: u32 = HEAP_BITS + CLASS_BITS + REGION_BITS;
/// Number of heaps (heap 0 is the shared, locked heap).
pub const HEAPS: usize = 1 << HEAP_BITS;
/// Size of one region (one class of one heap).
pub const REGION_SIZE: usize = 1 << REGION_BITS;
/// Size of the arena.
pub const ARENA_SIZE: usize = 1 << ARENA_BITS;

/// The largest size served from a size class; larger requests are page-granular
/// mappings of their own.
pub const MAX_SMALL: usize = 256 * 1024;
/// Number of size classes: 8, 16, 24, ..., 196608, 262144.
pub const NUM_CLASSES: usize = 30;

const fn make_sizes() -> [usize; NUM_CLASSES] {
    let mut sizes = [0; NUM_CLASSES];
    sizes[0] = 8;
    sizes[1] = 16;
    let mut c = 2;
    while c < NUM_CLASSES {
        // Class c covers the sizes whose (size - 1) has its top bit at b and the bit
        // below it equal to `half`; its block is the top of that range.
        let b = (c + 6) / 2;
        let half = (c + 6) % 2;
        sizes[c] = (1 << b) + (half + 1) * (1 << (b - 1));
        c += 1;
    }
    sizes
}

/// Block size of each class.
pub const CLASS_SIZES: [usize; NUM_CLASSES] = make_sizes();

/// The class of a request of `size` bytes (`size <= MAX_SMALL`), computed without a
/// branch. Size 0 is served as size 1.
///
/// Above 16 bytes the class is twice the position of the top bit of `size - 1` plus the
/// bit below it, less 6. Sizes up to 16 are folded into that formula: `size - 1` is
/// raised to at least 8 (top bit 3), and the bit below the top is set for 9..=16 (class
/// 1, 16 bytes) and left clear for 0..=8 (class 0, 8 bytes). Setting bit 2 does not
/// change the answer above 16, where the bit below the top is bit 3 or higher. Both
/// adjustments are `min` / `max`, which compile to conditional moves.
#[inline(always)]
pub const fn class_of_computed(size: usize) -> usize {
    let v = size.saturating_sub(1);
    let low = v & !7;
    let v = (if v > 8 { v } else { 8 }) | (if low < 4 { low } else { 4 });
    let b = (usize::BITS - 1 - v.leading_zeros()) as usize;
    let half = (v >> (b - 1)) & 1;
    2 * b + half - 6
}

/// Sizes up to this are looked up in [`SMALL_CLASS`] by [`class_of`].
pub const TABLE_MAX: usize = 4096;

/// The class of every size up to [`TABLE_MAX`], by 8-byte step: entry `(size + 7) / 8`.
/// (Every class boundary up to there is a multiple of 8, so the step loses nothing.)
pub const SMALL_CLASS: [u8; TABLE_MAX / 8 + 1] = {
    let mut t = [0u8; TABLE_MAX / 8 + 1];
    let mut i = 0;
    while i < t.len() {
        t[i] = class_of_computed(i * 8) as u8;
        i += 1;
    }
    t
};

/// The class of a request of `size` bytes (`size <= MAX_SMALL`; size 0 is served as
/// size 1): a table lookup up to [`TABLE_MAX`] (three instructions, where the formula of
/// [`class_of_computed`] takes about twelve), the formula above. A constant size folds
/// to its class at compile time either way.
#[inline(always)]
pub const fn class_of(size: usize) -> usize {
    if size <= TABLE_MAX {
        SMALL_CLASS[(size + 7) >> 3] as usize
    } else {
        class_of_computed(size)
    }
}

/// Block size of class `c`.
#[inline(always)]
pub const fn class_size(c: usize) -> usize {
    CLASS_SIZES[c]
}

/// Bytes left unused at the start of every class region, before the class's page of
/// stagger ([`first_block`]): blocks are laid end to end from a `2^REGION_BITS`-aligned
/// region start plus this and the stagger. With the blocks of every class
/// aligned to their size (the head at 0), the size-class allocator write-up's test at 256 MiB took 47.8 ns
/// per pair; with a head of 64 or 128 bytes, 42.2-42.7 (12 alternated rounds each,
/// faster in 12 of 12; at 1-64 MiB no difference beyond the noise). A head of 64 bytes
/// on the classes that are no more than 64-byte aligned anyway gained nothing, so it is
/// the blocks of the classes aligned to 256 bytes and more whose placement cost; which
/// hardware effect (cache sets of the words the test touches, or its stores aliasing
/// the allocator's loads 4 KiB apart) was not found out. 128 keeps every class at
/// least as aligned as before up to 128 bytes, which covers `CachePadded` values.
pub const REGION_HEAD: usize = 128;

/// How far apart, in bytes, the first blocks of two neighbouring classes sit within
/// their regions: a page. See [`first_block`].
pub const CLASS_STAGGER: usize = 4096;

/// Offset of class `c`'s first block from its region's start: [`REGION_HEAD`] plus `c`
/// pages ([`CLASS_STAGGER`]), at most 116 KiB, inside the region's first commit.
///
/// Every region starts on a `2^REGION_BITS` boundary, so without the stagger the k-th
/// page of every class had the same address bits below bit 32, and the size-class allocator write-up's
/// test, whose blocks come from 18 classes at once, touched pages whose lower page
/// numbers were all alike. With the first blocks a page apart per class, `runner alloc`'s
/// sweep (8 alternated rounds, medians) went from 15.4 / 17.1 / 32.1 to 13.4 / 15.5 /
/// 29.6 TSC ticks per pair beyond the test's own at 1 / 4 / 16 MiB, faster in 7, 7 and
/// 5 of the 8 rounds; the 256 MiB test did not change beyond its noise. Which hardware
/// structure the alike page numbers crowded (a TLB's sets, the first-level cache's way
/// predictor) is not known: this guest has no performance counters.
#[inline(always)]
pub const fn first_block(c: usize) -> usize {
    REGION_HEAD + c * CLASS_STAGGER
}

/// The alignment every block of class `c` has: blocks are laid end to end from
/// [`first_block`] bytes past a region start aligned to `2^REGION_BITS` (a multiple of
/// [`REGION_HEAD`]), so it is the largest power of two dividing both the block size and
/// the head.
#[inline(always)]
pub const fn class_align(c: usize) -> usize {
    let natural = 1 << CLASS_SIZES[c].trailing_zeros();
    if natural < REGION_HEAD {
        natural
    } else {
        REGION_HEAD
    }
}

/// The most alignment a size class serves: requests aligned beyond [`REGION_HEAD`] and
/// up to this are served from a bigger power-of-two class, the block's address rounded
/// up (see [`class_for`]); beyond it, a mapping of their own.
pub const MAX_CLASS_ALIGN: usize = 4096;

/// The class that serves `size` bytes at alignment `align` (a power of two), or `None`
/// when the request is not small: bigger than [`MAX_SMALL`] once aligned, or aligned
/// beyond [`MAX_CLASS_ALIGN`] (then it gets a mapping of its own, see `big`).
///
/// Up to [`REGION_HEAD`] the class's blocks have the alignment themselves. Beyond it
/// (an over-aligned request: `#[repr(align(256))]`, a page-aligned buffer) no class's
/// blocks are aligned enough, since every class starts [`REGION_HEAD`] bytes past an
/// aligned boundary; the request gets a block of the power-of-two class that holds
/// `size + align - REGION_HEAD` bytes, and the caller hands out the block's address
/// rounded up to `align` ([`aligned_within`]), which lies at most
/// `align - REGION_HEAD` bytes into the block. The free rounds it back down
/// ([`block_of_aligned`]). In earlier versions such requests were mappings of their own: a
/// page each, 7.3 us per allocation, and one mapping per hole when every other one was
/// freed.
#[inline(always)]
pub const fn class_for(size: usize, align: usize) -> Option<usize> {
    if align <= 8 {
        if size <= MAX_SMALL {
            Some(class_of(size))
        } else {
            None
        }
    } else {
        class_for_aligned(size, align)
    }
}

const fn class_for_aligned(size: usize, align: usize) -> Option<usize> {
    if align > REGION_HEAD {
        if align > MAX_CLASS_ALIGN {
            return None;
        }
        let need = if size == 0 { 1 } else { size } + (align - REGION_HEAD);
        if need > MAX_SMALL {
            return None;
        }
        // A power of two of at least 256 bytes: a class, its blocks 128-aligned.
        return Some(class_of(need.next_power_of_two()));
    }
    let s = if size > align { size } else { align };
    if s > MAX_SMALL {
        return None;
    }
    let c = class_of(s);
    // A class of the form 3 * 2^k is only 2^k-aligned; the next class, 2^(k+2), is
    // aligned past `align` because 3 * 2^k >= align.
    if class_align(c) >= align {
        Some(c)
    } else {
        Some(c + 1)
    }
}

/// Where an over-aligned request (beyond [`REGION_HEAD`]) starts inside a block `p` of
/// the class [`class_for`] gave it: `p` rounded up to `align`.
#[inline(always)]
pub fn aligned_within(p: *mut u8, align: usize) -> *mut u8 {
    p.wrapping_add(p.addr().wrapping_neg() & (align - 1))
}

/// The block of class `c` (a power of two, as [`class_for`] gives for over-aligned
/// requests; the caller's contract) that holds `p`, an address [`aligned_within`] gave
/// in it. A block of class `c` starts at a region start (aligned to the region's size, a
/// multiple of the class's) plus [`first_block`]`(c)` plus a multiple of the class size,
/// so its address is `first_block(c)` modulo the class size.
#[inline(always)]
pub fn block_of_aligned(p: *mut u8, c: usize) -> *mut u8 {
    let size = class_size(c);
    p.wrapping_sub(p.addr().wrapping_sub(first_block(c)) & (size - 1))
}

/// Whether `in_region`, an offset inside a region of class `c`, is where one of the
/// class's blocks starts: at least [`first_block`]`(c)`, and a whole number of blocks
/// past it. Without a division: every class size is `2^k` or `3 * 2^k`, so the test is
/// `k` low bits clear and, for the latter, the rest a multiple of three (a
/// multiplication by three's inverse modulo `2^64` lands at most at `u64::MAX / 3`
/// exactly for the multiples).
#[inline]
pub const fn is_block_offset(c: usize, in_region: usize) -> bool {
    if in_region < first_block(c) {
        return false;
    }
    let off = (in_region - first_block(c)) as u64;
    let size = CLASS_SIZES[c] as u64;
    let k = size.trailing_zeros();
    if off & ((1 << k) - 1) != 0 {
        return false;
    }
    match size >> k {
        1 => true,
        // 3 * 0xaaaa_aaaa_aaaa_aaab = 1 modulo 2^64.
        _ => (off >> k).wrapping_mul(0xaaaa_aaaa_aaaa_aaab) <= u64::MAX / 3,
    }
}

// Every class size is a power of two or three times one (what `is_block_offset` uses).
const _: () = {
    let mut c = 0;
    while c < NUM_CLASSES {
        let odd = CLASS_SIZES[c] >> CLASS_SIZES[c].trailing_zeros();
        assert!(odd == 1 || odd == 3);
        c += 1;
    }
};

/// The first class slot of a heap's span that no class uses: the depots start there.
pub const DEPOT_SLOT: usize = NUM_CLASSES;
/// Alignment of each depot in the span (its memory is committed a page at first, then
/// doubling: `Heap::depot_room`).
pub const DEPOT_CHUNK: usize = 64 << 10;
/// Bytes of one depot entry: a block's offset in its region, which is below
/// `2^REGION_BITS`.
pub const DEPOT_ENTRY: usize = 4;

/// The shape of an arena: how many offset bits each region has and how many heaps it
/// holds. An address reads as `heap | class | offset` in every shape; only the widths
/// of the fields change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bits of the offset inside one region.
    pub region_bits: u32,
    /// Heaps in the arena (heap 0, the shared heap, included).
    pub heaps: usize,
}

/// The full arena: [`HEAPS`] heaps of 4 GiB regions, 16 TiB.
pub const FULL: Geometry = Geometry {
    region_bits: REGION_BITS,
    heaps: HEAPS,
};

/// The shapes the allocator tries, largest first, when it reserves its arena: the full
/// 16 TiB, then 1 TiB, 256 GiB and 64 GiB with every heap, then fewer heaps of 4 MiB
/// regions (16 GiB, 4 GiB, 1 GiB, 512 MiB, 256 MiB). Threads beyond a smaller arena's
/// heaps share heap 0.
pub const GEOMETRIES: [Geometry; 9] = [
    FULL,
    Geometry {
        region_bits: 28,
        heaps: HEAPS,
    },
    Geometry {
        region_bits: 26,
        heaps: HEAPS,
    },
    Geometry {
        region_bits: 24,
        heaps: HEAPS,
    },
    Geometry {
        region_bits: 22,
        heaps: 32,
    },
    Geometry {
        region_bits: 22,
        heaps: 8,
    },
    Geometry {
        region_bits: 22,
        heaps: 4,
    },
    Geometry {
        region_bits: 22,
        heaps: 2,
    },
    Geometry {
        region_bits: 22,
        heaps: 1,
    },
];

impl Geometry {
    /// Bytes of one region (one class of one heap).
    #[inline(always)]
    pub const fn region_size(self) -> usize {
        1 << self.region_bits
    }

    /// Bytes of one heap's span: its class regions and its depots.
    #[inline(always)]
    pub const fn span(self) -> usize {
        1 << (CLASS_BITS + self.region_bits)
    }

    /// Bytes of the whole arena.
    #[inline(always)]
    pub const fn arena_size(self) -> usize {
        self.heaps * self.span()
    }

    /// Where an arena offset belongs: `(heap, class)`; `None` outside the arena.
    #[inline(always)]
    pub const fn decode(self, offset: usize) -> Option<(usize, usize)> {
        if offset < self.arena_size() {
            Some((
                offset >> (CLASS_BITS + self.region_bits),
                (offset >> self.region_bits) & ((1 << CLASS_BITS) - 1),
            ))
        } else {
            None
        }
    }

    /// Offset from the arena base of the region of `heap` for `class`.
    #[inline(always)]
    pub const fn region_offset(self, heap: usize, class: usize) -> usize {
        (heap << (CLASS_BITS + self.region_bits)) | (class << self.region_bits)
    }

    /// Entries the depot of class `c` can need: one per block its region can hold.
    #[inline(always)]
    pub const fn depot_capacity(self, c: usize) -> usize {
        self.region_size() / CLASS_SIZES[c]
    }

    /// Where each class's depot starts, as an offset from its heap's span; the last
    /// entry is where the depots end. A depot is the array stack of a class's free
    /// blocks beyond its magazine, kept outside the blocks, in class slots no class
    /// uses.
    pub const fn depot_offsets(self) -> [usize; NUM_CLASSES + 1] {
        let mut offsets = [0; NUM_CLASSES + 1];
        let mut at = DEPOT_SLOT << self.region_bits;
        let mut c = 0;
        while c < NUM_CLASSES {
            offsets[c] = at;
            let bytes = self.depot_capacity(c) * DEPOT_ENTRY;
            at += bytes.div_ceil(DEPOT_CHUNK) * DEPOT_CHUNK;
            c += 1;
        }
        offsets[NUM_CLASSES] = at;
        offsets
    }
}

const fn make_depot_tables() -> [[usize; NUM_CLASSES + 1]; GEOMETRIES.len()] {
    let mut tables = [[0; NUM_CLASSES + 1]; GEOMETRIES.len()];
    let mut g = 0;
    while g < GEOMETRIES.len() {
        tables[g] = GEOMETRIES[g].depot_offsets();
        g += 1;
    }
    tables
}

/// [`Geometry::depot_offsets`] of each of [`GEOMETRIES`].
pub const DEPOT_TABLES: [[usize; NUM_CLASSES + 1]; GEOMETRIES.len()] = make_depot_tables();

// Used only by the `const` assertion below, which rustc 1.88 (the crate's minimum)
// does not count as a use.
#[allow(dead_code)]
const fn every_geometry_fits() -> bool {
    let mut g = 0;
    while g < GEOMETRIES.len() {
        let geo = GEOMETRIES[g];
        // Offsets fit depot entries, the depots fit the span, a commit fits a region,
        // heaps are numbered within the heap bits.
        if geo.region_bits > u32::BITS
            || DEPOT_TABLES[g][NUM_CLASSES] > geo.span()
            || geo.region_size() < (1 << 22)
            || geo.heaps > HEAPS
            || geo.heaps == 0
            || geo.region_size() < MAX_SMALL
        {
            return false;
        }
        g += 1;
    }
    true
}

const _: () = assert!(every_geometry_fits(), "a geometry does not fit");
const _: () = assert!(REGION_BITS <= u32::BITS, "depot entries are u32 offsets");

/// Rounds `n` up to a multiple of `to` (a power of two); `None` on overflow.
#[inline]
pub const fn round_up(n: usize, to: usize) -> Option<usize> {
    match n.checked_add(to - 1) {
        Some(v) => Some(v & !(to - 1)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The class by search: the smallest class at least `size` bytes.
    fn by_search(size: usize) -> usize {
        (0..NUM_CLASSES)
            .find(|&c| CLASS_SIZES[c] >= size.max(1))
            .unwrap()
    }

    #[test]
    fn the_classes_are_half_exponent_steps() {
        assert_eq!(
            &CLASS_SIZES[..12],
            &[8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
        );
        assert_eq!(CLASS_SIZES[NUM_CLASSES - 1], MAX_SMALL);
        for w in CLASS_SIZES.windows(2) {
            assert!(w[1] > w[0] && w[1] * 2 <= w[0] * 3 + 8, "{w:?}");
        }
        const { assert!(NUM_CLASSES <= 1 << CLASS_BITS) };
    }

    #[test]
    fn the_table_and_the_formula_agree_on_every_small_size() {
        for s in 0..=TABLE_MAX {
            assert_eq!(class_of(s), class_of_computed(s), "size {s}");
        }
    }

    #[test]
    fn class_of_is_the_smallest_class_that_fits() {
        // Under Miri, every 7th size up to 32 KiB and every 127th beyond (the class
        // boundaries are all checked below).
        let mut s = 0;
        while s <= MAX_SMALL {
            assert_eq!(class_of(s), by_search(s), "size {s}");
            s += match (cfg!(miri), s < 32 << 10) {
                (false, _) => 1,
                (true, true) => 7,
                (true, false) => 127,
            };
        }
        // Every class boundary, under Miri too.
        for &size in &CLASS_SIZES {
            for s in [size - 1, size, size + 1] {
                if s <= MAX_SMALL {
                    assert_eq!(class_of(s), by_search(s), "size {s}");
                }
            }
        }
    }

    #[test]
    fn aligned_requests_get_an_aligned_class_that_fits() {
        for shift in 0..=16 {
            let align = 1usize << shift;
            for size in [
                0, 1, 7, 8, 9, 24, 40, 100, 3000, 4096, 5000, 24576, 32768, 32769,
            ] {
                match class_for(size, align) {
                    Some(c) if align > REGION_HEAD => {
                        // Room for the request at any `align` boundary inside a block
                        // that is itself REGION_HEAD-aligned, in a power-of-two class.
                        assert!(align <= MAX_CLASS_ALIGN);
                        assert!(class_size(c).is_power_of_two());
                        assert_eq!(class_align(c), REGION_HEAD);
                        let need = size.max(1) + align - REGION_HEAD;
                        assert!(class_size(c) >= need, "size {size} align {align}");
                        assert!(class_size(c) < 2 * need, "size {size} align {align}");
                    }
                    Some(c) => {
                        assert!(class_size(c) >= size.max(1), "size {size} align {align}");
                        assert!(class_align(c) >= align.max(8), "size {size} align {align}");
                        // No smaller class would do.
                        if c > 0 {
                            let p = c - 1;
                            assert!(class_size(p) < size.max(1) || class_align(p) < align);
                        }
                    }
                    None => assert!(
                        size.max(align) > MAX_SMALL
                            || align > MAX_CLASS_ALIGN
                            || size + align - REGION_HEAD > MAX_SMALL,
                        "size {size} align {align}"
                    ),
                }
            }
        }
    }

    #[test]
    fn addresses_decode_to_the_region_they_were_made_from_in_every_geometry() {
        assert_eq!(FULL.arena_size(), ARENA_SIZE);
        for geo in GEOMETRIES {
            let region = geo.region_size();
            for heap in [0, 1, 5, HEAPS - 1].into_iter().filter(|&h| h < geo.heaps) {
                for class in [0, 1, 13, NUM_CLASSES - 1] {
                    let start = geo.region_offset(heap, class);
                    for off in [0, 8, 4096, region - 8] {
                        assert_eq!(geo.decode(start + off), Some((heap, class)), "{geo:?}");
                    }
                }
            }
            assert_eq!(geo.decode(geo.arena_size()), None, "{geo:?}");
            assert_eq!(geo.decode(usize::MAX), None, "{geo:?}");
        }
    }

    #[test]
    fn depots_lie_past_every_region_without_overlapping_in_every_geometry() {
        for (g, geo) in GEOMETRIES.into_iter().enumerate() {
            let offsets = DEPOT_TABLES[g];
            assert_eq!(offsets, geo.depot_offsets());
            let region = geo.region_size();
            for c in 0..NUM_CLASSES {
                let (start, end) = (offsets[c], offsets[c + 1]);
                assert_eq!(start % DEPOT_CHUNK, 0);
                assert!(
                    end - start >= geo.depot_capacity(c) * DEPOT_ENTRY,
                    "{geo:?} class {c}"
                );
                // Every block of the region has its entry, and an offset fits an entry.
                assert!(geo.depot_capacity(c) * class_size(c) <= region);
                assert!((region - 1) as u64 <= u64::from(u32::MAX));
                // A depot address decodes to no class: it is never taken for a block.
                for heap in [0, 3, HEAPS - 1].into_iter().filter(|&h| h < geo.heaps) {
                    for off in [start, end - 1] {
                        let (h, class) = geo.decode(geo.region_offset(heap, 0) + off).unwrap();
                        assert_eq!(h, heap);
                        assert!(
                            class >= NUM_CLASSES,
                            "{geo:?}: class {c}'s depot decodes to {class}"
                        );
                    }
                }
            }
            assert_eq!(offsets[0], geo.region_offset(0, DEPOT_SLOT));
            assert!(offsets[NUM_CLASSES] <= geo.span(), "{geo:?}");
        }
    }

    #[test]
    fn block_offsets_are_exactly_the_starts_of_blocks() {
        for c in 0..NUM_CLASSES {
            let (first, size) = (first_block(c), class_size(c));
            // Under Miri, the last bytes before the first block and four blocks, by
            // steps of 97 bytes between block starts.
            let (from, blocks, step) = if cfg!(miri) {
                (first - 16, 4, 97)
            } else {
                (0, 40, 1)
            };
            let mut off = from;
            while off < first + blocks * size {
                let want = off >= first && (off - first) % size == 0;
                assert_eq!(is_block_offset(c, off), want, "class {c}, offset {off}");
                off += if want || off + 1 == first { 1 } else { step };
            }
            // Far into a region too.
            let far = first + 1_000_003 * size;
            assert!(is_block_offset(c, far), "class {c}");
            assert!(!is_block_offset(c, far + size / 2), "class {c}");
        }
    }

    #[test]
    fn round_up_rounds_and_reports_overflow() {
        assert_eq!(round_up(1, 4096), Some(4096));
        assert_eq!(round_up(4096, 4096), Some(4096));
        assert_eq!(round_up(0, 64), Some(0));
        assert_eq!(round_up(usize::MAX - 2, 4096), None);
    }
}
