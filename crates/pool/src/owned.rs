//! [`PooledArc`]: an object in a [`Pool`] slot that owns a share of its pool, so it can
//! travel anywhere (a `handoff_spsc` ring, a channel, a `'static` thread) and outlive
//! the code that made it.

use core::fmt;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use alloc::sync::Arc;

use crate::policy::{Policy, SingleThreaded, Store};
use crate::pool::PutBack;
use crate::{Exhausted, Pool};

/// An object in a slot of a pool kept in an `Arc`: it holds a clone of the `Arc`, so
/// the pool lives as long as any of its objects. Dropping it drops the object and
/// puts the slot back (also if the object's destructor panics); forgetting it leaks
/// the object, the slot, and the pool. Made by [`Pool::try_alloc_arc`].
///
/// `Send` when `T: Send` and the pool is `Sync` (the [`Locked`](crate::policy::Locked),
/// [`LockFree`](crate::policy::LockFree) and [`ThreadCached`](crate::policy::ThreadCached)
/// policies): then it can be sent to the thread that frees it, which a [`Pooled`]
/// (borrowing its pool) cannot outside a `std::thread::scope`.
///
/// [`Pooled`]: crate::Pooled
///
/// ```
/// use std::sync::Arc;
/// use handoff_pool::{policy::LockFree, Capacity, Pool, PooledArc};
///
/// struct Order { id: u64, qty: i64 }
///
/// let pool = Arc::new(Pool::<Order, LockFree>::new(Capacity::Fixed(64)).unwrap());
/// let (mut tx, mut rx) = handoff_spsc::channel::<PooledArc<Order, LockFree>>(64);
/// let risk = std::thread::spawn(move || {
///     let mut checked = 0;
///     while checked < 100 {
///         if let Ok(order) = rx.try_pop() {
///             assert!(order.qty > 0 && order.id < 100);
///             checked += 1; // dropped here: the slot goes back to the pool
///         }
///     }
/// });
/// for id in 0..100 {
///     let mut order = loop {
///         match pool.try_alloc_arc(Order { id, qty: 10 }) {
///             Ok(o) => break o,
///             Err(e) => { let _ = e; std::thread::yield_now(); } // all 64 in flight
///         }
///     };
///     while let Err(e) = tx.try_push(order) {
///         order = e.into_inner();
///     }
/// }
/// risk.join().unwrap();
/// ```
///
/// A single-threaded pool has none (its objects stay on its thread):
///
/// ```compile_fail,E0277
/// use std::sync::Arc;
/// use handoff_pool::{Capacity, Pool};
/// let pool = Arc::new(Pool::<u8>::new(Capacity::Fixed(1)).unwrap());
/// let _ = pool.try_alloc_arc(1); // error: `Pool<u8>` is not `Sync`
/// ```
pub struct PooledArc<T, P: Policy = SingleThreaded> {
    ptr: NonNull<T>,
    token: <P::Store<T> as Store<T>>::Token,
    pool: Arc<Pool<T, P>>,
}

// SAFETY: a `PooledArc` owns a `T` and a share of the pool. Sending it sends the `T`
// (hence `T: Send`) and lets the other thread give the slot back and drop its share of
// the pool (hence `Pool: Sync`, which only the thread-safe policies are; an
// `Arc<Pool>` is then `Send` too, as `Pool: Send + Sync`).
unsafe impl<T: Send, P: Policy> Send for PooledArc<T, P> where Pool<T, P>: Sync + Send {}
// SAFETY: sharing it shares `&T` (hence `T: Sync`) and `&Pool`.
unsafe impl<T: Sync, P: Policy> Sync for PooledArc<T, P> where Pool<T, P>: Sync + Send {}

impl<T, P: Policy> Pool<T, P> {
    /// As [`try_alloc`](Self::try_alloc), for a pool in an `Arc`: the handle owns a
    /// clone of the `Arc` (one reference-count increment per allocation, one decrement
    /// per release), so it borrows nothing and can be sent anywhere the pool's policy
    /// allows.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use handoff_pool::{policy::Locked, Capacity, Pool};
    /// let pool = Arc::new(Pool::<String, Locked>::new(Capacity::Fixed(1)).unwrap());
    /// let order = pool.try_alloc_arc("buy 100".to_string()).unwrap();
    /// assert!(pool.try_alloc_arc("sell".to_string()).is_err());
    /// let t = std::thread::spawn(move || order.len()); // freed on that thread
    /// assert_eq!(t.join().unwrap(), 7);
    /// assert!(pool.try_alloc_arc("sell".to_string()).is_ok());
    /// ```
    ///
    /// Only for pools that can be shared (`Sync`: the thread-safe policies); a
    /// single-threaded pool's objects stay on its thread, where [`try_alloc`]'s borrowing
    /// handle does.
    ///
    /// [`try_alloc`]: Self::try_alloc
    #[inline]
    pub fn try_alloc_arc(self: &Arc<Self>, value: T) -> Result<PooledArc<T, P>, Exhausted<T>>
    where
        Self: Sync,
    {
        let Some((ptr, token)) = self.store.pop() else {
            self.count_exhausted();
            return Err(Exhausted(value));
        };
        // SAFETY: a slot just popped holds no value and is ours alone.
        unsafe { ptr.as_ptr().write(value) };
        Ok(PooledArc {
            ptr,
            token,
            pool: Arc::clone(self),
        })
    }
}

impl<T, P: Policy> PooledArc<T, P> {
    /// Takes the object out and puts the slot back.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use handoff_pool::{policy::LockFree, Capacity, Pool};
    /// let pool = Arc::new(Pool::<u64, LockFree>::new(Capacity::Fixed(1)).unwrap());
    /// let v = pool.try_alloc_arc(9).unwrap().into_inner();
    /// assert_eq!(v, 9);
    /// assert!(pool.try_alloc_arc(1).is_ok());
    /// ```
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: the handle owned the live value; it is read out once and the handle
        // is never dropped (`ManuallyDrop`).
        let value = unsafe { this.ptr.as_ptr().read() };
        // SAFETY: the slot came from this pool's store and is now empty.
        unsafe { this.pool.store.push(this.ptr, this.token) };
        // SAFETY: the `Arc` is moved out once, here, and `this` is never dropped, so
        // its count is decremented once.
        drop(unsafe { core::ptr::read(&this.pool) });
        value
    }

    /// The pool the object's slot belongs to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use handoff_pool::{policy::Locked, Capacity, Pool};
    /// let pool = Arc::new(Pool::<u8, Locked>::new(Capacity::Fixed(1)).unwrap());
    /// let o = pool.try_alloc_arc(1).unwrap();
    /// assert!(Arc::ptr_eq(o.pool(), &pool));
    /// ```
    pub fn pool(&self) -> &Arc<Pool<T, P>> {
        &self.pool
    }
}

impl<T, P: Policy> Deref for PooledArc<T, P> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the handle owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T, P: Policy> DerefMut for PooledArc<T, P> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the handle owns a live `T` in this slot; `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T, P: Policy> Drop for PooledArc<T, P> {
    #[inline]
    fn drop(&mut self) {
        let _put_back = PutBack {
            ptr: self.ptr,
            token: self.token,
            pool: &self.pool,
        };
        // SAFETY: the handle owns a live `T`; this is its one drop. The slot goes back
        // after it (or while its panic unwinds), then the `Arc` field is dropped.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug, P: Policy> fmt::Debug for PooledArc<T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
