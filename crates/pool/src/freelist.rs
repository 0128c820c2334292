//! A single-thread pool: a slab and a stack of its free slots. The baseline the
//! cross-thread pools are measured against (document 000's "plain freelist").

use core::cell::{Cell, UnsafeCell};
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use alloc::vec::Vec;

use crate::slab::{Slab, SlotPtr};
use crate::{ConfigError, Exhausted};

/// A fixed-size pool for one thread. Objects are [`Local`]s that borrow the pool and
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
    /// Free slots; reached only inside this module's methods, never across a call
    /// into user code, so the `UnsafeCell` is never borrowed twice.
    free: UnsafeCell<Vec<SlotPtr<T>>>,
    exhausted: Cell<u64>,
}

/// An object in a [`Freelist`] slot. Dropping it drops the object and frees the slot;
/// forgetting it leaks the object and the slot (never reused) until the pool is
/// dropped.
pub struct Local<'a, T> {
    ptr: NonNull<T>,
    pool: &'a Freelist<T>,
}

// SAFETY: moving the whole pool moves its slots and their (absent: no `Local` can be
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
    pub fn try_alloc(&self, value: T) -> Result<Local<'_, T>, Exhausted<T>> {
        // SAFETY: no other reference to the list exists: `Freelist` is not `Sync`, and
        // this borrow ends before any user code (a destructor) can run.
        let slot = unsafe { (*self.free.get()).pop() };
        let Some(slot) = slot else {
            return Err(self.exhausted(value));
        };
        // SAFETY: a slot on the free list holds no live value.
        unsafe { slot.0.as_ptr().write(value) };
        Ok(Local {
            ptr: slot.0,
            pool: self,
        })
    }

    #[cold]
    #[inline(never)]
    fn exhausted(&self, value: T) -> Exhausted<T> {
        self.exhausted.set(self.exhausted.get() + 1);
        Exhausted(value)
    }

    /// Free slots now.
    pub fn available(&self) -> usize {
        // SAFETY: as in `try_alloc`: a short borrow with no user code inside.
        unsafe { (*self.free.get()).len() }
    }

    /// The pool's size.
    pub fn capacity(&self) -> usize {
        self.slab.len()
    }

    /// Allocations refused because every slot was in use.
    pub fn exhausted_count(&self) -> u64 {
        self.exhausted.get()
    }

    #[inline]
    fn give_back(&self, slot: SlotPtr<T>) {
        // SAFETY: as in `try_alloc`. The list has room for every slot, so this push
        // never reallocates.
        unsafe { (*self.free.get()).push(slot) };
    }
}

impl<T> Deref for Local<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the `Local` owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for Local<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the `Local` owns a live `T` in this slot; `&mut self` is unique.
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

impl<T> Drop for Local<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let _give_back = GiveBack {
            pool: self.pool,
            slot: SlotPtr(self.ptr),
        };
        // SAFETY: the `Local` owns a live `T`; this is its one drop. The destructor may
        // allocate from the same pool: the free list is not borrowed here.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for Local<'_, T> {
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
