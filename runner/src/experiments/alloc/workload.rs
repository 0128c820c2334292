//! Document 004's real-world-like workload, the same for every contender: the size
//! and lifetime draws, the blocks it keeps live (each written once and read once), the
//! `Blocks` seam between the loop and an allocator (`Real`) or none (`Void`), and the
//! one-thread loop the main test and the sweep run.

use crate::lab::error::{Error, Result};
use crate::lab::measure::median_part;
use std::alloc::{GlobalAlloc, Layout};
use std::time::Instant;

/// wyrand: a fast 64-bit generator, the same stream for every contender.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    #[inline(always)]
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    }
}

/// Smallest and largest octave of the sizes: 8 B .. 4 KiB.
pub(super) const MIN_OCTAVE: u32 = 3;
pub(super) const OCTAVES: u64 = 9;
/// Sizes are below this.
pub(super) const MAX_SIZE: usize = 1 << (MIN_OCTAVE + OCTAVES as u32);

/// A size with probability ~ 1/size.
#[inline(always)]
pub(super) fn size(r: u64) -> usize {
    let o = MIN_OCTAVE + (r % OCTAVES) as u32;
    let base = 1usize << o;
    base + ((r >> 8) as usize & (base - 1))
}

/// A slot in `0..2^levels` picked with probability ~ 1/index: a uniform level, then
/// a uniform slot below 2^level. The level comes from the low 32 bits scaled by
/// multiplication (no division), the slot from the high bits.
#[inline(always)]
pub(super) fn slot(r: u64, levels: u32) -> usize {
    let l = ((r & 0xffff_ffff) * u64::from(levels + 1)) >> 32;
    ((r >> 32) & ((1u64 << l) - 1)) as usize
}

/// A live block and what was written into it: 16 bytes, as the document's test keeps
/// them, so the test's own table adds little cache traffic of its own.
#[derive(Clone, Copy)]
pub(super) struct Live {
    pub(super) p: *mut u8,
    pub(super) size: u32,
    pub(super) tag: u32,
}

impl Live {
    pub(super) fn new(p: *mut u8, size: usize, tag: u64) -> Live {
        Live {
            p,
            size: size as u32,
            tag: tag as u32,
        }
    }

    pub(super) fn size(&self) -> usize {
        self.size as usize
    }

    /// Where the block is written and read: the word in its middle.
    #[inline(always)]
    pub(super) fn word(&self) -> *mut u64 {
        let off = (self.size() / 2) & !7;
        self.p.wrapping_add(off).cast()
    }

    /// The word written: the tag and the size.
    #[inline(always)]
    pub(super) fn stamp(&self) -> u64 {
        u64::from(self.tag) << 32 | u64::from(self.size)
    }
}

/// Writes the block once: its stamp into the word in its middle.
#[inline(always)]
pub(super) fn write_once(b: &Live) {
    // SAFETY: the block is live, `size >= 8` bytes long and 8-aligned, and its middle
    // word, rounded down to 8, ends inside it.
    unsafe { b.word().write(b.stamp()) };
}

/// Reads the block once: false if its word changed while it was live.
#[inline(always)]
pub(super) fn read_once(b: &Live) -> bool {
    // SAFETY: as in `write_once`.
    unsafe { b.word().read() == b.stamp() }
}

pub(super) fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).expect("sizes are small")
}

/// Where the test gets its blocks: a contender, or the baseline that measures the test's
/// own cost. Each test thread has its own.
pub(super) trait Blocks {
    /// Whether blocks are distinct, so that what was written into one must read back.
    const DISTINCT: bool;
    /// A block of `size` bytes, 8-aligned; null when out of memory.
    fn get(&mut self, size: usize) -> *mut u8;
    /// Gives back a block.
    ///
    /// # Safety
    /// `p` came from `get(size)` on this value and has not been given back since.
    unsafe fn put(&mut self, p: *mut u8, size: usize);
}

/// A contender, called directly as a `GlobalAlloc`.
pub(super) struct Real<'a, A>(pub(super) &'a A);

impl<A: GlobalAlloc> Blocks for Real<'_, A> {
    const DISTINCT: bool = true;
    #[inline(always)]
    fn get(&mut self, size: usize) -> *mut u8 {
        // SAFETY: a valid layout of non-zero size.
        unsafe { self.0.alloc(layout(size)) }
    }
    #[inline(always)]
    unsafe fn put(&mut self, p: *mut u8, size: usize) {
        // SAFETY: the caller's block, allocated by `get(size)` with this layout.
        unsafe { self.0.dealloc(p, layout(size)) }
    }
}

