//! The synchronisation primitives the pools are built from, switched to loom's
//! model-checked versions under `cfg(loom)`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(all(feature = "std", not(loom)))]
pub(crate) use std::sync::Mutex;

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;

/// One turn of a wait loop: a spin-loop hint, or a yield to loom's scheduler.
#[inline]
pub(crate) fn relax() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Locks a mutex whose critical sections run no user code and so cannot panic
/// half-way: a poisoned lock (impossible short of an allocation failure, which
/// aborts) is taken as it is.
#[cfg(any(feature = "std", loom))]
pub(crate) fn lock<T>(m: &Mutex<T>) -> impl core::ops::DerefMut<Target = T> + '_ {
    #[cfg(not(loom))]
    return m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    #[cfg(loom)]
    return m.lock().unwrap();
}

/// [`lock`], counting an acquisition that finds the mutex held
/// (`policy::contention`).
#[cfg(any(feature = "std", loom))]
pub(crate) fn lock_counted<T>(m: &Mutex<T>) -> impl core::ops::DerefMut<Target = T> + '_ {
    #[cfg(not(loom))]
    return match m.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            crate::policy::contention::waited_lock();
            m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    };
    #[cfg(loom)]
    return m.lock().unwrap();
}

/// Loom cannot see accesses through raw pointers, so under `cfg(loom)` every slot has
/// a shadow cell that is written whenever ownership of the slot's value changes hands
/// (a value written by the allocating side, dropped by the releasing side). Loom then
/// reports any reuse of a slot that is not ordered after its release as a data race.
#[cfg(loom)]
pub(crate) struct Shadow(alloc::boxed::Box<[loom::cell::UnsafeCell<()>]>);

#[cfg(loom)]
impl Shadow {
    pub(crate) fn new(slots: usize) -> Self {
        Shadow(
            (0..slots)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        )
    }

    pub(crate) fn touch(&self, slot: usize) {
        self.0[slot].with_mut(|_| ());
    }
}

/// Without loom the shadow is nothing and costs nothing.
#[cfg(not(loom))]
pub(crate) struct Shadow;

#[cfg(not(loom))]
impl Shadow {
    #[inline(always)]
    pub(crate) fn new(_slots: usize) -> Self {
        Shadow
    }

    #[inline(always)]
    pub(crate) fn touch(&self, _slot: usize) {}
}
