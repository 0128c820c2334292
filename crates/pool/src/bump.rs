//! [`BumpArena`]: one buffer, a moving offset, everything freed at once by `reset`
//! (the memory-patterns write-up's `ArenaAllocator`), made safe by the borrow checker.

use core::alloc::Layout;
use core::cell::Cell;
use core::fmt;
use core::ptr::NonNull;

use alloc::alloc::{alloc, dealloc, handle_alloc_error};

use crate::numa::{Placement, Region};
use crate::{ConfigError, Exhausted};

/// Alignment of the buffer of an arena from the global allocator: a cache line.
const BASE_ALIGN: usize = 64;

/// What a [`BumpArena`] holds and has refused so far ([`BumpArena::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BumpStats {
    /// The buffer's size in bytes.
    pub capacity: usize,
    /// Bytes in use, alignment padding included.
    pub used: usize,
    /// Allocations refused for want of room since the arena was made (resets do not
    /// clear it).
    pub exhausted: u64,
}

/// A bump arena: allocation moves an offset forward in one fixed buffer, and
/// [`reset`](Self::reset) frees everything at once.
///
/// * Allocation takes `&self` and hands out `&mut T` that borrow the arena;
///   `reset` takes `&mut self`, so no reference into the arena can outlive a reset
///   (the compiler refuses it).
/// * Every allocation is aligned to its type's (or its [`Layout`]'s) alignment;
///   the buffer itself starts on a cache line (a page when placed). The memory-patterns write-up
///   rounds every allocation up to 64 bytes; for that, allocate a
///   `#[repr(align(64))]` type.
/// * A full arena is a normal outcome: every `try_alloc*` hands its argument back in
///   [`Exhausted`] and counts it. The arena never grows and never allocates after
///   `new`.
/// * Values are never dropped: `reset` and dropping the arena forget them (their
///   destructors do not run; their memory is reused). Put `Copy` data or values
///   without a needed destructor in it.
/// * The arena is `Send` but not `Sync`: one thread allocates at a time.
///
/// ```
/// use handoff_pool::BumpArena;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Tick { ts: u64, price: f64, volume: i32, flags: u32 }
///
/// let mut arena = BumpArena::new(10 * size_of::<Tick>()).unwrap();
/// for batch in 0..3u64 {
///     arena.reset(); // frees the previous batch at once
///     let mut sum = 0.0;
///     for i in 0..10 {
///         let t = arena.try_alloc(Tick { ts: batch * 10 + i, price: 100.0, volume: 1, flags: 0 }).unwrap();
///         sum += t.price;
///     }
///     assert_eq!(sum, 1000.0);
///     // Full: the value comes back.
///     let extra = Tick { ts: 0, price: 0.0, volume: 0, flags: 0 };
///     assert_eq!(arena.try_alloc(extra).unwrap_err().into_inner(), extra);
/// }
/// ```
///
/// A reference cannot live across a reset:
///
/// ```compile_fail
/// let mut arena = handoff_pool::BumpArena::new(64).unwrap();
/// let x = arena.try_alloc(1u64).unwrap();
/// arena.reset();
/// *x = 2; // error: `arena` is still borrowed by `x`
/// ```
pub struct BumpArena {
    base: NonNull<u8>,
    capacity: usize,
    /// Bytes used from `base`.
    used: Cell<usize>,
    /// Allocations refused for want of room.
    exhausted: Cell<u64>,
    /// The placed mapping, or `None` for the global allocator's buffer.
    region: Option<Region>,
}

// SAFETY: the arena owns its buffer. References into it borrow the arena, so it
// cannot move to another thread while any exist; the values left in it are never
// read, dropped or handed out again, only overwritten after a reset.
unsafe impl Send for BumpArena {}

impl fmt::Debug for BumpArena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BumpArena")
            .field("capacity", &self.capacity)
            .field("used", &self.used.get())
            .field("exhausted", &self.exhausted.get())
            .field("placed", &self.region.is_some())
            .finish()
    }
}

impl BumpArena {
    /// An arena of `bytes` from the global allocator, aligned to a cache line. The
    /// memory is not touched (not resident) until allocations write it.
    ///
    /// ```
    /// use handoff_pool::{BumpArena, ConfigError};
    /// assert_eq!(BumpArena::new(0).unwrap_err(), ConfigError::Zero("bytes"));
    /// assert!(matches!(BumpArena::new(usize::MAX), Err(ConfigError::ArenaTooLarge { .. })));
    /// assert_eq!(BumpArena::new(4096).unwrap().capacity(), 4096);
    /// ```
    pub fn new(bytes: usize) -> Result<BumpArena, ConfigError> {
        Self::with_placement(bytes, Placement::Default)
    }