/// The test's own cost (the document's test calls it the void allocator): every block
/// is the same small buffer, always in cache, and a free does nothing. What a contender
/// takes beyond it is the allocator's: its code and the cache misses its placement of
/// blocks causes.
pub(super) struct Void(pub(super) Box<[u64]>);

impl Void {
    pub(super) fn new() -> Void {
        Void(vec![0u64; MAX_SIZE / 8].into_boxed_slice())
    }
}

impl Blocks for Void {
    const DISTINCT: bool = false;
    #[inline(always)]
    fn get(&mut self, _size: usize) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    #[inline(always)]
    unsafe fn put(&mut self, _p: *mut u8, _size: usize) {}
}

/// A new block of `size` bytes with `tag` written into it.
#[inline(always)]
pub(super) fn make<B: Blocks>(b: &mut B, size: usize, tag: u64) -> Result<Live> {
    let p = b.get(size);
    if p.is_null() {
        return Err(Error::Run("out of memory".into()));
    }
    let l = Live::new(p, size, tag);
    write_once(&l);
    Ok(l)
}

/// The test on one thread: fill `working_set` requested bytes, then `ops`
/// replacements. Returns (steady-part seconds, peak requested bytes): the replacements
/// are timed in eight parts and the steady part's seconds are the median part's pace
/// times `ops` (`lab::measure::median_part`; since 2026-12-05, the whole part before).
pub(super) fn one_thread<B: Blocks>(
    b: &mut B,
    working_set: usize,
    ops: usize,
    seed: u64,
) -> Result<(f64, usize)> {
    one_thread_probed(b, working_set, ops, seed, &mut || {})
}

