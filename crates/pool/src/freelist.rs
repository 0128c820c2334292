//! A single-thread pool: a slab and a stack of its free slots. The baseline the
//! cross-thread pools are measured against (the cross-thread pipeline write-up's "plain freelist").

use core::cell::{Cell, UnsafeCell};
use core::fmt;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use alloc::vec::Vec;

use crate::slab::{Slab, SlotPtr};
use crate::{ConfigError, Exhausted, Foreign};

/// A fixed-size pool for one thread. Objects are [`FreelistBox`]s that borrow the pool and
/// give their slot back when dropped. Neither the pool nor its objects can cross
/// threads, so no atomics are needed.
///
/// ```
/// let pool = handoff_pool::Freelist::<[u8; 64]>::new(2).unwrap();
/// let a = pool.try_alloc([1; 64]).unwrap();
/// let b = pool.try_alloc([2; 64]).unwrap();
/// assert!(pool.try_alloc([3; 64]).is_err());
/// drop(a);
/// let c = pool.try_alloc([4; 64]).unwrap();
/// assert_eq!((b[0], c[0]), (2, 4));
/// ```
///
/// Objects cannot outlive the pool:
///
/// ```compile_fail,E0505
/// let pool = handoff_pool::Freelist::<u64>::new(1).unwrap();
/// let a = pool.try_alloc(1).unwrap();
/// drop(pool);
/// assert_eq!(*a, 1);
/// ```
pub struct Freelist<T> {
    slab: Slab<T>,
    /// The free stack's top, the slot freed last: kept out of `free` so that an
    /// allocation after a free reads it from one fixed place rather than an indexed
    /// one in the buffer, which the processor forwards from the free's store sooner.
    top: Cell<Option<SlotPtr<T>>>,
    /// The rest of the free stack; reached only inside this module's methods, never
    /// across a call into user code, so the `UnsafeCell` is never borrowed twice.
    free: UnsafeCell<Vec<SlotPtr<T>>>,
    exhausted: Cell<u64>,
}

/// What a [`Freelist`] holds and has refused so far ([`Freelist::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FreelistStats {
    /// The pool's size.
    pub capacity: usize,
    /// Free slots now.
    pub available: usize,
    /// Allocations refused because every slot was in use.
    pub exhausted: u64,
}

/// An object in a [`Freelist`] slot. Dropping it drops the object and frees the slot;
/// forgetting it leaks the object and the slot (never reused) until the pool is
/// dropped.
pub struct FreelistBox<'a, T> {
    ptr: NonNull<T>,
    pool: &'a Freelist<T>,
}

// SAFETY: moving the whole pool moves its slots and their (absent: no `FreelistBox` can be
// alive while the pool is moved) objects; only `T: Send` values could ever be moved.
unsafe impl<T: Send> Send for Freelist<T> {}

impl<T> Freelist<T> {
    /// A pool of `slots` objects of `T`, allocated now.
    ///
    /// ```
    /// assert!(handoff_pool::Freelist::<u64>::new(4096).is_ok());
    /// ```
    pub fn new(slots: usize) -> Result<Self, ConfigError> {
        let slab = Slab::new(slots)?;
        let free = (0..slots).rev().map(|i| SlotPtr(slab.slot(i))).collect();
        Ok(Freelist {
            slab,
            top: Cell::new(None),
            free: UnsafeCell::new(free),
            exhausted: Cell::new(0),
        })
    }

