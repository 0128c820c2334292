//! [`SingleThreaded`](super::SingleThreaded): a stack of free slot addresses with no
//! synchronisation.

use core::cell::UnsafeCell;
use core::ptr::NonNull;

use alloc::vec::Vec;

use super::blocks::Blocks;
use super::{Capacity, Store};
use crate::numa::Placement;
use crate::slab::SlotPtr;
use crate::{ConfigError, PoolConfig};

/// The free stack and the blocks it came from. Shared by the single-threaded store
/// (in an `UnsafeCell`) and the locked one (in a mutex).
///
/// The stack's top, the slot released last, is kept in a field of its own, `top`, and
/// the rest in `free`. An allocation that follows a release then reads the slot back
/// from one fixed place instead of an indexed one in the buffer, which the processor
/// forwards from the release's store much sooner (no length to read first, no
/// address to compute). The order is a plain stack's.
pub(crate) struct Stack<T> {
    top: Option<SlotPtr<T>>,
    free: Vec<SlotPtr<T>>,
    pub(crate) blocks: Blocks<T>,
}

impl<T> Stack<T> {
    pub(crate) fn new(capacity: Capacity, placement: Placement) -> Result<Self, ConfigError> {
        let blocks = Blocks::new(capacity, placement)?;
        let mut free = Vec::with_capacity(blocks.total());
        free.extend(blocks.slots(0));
        Ok(Stack {
            top: None,
            free,
            blocks,
        })
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<NonNull<T>> {
        if let Some(s) = self.top.take() {
            return Some(s.0);
        }
        match self.free.pop() {
            Some(s) => Some(s.0),
            None => self.grow_pop(),
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_pop(&mut self) -> Option<NonNull<T>> {
        let b = self.blocks.grow()?;
        // Room for every slot, so giving slots back never reallocates.
        self.free
            .reserve_exact(self.blocks.total() - self.free.len());
        let Stack { free, blocks, .. } = self;
        free.extend(blocks.slots(b));
        free.pop().map(|s| s.0)
    }

    /// Slots handed out and not given back.
    pub(crate) fn in_use(&self) -> usize {
        self.blocks.total() - self.free.len() - usize::from(self.top.is_some())
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, slot: NonNull<T>) {
        if let Some(below) = self.top.replace(SlotPtr(slot)) {
            // Room for every slot, so this never reallocates.
            self.free.push(below);
        }
    }
}

/// The [`SingleThreaded`](super::SingleThreaded) store.
pub struct SingleStore<T> {
    /// Borrowed only inside `pop` and `push`, which run no user code, and never
    /// from two threads (the store is not `Sync`).
    stack: UnsafeCell<Stack<T>>,
}

// SAFETY: the store holds only slot addresses and the slot memory; no live `T`
// exists in it while it is moved (handles borrow the pool), so moving it to another
// thread moves no `T`.
unsafe impl<T> Send for SingleStore<T> {}

// SAFETY: `pop` hands each slot out once (it leaves the stack), `push` takes it back;
// the blocks live as long as the store.
unsafe impl<T> Store<T> for SingleStore<T> {
    type Token = ();

    fn new(config: &PoolConfig) -> Result<Self, ConfigError> {
        config.check_magazine()?;
        let (capacity, placement) = (config.capacity, config.placement);
        Ok(SingleStore {
            stack: UnsafeCell::new(Stack::new(capacity, placement)?),
        })
    }

    #[inline(always)]
    fn pop(&self) -> Option<(NonNull<T>, ())> {
        // SAFETY: the only borrow of the stack: the store is not `Sync`, and the
        // borrow ends before any user code can run.
        let stack = unsafe { &mut *self.stack.get() };
        stack.pop().map(|p| (p, ()))
    }

    #[inline(always)]
    unsafe fn push(&self, slot: NonNull<T>, _token: ()) {
        // SAFETY: as in `pop`.
        let stack = unsafe { &mut *self.stack.get() };
        stack.push(slot);
    }

    fn capacity(&self) -> usize {
        // SAFETY: as in `pop`.
        unsafe { &*self.stack.get() }.blocks.total()
    }

    fn in_use(&self) -> Option<usize> {
        // SAFETY: as in `pop`.
        Some(unsafe { &*self.stack.get() }.in_use())
    }
}