    /// An arena of `bytes` placed on a NUMA node, the local node or interleaved
    /// (see [`crate::numa`]); its capacity is rounded up to whole pages.
    ///
    /// ```
    /// use handoff_pool::{numa::Placement, BumpArena};
    /// # if cfg!(miri) { return; }
    /// let arena = BumpArena::with_placement(1 << 20, Placement::Interleave).unwrap();
    /// let v = arena.try_alloc_slice_fill_with(1000, |i| i as f64).unwrap();
    /// assert_eq!(v[999], 999.0);
    /// ```
    pub fn with_placement(bytes: usize, placement: Placement) -> Result<BumpArena, ConfigError> {
        if bytes == 0 {
            return Err(ConfigError::Zero("bytes"));
        }
        let layout = Layout::from_size_align(bytes, BASE_ALIGN)
            .map_err(|_| ConfigError::ArenaTooLarge { bytes })?;
        if placement != Placement::Default {
            let region = Region::new(bytes, BASE_ALIGN, placement).map_err(ConfigError::Numa)?;
            return Ok(BumpArena {
                base: region.base(),
                capacity: region.len(),
                used: Cell::new(0),
                exhausted: Cell::new(0),
                region: Some(region),
            });
        }
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(base) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        Ok(BumpArena {
            base,
            capacity: bytes,
            used: Cell::new(0),
            exhausted: Cell::new(0),
            region: None,
        })
    }

    /// Room for `layout`, uninitialised (the memory-patterns write-up's `allocate(size)`), or the
    /// layout handed back in [`Exhausted`] (counted in [`stats`](Self::stats)) if the
    /// arena has not enough left.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let arena = handoff_pool::BumpArena::new(256).unwrap();
    /// let p = arena.try_alloc_layout(Layout::from_size_align(24, 64).unwrap()).unwrap();
    /// assert_eq!(p.as_ptr() as usize % 64, 0);
    /// let big = Layout::from_size_align(512, 8).unwrap();
    /// assert_eq!(arena.try_alloc_layout(big).unwrap_err().into_inner(), big);
    /// ```
    #[inline]
    pub fn try_alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, Exhausted<Layout>> {
        match self.bump(layout) {
            Some(p) => Ok(p),
            None => {
                self.count_exhausted();
                Err(Exhausted(layout))
            }
        }
    }