    /// Moves `value` into a free slot, or hands it back in [`Exhausted`] (counted) if
    /// every slot is in use.
    ///
    /// ```
    /// let pool = handoff_pool::Freelist::<String>::new(1).unwrap();
    /// let order = pool.try_alloc("buy 100".to_string()).unwrap();
    /// assert_eq!(order.as_str(), "buy 100");
    /// ```
    #[inline]
    pub fn try_alloc(&self, value: T) -> Result<FreelistBox<'_, T>, Exhausted<T>> {
        let slot = match self.top.take() {
            Some(slot) => Some(slot),
            // SAFETY: no other reference to the list exists: `Freelist` is not `Sync`,
            // and this borrow ends before any user code (a destructor) can run.
            None => unsafe { (*self.free.get()).pop() },
        };
        let Some(slot) = slot else {
            self.count_exhausted();
            return Err(Exhausted(value));
        };
        // SAFETY: a slot on the free list holds no live value.
        unsafe { slot.0.as_ptr().write(value) };
        Ok(FreelistBox {
            ptr: slot.0,
            pool: self,
        })
    }

    /// Counts a refusal. The refused value stays out of this cold call: passing it
    /// would make the hot path build every value in a stack copy first.
    #[cold]
    #[inline(never)]
    fn count_exhausted(&self) {
        self.exhausted.set(self.exhausted.get() + 1);
    }

    /// Free slots now.
    pub fn available(&self) -> usize {
        // SAFETY: as in `try_alloc`: a short borrow with no user code inside.
        let below = unsafe { (*self.free.get()).len() };
        below + usize::from(self.top.get().is_some())
    }

    /// The pool's size.
    pub fn capacity(&self) -> usize {
        self.slab.len()
    }

    /// What the pool holds and has refused so far.
    ///
    /// ```
    /// use handoff_pool::{Freelist, FreelistStats};
    /// let pool = Freelist::<u8>::new(1).unwrap();
    /// let _a = pool.try_alloc(1).unwrap();
    /// assert!(pool.try_alloc(2).is_err());
    /// let s: FreelistStats = pool.stats();
    /// assert_eq!((s.capacity, s.available, s.exhausted), (1, 0, 1));
    /// ```
    pub fn stats(&self) -> FreelistStats {
        FreelistStats {
            capacity: self.capacity(),
            available: self.available(),
            exhausted: self.exhausted.get(),
        }
    }

    /// Moves the object out of its slot, frees the slot and returns the object; an
    /// object of another pool is handed back untouched in [`Foreign`]. (Dropping the
    /// box, or [`free`](Self::free), drops the object in its slot instead.)
    ///
    /// ```
    /// let pool = handoff_pool::Freelist::<String>::new(1).unwrap();
    /// let order = pool.try_alloc("buy 100".to_string()).unwrap();
    /// assert_eq!(pool.release(order).unwrap(), "buy 100");
    /// assert_eq!(pool.available(), 1);
    /// ```
    #[inline]
    pub fn release<'a>(
        &self,
        object: FreelistBox<'a, T>,
    ) -> Result<T, Foreign<FreelistBox<'a, T>>> {
        if !core::ptr::eq(object.pool, self) {
            return Err(Foreign(object));
        }
        let object = ManuallyDrop::new(object);
        // SAFETY: the box owned a live `T` in this slot and is never dropped, so the
        // value is moved out once; the slot is empty from here on.
        let value = unsafe { object.ptr.as_ptr().read() };
        self.give_back(SlotPtr(object.ptr));
        Ok(value)
    }

    /// Drops the object and frees its slot (also if the object's destructor panics),
    /// as dropping the box does; an object of another pool is handed back untouched in
    /// [`Foreign`].
    ///
    /// ```
    /// let a = handoff_pool::Freelist::<u8>::new(1).unwrap();
    /// let b = handoff_pool::Freelist::<u8>::new(1).unwrap();
    /// let x = a.try_alloc(1).unwrap();
    /// let x = b.free(x).unwrap_err().into_inner();
    /// a.free(x).unwrap();
    /// assert_eq!(a.available(), 1);
    /// ```
    #[inline]
    pub fn free<'a>(&self, object: FreelistBox<'a, T>) -> Result<(), Foreign<FreelistBox<'a, T>>> {
        if !core::ptr::eq(object.pool, self) {
            return Err(Foreign(object));
        }
        drop(object);
        Ok(())
    }

    #[inline]
    fn give_back(&self, slot: SlotPtr<T>) {
        if let Some(below) = self.top.replace(Some(slot)) {
            // SAFETY: as in `try_alloc`. The list has room for every slot, so this
            // push never reallocates.
            unsafe { (*self.free.get()).push(below) };
        }
    }
}

impl<T> FreelistBox<'_, T> {
    /// Takes the object out and frees its slot.
    ///
    /// ```
    /// let pool = handoff_pool::Freelist::<String>::new(1).unwrap();
    /// let s = pool.try_alloc("x".to_string()).unwrap().into_inner();
    /// assert_eq!((s.as_str(), pool.available()), ("x", 1));
    /// ```
    pub fn into_inner(self) -> T {
        let pool = self.pool;
        match pool.release(self) {
            Ok(v) => v,
            Err(_) => unreachable!("a box always belongs to the pool it refers to"),
        }
    }
}

impl<T> Deref for FreelistBox<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the `FreelistBox` owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for FreelistBox<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the `FreelistBox` owns a live `T` in this slot; `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

/// Frees a slot once its object's destructor has run or unwound.
struct GiveBack<'a, T> {
    pool: &'a Freelist<T>,
    slot: SlotPtr<T>,
}

impl<T> Drop for GiveBack<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.pool.give_back(self.slot);
    }
}

impl<T> Drop for FreelistBox<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let _give_back = GiveBack {
            pool: self.pool,
            slot: SlotPtr(self.ptr),
        };
        // SAFETY: the `FreelistBox` owns a live `T`; this is its one drop. The destructor may
        // allocate from the same pool: the free list is not borrowed here.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for FreelistBox<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T> fmt::Debug for Freelist<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Freelist")
            .field("capacity", &self.capacity())
            .field("available", &self.available())
            .finish_non_exhaustive()
    }
}
