//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Counts the drops of `n` numbered items, from any thread, with no heap allocation
/// per item (so tests that leak items on purpose keep Miri's leak check on). One id can
/// be made to panic in its destructor, after it has been counted.
pub struct Ledger {
    drops: Vec<AtomicU32>,
    panic_on: AtomicUsize,
}

/// An item of a [`Ledger`].
pub struct Tok<'a> {
    pub id: usize,
    ledger: &'a Ledger,
}

impl std::fmt::Debug for Tok<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tok({})", self.id)
    }
}

impl Ledger {
    pub fn new(n: usize) -> Self {
        Ledger {
            drops: (0..n).map(|_| AtomicU32::new(0)).collect(),
            panic_on: AtomicUsize::new(usize::MAX),
        }
    }

    pub fn tok(&self, id: usize) -> Tok<'_> {
        Tok { id, ledger: self }
    }

    pub fn panic_on(&self, id: usize) {
        self.panic_on.store(id, Ordering::Relaxed);
    }

    pub fn drops(&self, id: usize) -> u32 {
        self.drops[id].load(Ordering::Relaxed)
    }

    /// Asserts that exactly the ids in `dropped` were dropped once and all others never.
    pub fn assert_dropped(&self, dropped: impl Fn(usize) -> bool) {
        for id in 0..self.drops.len() {
            let want = u32::from(dropped(id));
            assert_eq!(
                self.drops(id),
                want,
                "item {id} dropped {} times",
                self.drops(id)
            );
        }
    }
}

impl Drop for Tok<'_> {
    fn drop(&mut self) {
        self.ledger.drops[self.id].fetch_add(1, Ordering::Relaxed);
        if self.ledger.panic_on.load(Ordering::Relaxed) == self.id {
            panic!("destructor of item {} panics", self.id);
        }
    }
}

/// Retries `f` until it returns `Ok`, handing the value back each time.
pub fn retry<V, B, E>(
    mut value: V,
    mut f: impl FnMut(V) -> Result<B, E>,
    back: impl Fn(E) -> V,
) -> B {
    loop {
        match f(value) {
            Ok(b) => return b,
            Err(e) => {
                value = back(e);
                std::hint::spin_loop();
                std::thread::yield_now();
            }
        }
    }
}
