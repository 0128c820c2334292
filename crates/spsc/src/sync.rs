//! The synchronisation primitives the ring is built from, switched to loom's
//! model-checked versions under `cfg(loom)`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[cfg(all(not(loom), feature = "alloc"))]
pub(crate) use alloc::sync::Arc;

// No `AtomicBool` here: only `StaticChannel` uses it, and it is not built under loom.
#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

/// Loom cannot see accesses through raw pointers, so under `cfg(loom)` every slot
/// has a shadow `loom::cell::UnsafeCell<()>` that is touched whenever the slot is
/// written (producer) or read (consumer). Loom then reports any slot access that is
/// not ordered by the head/tail release/acquire pairs as a data race.
#[cfg(loom)]
pub(crate) type Shadow = alloc::boxed::Box<[loom::cell::UnsafeCell<()>]>;

/// A cell whose contents one side at a time may access through a raw pointer; under
/// `cfg(loom)` loom's, which checks every access for a data race (the API is loom's).
#[cfg(not(loom))]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(core::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a pointer for reading.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a pointer for writing.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
