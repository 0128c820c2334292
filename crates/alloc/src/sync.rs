//! The atomics the remote-free stack is built from, switched to loom's model-checked
//! versions under `cfg(loom)`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, Ordering};