/// [`one_thread`], calling `probe` right before the replacements start and right after
/// they end (outside the timed part), so that a caller can read counters over exactly
/// the steady part.
pub(super) fn one_thread_probed<B: Blocks>(
    b: &mut B,
    working_set: usize,
    ops: usize,
    seed: u64,
    probe: &mut dyn FnMut(),
) -> Result<(f64, usize)> {
    let mut test = Test::fill(b, working_set, seed)?;
    probe();
    let start = Instant::now();
    let mut failed = None;
    // Timed in parts, the median part's pace the figure (`lab::measure::median_part`).
    let ns_each = median_part(
        || start.elapsed().as_nanos() as u64,
        ops as u64,
        1,
        |m| {
            if failed.is_none() {
                failed = test.replace(b, m as usize).err();
            }
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    let secs = ns_each * ops as f64 / 1e9;
    probe();
    Ok((secs, test.finish(b)?))
}

/// One thread's test, split into its steps so that a caller can run the replacements
/// in parts (`runner alloc --turns`): the blocks it keeps live and its draws.
pub(super) struct Test {
    rng: Rng,
    live: Vec<Live>,
    requested: usize,
    peak: usize,
    tag: u64,
    levels: u32,
    bad: usize,
}

impl Test {
    /// Fills `working_set` requested bytes from `b`, the draws seeded by `seed`.
    pub(super) fn fill<B: Blocks>(b: &mut B, working_set: usize, seed: u64) -> Result<Test> {
        let mut t = Test::new(seed);
        t.fill_to(b, working_set)?;
        Ok(t)
    }

    /// A test with nothing live yet, its draws seeded by `seed`.
    pub(super) fn new(seed: u64) -> Test {
        Test {
            rng: Rng(seed),
            live: Vec::new(),
            requested: 0,
            peak: 0,
            tag: 0,
            levels: 0,
            bad: 0,
        }
    }

    /// Fills on until `bytes` requested bytes are live (filling in steps draws the same
    /// blocks as filling at once).
    pub(super) fn fill_to<B: Blocks>(&mut self, b: &mut B, bytes: usize) -> Result<()> {
        while self.requested < bytes {
            let s = size(self.rng.next());
            self.tag += 1;
            self.live.push(make(b, s, self.tag)?);
            self.requested += s;
        }
        self.peak = self.peak.max(self.requested);
        self.levels = usize::BITS - 1 - self.live.len().max(1).leading_zeros();
        Ok(())
    }

    /// `m` replacements: a slot picked with probability ~ 1/index, its block read and
    /// freed, a new block of a drawn size made and written in its place. On an error
    /// (out of memory) the slot's freed block leaves the table, so that [`finish`]
    /// frees only live blocks.
    ///
    /// [`finish`]: Test::finish
    #[inline(always)]
    pub(super) fn replace<B: Blocks>(&mut self, b: &mut B, m: usize) -> Result<()> {
        for _ in 0..m {
            let i = slot(self.rng.next(), self.levels);
            let s = size(self.rng.next());
            let old = self.live[i];
            self.bad += usize::from(!read_once(&old));
            // SAFETY: from `get(old.size())` and not given back since (a block leaves
            // the table when it is given back without a successor).
            unsafe { b.put(old.p, old.size()) };
            self.tag += 1;
            match make(b, s, self.tag) {
                Ok(l) => self.live[i] = l,
                Err(e) => {
                    self.live.swap_remove(i);
                    return Err(e);
                }
            }
            self.requested = self.requested - old.size() + s;
            self.peak = self.peak.max(self.requested);
        }
        Ok(())
    }

    /// Reads the whole table of live blocks (not the blocks): a test that comes back to
    /// the core after others had it (`--turns`) finds its table in cache again, as a test
    /// that never left it does.
    pub(super) fn touch_table(&self) {
        let mut sum = 0u64;
        for l in &self.live {
            sum = sum.wrapping_add(u64::from(l.size));
        }
        std::hint::black_box(sum);
    }

    /// Reads and frees every live block; the peak requested bytes, or an error if a
    /// block of a real allocator was overwritten while live.
    pub(super) fn finish<B: Blocks>(mut self, b: &mut B) -> Result<usize> {
        for l in self.live.drain(..) {
            self.bad += usize::from(!read_once(&l));
            // SAFETY: as in `replace`.
            unsafe { b.put(l.p, l.size()) };
        }
        if B::DISTINCT && self.bad > 0 {
            return Err(Error::Run(format!(
                "{} blocks were overwritten while live",
                self.bad
            )));
        }
        Ok(self.peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    #[test]
    fn sizes_fall_in_every_octave_with_equal_odds() {
        let mut rng = Rng(1);
        let mut per_octave = [0usize; 16];
        for _ in 0..90_000 {
            let s = size(rng.next());
            assert!((8..4096).contains(&s), "{s}");
            per_octave[(usize::BITS - 1 - s.leading_zeros()) as usize] += 1;
        }
        for &n in &per_octave[3..12] {
            assert!((9_000..11_000).contains(&n), "{per_octave:?}");
        }
    }

    #[test]
    fn low_slots_are_replaced_far_more_often() {
        let mut rng = Rng(2);
        let mut hits = vec![0usize; 1024];
        for _ in 0..200_000 {
            hits[slot(rng.next(), 10)] += 1;
        }
        assert!(
            hits[0] > 20 * hits[1000].max(1),
            "{} vs {}",
            hits[0],
            hits[1000]
        );
        assert!(
            hits[512..].iter().sum::<usize>() > 0,
            "the old half is never replaced"
        );
    }

    #[test]
    fn the_test_checks_every_block_and_frees_everything() {
        let (secs, peak) = one_thread(&mut Real(&System), 1 << 20, 10_000, 3).unwrap();
        assert!(secs > 0.0);
        assert!(peak >= 1 << 20);
        let (_, peak2) =
            one_thread(&mut Real(&handoff_alloc::HandoffAlloc), 1 << 20, 10_000, 3).unwrap();
        assert_eq!(peak, peak2, "the same stream for every allocator");
        let (_, peak3) = one_thread(&mut Void::new(), 1 << 20, 10_000, 3).unwrap();
        assert_eq!(peak, peak3, "and for the baseline");
    }

    /// An allocator that hands every block out again while it is live.
    struct Overlapping(Void);

    impl Blocks for Overlapping {
        const DISTINCT: bool = true;
        fn get(&mut self, size: usize) -> *mut u8 {
            self.0.get(size)
        }
        unsafe fn put(&mut self, _p: *mut u8, _size: usize) {}
    }

    #[test]
    fn the_test_catches_an_allocator_that_hands_out_live_blocks() {
        let e = one_thread(&mut Overlapping(Void::new()), 1 << 16, 1_000, 3).unwrap_err();
        assert!(e.to_string().contains("overwritten"), "{e}");
    }
}
