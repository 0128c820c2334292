//! Loom models of the remote-free stack (two threads push chains of blocks while the
//! owner takes the stack; every block arrives exactly once, with what its freeing
//! thread wrote into it before the push; and the same with another heap taking the
//! stack too, as a heap out of a class does) and of the arena's publication (a thread
//! decoding an address sees the arena's base and shape as one pair).
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

/// A pusher, the owner and another heap's thread taking the stack at once (the latter
/// when its heap runs out of a class, `Heap::take_returned`): every block is taken
/// exactly once, by one of the two, with what the pusher wrote.
#[test]
fn two_takers_take_every_block_once() {
    loom::model(|| {
        let stack = Arc::new(RemoteStack::new());
        let chain: Vec<usize> = blocks(2, 1).into_iter().map(|p| p as usize).collect();
        let pusher = {
            let stack = stack.clone();
            thread::spawn(move || {
                let b: Vec<*mut u8> = chain.iter().map(|&a| a as *mut u8).collect();
                // SAFETY: fresh blocks, linked here, pushed once.
                unsafe {
                    set_next(b[0], b[1]);
                    stack.push_chain(b[0], b[1]);
                }
            })
        };
        let other = {
            let stack = stack.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                take(&stack, &mut seen);
                seen
            })
        };
        let mut seen = Vec::new();
        take(&stack, &mut seen);
        pusher.join().unwrap();
        seen.extend(other.join().unwrap());
        take(&stack, &mut seen);
        seen.sort_unstable();
        assert_eq!(seen, vec![100, 101]);
        assert!(stack.is_empty());
    });
}

/// The arena is published while another thread decodes an address (a free of a big
/// block mapped before the arena existed, issue 47): the decoding thread sees no arena,
/// or the arena with its own shape, never the new base with the old shape, which
/// would decode an address just above a reduced arena as a block inside it.
#[test]
fn the_arena_base_and_shape_are_seen_together() {
    use handoff_alloc::arena_word::{ArenaWord, NO_ARENA};
    const BASE: usize = 0x7f00_0000_0000;
    const SHAPE: usize = 3;
    loom::model(|| {
        let word = Arc::new(ArenaWord::new());
        let w = word.clone();
        let publisher = thread::spawn(move || assert!(w.publish(BASE, SHAPE)));
        let seen = word.load();
        assert!(
            seen == (NO_ARENA, 0) || seen == (BASE, SHAPE),
            "a torn view of the arena: {seen:x?}"
        );
        publisher.join().unwrap();
        assert_eq!(word.load(), (BASE, SHAPE));
    });
}
