//! [`Locked`](super::Locked): the single-threaded stack behind one mutex.

use core::ptr::NonNull;

use super::single::Stack;
use super::Store;
use crate::sync::{lock, lock_counted, Mutex};
use crate::{ConfigError, PoolConfig};

/// The [`Locked`](super::Locked) store.
pub struct LockedStore<T> {
    stack: Mutex<Stack<T>>,
}

// SAFETY: the stack holds slot addresses only; every access is under the mutex. A
// slot's value is written and read by whoever holds the slot, and the hand-over of a
// slot between threads goes through the mutex, which orders it.
unsafe impl<T: Send> Send for LockedStore<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for LockedStore<T> {}

// SAFETY: as for the single-threaded stack, with every access under the mutex.
unsafe impl<T> Store<T> for LockedStore<T> {
    type Token = ();

    fn new(config: &PoolConfig) -> Result<Self, ConfigError> {
        config.check_magazine()?;
        let (capacity, placement) = (config.capacity, config.placement);
        Ok(LockedStore {
            stack: Mutex::new(Stack::new(capacity, placement)?),
        })
    }

    #[inline(always)]
    fn pop(&self) -> Option<(NonNull<T>, ())> {
        lock_counted(&self.stack).pop().map(|p| (p, ()))
    }

    #[inline(always)]
    unsafe fn push(&self, slot: NonNull<T>, _token: ()) {
        lock_counted(&self.stack).push(slot);
    }

    fn capacity(&self) -> usize {
        lock(&self.stack).blocks.total()
    }

    fn in_use(&self) -> Option<usize> {
        Some(lock(&self.stack).in_use())
    }
}
