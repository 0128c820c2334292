//! The atomics the remote-free stack and the arena's published word are built from,
//! switched to loom's model-checked versions under `cfg(loom)`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