    /// The room, without counting a refusal.
    #[inline(always)]
    fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        let used = self.used.get();
        let here = self.base.as_ptr().addr() + used;
        let pad = here.wrapping_neg() & (layout.align() - 1);
        let start = used.checked_add(pad)?;
        let end = start.checked_add(layout.size())?;
        if end > self.capacity {
            return None;
        }
        self.used.set(end);
        // SAFETY: `start <= end <= capacity`, so the result is inside the buffer
        // (or one past it for a zero-sized request at the very end).
        Some(unsafe { self.base.add(start) })
    }

    /// Counts a refusal. The refused value stays out of this cold call: passing it
    /// would make the hot path build every value in a stack copy first.
    #[cold]
    #[inline(never)]
    fn count_exhausted(&self) {
        self.exhausted.set(self.exhausted.get() + 1);
    }

    /// Moves `value` into the arena, or hands it back in [`Exhausted`] (counted) if the
    /// arena is full.
    ///
    /// ```
    /// let arena = handoff_pool::BumpArena::new(8).unwrap();
    /// let a = arena.try_alloc(1u64).unwrap();
    /// *a += 1;
    /// assert_eq!(*a, 2);
    /// assert_eq!(arena.try_alloc(3u64).unwrap_err().into_inner(), 3);
    /// ```
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub fn try_alloc<T>(&self, value: T) -> Result<&mut T, Exhausted<T>> {
        match self.bump(Layout::new::<T>()) {
            Some(p) => {
                let p = p.cast::<T>();
                // SAFETY: `p` is fresh room for a `T`, aligned, inside the buffer and
                // handed out to no one else until a reset, which needs `&mut self`
                // and so ends this borrow first.
                unsafe {
                    p.as_ptr().write(value);
                    Ok(&mut *p.as_ptr())
                }
            }
            None => {
                self.count_exhausted();
                Err(Exhausted(value))
            }
        }
    }

    /// Makes a value in the arena with `f`, called only if there is room; if the
    /// arena is full, `f` is handed back uncalled in [`Exhausted`] (counted).
    ///
    /// ```
    /// let arena = handoff_pool::BumpArena::new(16).unwrap();
    /// assert_eq!(*arena.try_alloc_with(|| [1u32; 4]).unwrap(), [1; 4]);
    /// assert!(arena.try_alloc_with(|| -> u8 { unreachable!() }).is_err());
    /// ```
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub fn try_alloc_with<T, F: FnOnce() -> T>(&self, f: F) -> Result<&mut T, Exhausted<F>> {
        let Some(p) = self.bump(Layout::new::<T>()) else {
            self.count_exhausted();
            return Err(Exhausted(f));
        };
        let p = p.cast::<T>();
        // SAFETY: as in `try_alloc`. If `f` panics, the room stays reserved and unused.
        unsafe {
            p.as_ptr().write(f());
            Ok(&mut *p.as_ptr())
        }
    }

    /// A slice of `len` values made by `f(0)`, `f(1)`, ...; if the arena has not room
    /// for all of them, `f` is handed back uncalled in [`Exhausted`] (counted).
    ///
    /// ```
    /// let arena = handoff_pool::BumpArena::new(1024).unwrap();
    /// let prices = arena.try_alloc_slice_fill_with(4, |i| 100.0 + i as f64).unwrap();
    /// assert_eq!(prices, &[100.0, 101.0, 102.0, 103.0]);
    /// assert!(arena.try_alloc_slice_fill_with(1000, |_| 0u64).is_err());
    /// ```
    #[allow(clippy::mut_from_ref)]
    pub fn try_alloc_slice_fill_with<T, F: FnMut(usize) -> T>(
        &self,
        len: usize,
        mut f: F,
    ) -> Result<&mut [T], Exhausted<F>> {
        let room = Layout::array::<T>(len).ok().and_then(|l| self.bump(l));
        let Some(p) = room else {
            self.count_exhausted();
            return Err(Exhausted(f));
        };
        let p = p.cast::<T>();
        for i in 0..len {
            // SAFETY: `i < len`, inside the room just reserved for `len` values. If
            // `f` panics, the values written so far are forgotten, never dropped.
            unsafe { p.as_ptr().add(i).write(f(i)) };
        }
        // SAFETY: all `len` values were written just above, and the room is this
        // borrow's alone, as in `try_alloc`.
        Ok(unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), len) })
    }

    /// What the arena holds and has refused so far.
    ///
    /// ```
    /// use handoff_pool::{BumpArena, BumpStats};
    /// let arena = BumpArena::new(8).unwrap();
    /// arena.try_alloc(1u64).unwrap();
    /// assert!(arena.try_alloc(2u8).is_err());
    /// let s: BumpStats = arena.stats();
    /// assert_eq!((s.capacity, s.used, s.exhausted), (8, 8, 1));
    /// ```
    pub fn stats(&self) -> BumpStats {
        BumpStats {
            capacity: self.capacity,
            used: self.used.get(),
            exhausted: self.exhausted.get(),
        }
    }

    /// Frees every allocation at once (their destructors do not run). Takes
    /// `&mut self`, so every reference into the arena is gone already.
    ///
    /// ```
    /// let mut arena = handoff_pool::BumpArena::new(64).unwrap();
    /// arena.try_alloc([0u8; 64]).unwrap();
    /// assert_eq!(arena.available(), 0);
    /// arena.reset();
    /// assert_eq!(arena.available(), 64);
    /// ```
    #[inline]
    pub fn reset(&mut self) {
        self.used.set(0);
    }

    /// Bytes in use, alignment padding included (the memory-patterns write-up's `get_used`).
    ///
    /// ```
    /// let arena = handoff_pool::BumpArena::new(64).unwrap();
    /// arena.try_alloc(1u8).unwrap();
    /// arena.try_alloc(1u64).unwrap(); // 7 bytes of padding before it
    /// assert_eq!(arena.used(), 16);
    /// ```
    #[inline]
    pub fn used(&self) -> usize {
        self.used.get()
    }

    /// Bytes left (the memory-patterns write-up's `get_available`).
    ///
    /// ```
    /// let arena = handoff_pool::BumpArena::new(64).unwrap();
    /// assert_eq!(arena.available(), 64);
    /// ```
    #[inline]
    pub fn available(&self) -> usize {
        self.capacity - self.used.get()
    }

    /// The buffer's size in bytes.
    ///
    /// ```
    /// assert_eq!(handoff_pool::BumpArena::new(100).unwrap().capacity(), 100);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Drop for BumpArena {
    fn drop(&mut self) {
        if self.region.is_some() {
            return; // the region unmaps itself
        }
        let layout = Layout::from_size_align(self.capacity, BASE_ALIGN).expect("checked in new");
        // SAFETY: `base` came from `alloc(layout)` with this same layout and is freed
        // only here, once; no reference into it outlives `&mut self`.
        unsafe { dealloc(self.base.as_ptr(), layout) };
    }
}
