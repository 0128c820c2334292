//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A value that counts its drops into a shared counter.
#[derive(Debug)]
pub struct Counted {
    pub id: u64,
    drops: Arc<AtomicUsize>,
}

impl Counted {
    pub fn new(id: u64, drops: &Arc<AtomicUsize>) -> Self {
        Counted {
            id,
            drops: Arc::clone(drops),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::Relaxed)
}

/// Spin until `f` returns `Some`.
pub fn spin<T>(mut f: impl FnMut() -> Option<T>) -> T {
    loop {
        if let Some(v) = f() {
            return v;
        }
        std::hint::spin_loop();
    }
}

/// Records how many times each of `n` numbered items has been dropped, with no heap
/// allocation per item, so that a test may leak items on purpose (Miri's leak check
/// then stays quiet) and still account for every other drop exactly. One item's
/// destructor can be made to panic after it has been counted.
pub struct Ledger {
    drops: Vec<std::cell::Cell<u32>>,
    panic_on: std::cell::Cell<Option<usize>>,
}

/// An item of a [`Ledger`].
#[derive(Debug)]
pub struct Tok<'a> {
    pub id: usize,
    ledger: &'a Ledger,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.counts()).finish()
    }
}

impl Ledger {
    pub fn new(n: usize) -> Self {
        Ledger {
            drops: (0..n).map(|_| std::cell::Cell::new(0)).collect(),
            panic_on: std::cell::Cell::new(None),
        }
    }

    pub fn tok(&self, id: usize) -> Tok<'_> {
        Tok { id, ledger: self }
    }

    /// Makes the destructor of item `id` panic (after its drop is counted).
    pub fn panic_on(&self, id: usize) {
        self.panic_on.set(Some(id));
    }

    pub fn counts(&self) -> Vec<u32> {
        self.drops.iter().map(std::cell::Cell::get).collect()
    }

    /// Asserts that exactly the items in `dropped` have been dropped, each once, and
    /// no other item at all.
    #[track_caller]
    pub fn assert_dropped(&self, dropped: impl IntoIterator<Item = usize>) {
        let mut want = vec![0u32; self.drops.len()];
        for id in dropped {
            want[id] += 1;
        }
        assert_eq!(
            self.counts(),
            want,
            "drops per item id: what happened (left), what should have (right)"
        );
    }
}

impl Drop for Tok<'_> {
    fn drop(&mut self) {
        let cell = &self.ledger.drops[self.id];
        cell.set(cell.get() + 1);
        if self.ledger.panic_on.get() == Some(self.id) {
            panic!("item {} panics in drop (on purpose)", self.id);
        }
    }
}
