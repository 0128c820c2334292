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
