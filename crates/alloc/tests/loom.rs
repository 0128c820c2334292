//! Loom model of the remote-free stack: two threads push chains of blocks while the
//! owner takes the stack; every block arrives exactly once, with what its freeing
//! thread wrote into it before the push.
#![cfg(loom)]

use handoff_alloc::remote::{next, set_next, RemoteStack};
use loom::sync::Arc;
use loom::thread;

/// A block: its first word is the link, its second what the freeing thread wrote.
fn blocks(n: usize, mark: usize) -> Vec<*mut u8> {
    (0..n)
        .map(|i| Box::into_raw(Box::new([0usize, mark * 100 + i])).cast::<u8>())
        .collect()
}

fn take(stack: &RemoteStack, seen: &mut Vec<usize>) {
    let mut p = stack.take_all();
    while !p.is_null() {
        // SAFETY: a block pushed by a test thread; the acquire in take_all orders
        // this read after the push.
        let after = unsafe { next(p) };
        // SAFETY: as above; the block is a [usize; 2].
        seen.push(unsafe { p.cast::<usize>().add(1).read() });
        // SAFETY: made by Box::into_raw in `blocks`, taken once.
        drop(unsafe { Box::from_raw(p.cast::<[usize; 2]>()) });
        p = after;
    }
}

#[test]
fn every_pushed_block_is_taken_once() {
    loom::model(|| {
        let stack = Arc::new(RemoteStack::new());
        let pushers: Vec<_> = (1..=2)
            .map(|mark| {
                let stack = stack.clone();
                // Raw pointers are not Send; pass addresses.
                let chain: Vec<usize> = blocks(2, mark).into_iter().map(|p| p as usize).collect();
                thread::spawn(move || {
                    let b: Vec<*mut u8> = chain.iter().map(|&a| a as *mut u8).collect();
                    // SAFETY: fresh blocks, linked here, pushed once.
                    unsafe {
                        set_next(b[0], b[1]);
                        stack.push_chain(b[0], b[1]);
                    }
                })
            })
            .collect();
        let mut seen = Vec::new();
        take(&stack, &mut seen);
        for p in pushers {
            p.join().unwrap();
        }
        take(&stack, &mut seen);
        seen.sort_unstable();
        assert_eq!(seen, vec![100, 101, 200, 201]);
        assert!(stack.is_empty());
    });
}
