//! Drives handoff-alloc with alloc / free / realloc sequences and checks each block
//! against a model: alignment, no overlap with any live block, contents intact until
//! freed, realloc keeping the prefix. The fuzzer's own allocations use the system
//! allocator; handoff-alloc is called directly.
#![no_main]

use arbitrary::Arbitrary;
use handoff_alloc::HandoffAlloc;
use libfuzzer_sys::fuzz_target;
use std::alloc::{GlobalAlloc, Layout};

#[derive(Arbitrary, Debug)]
enum Op {
    Alloc { size: u32, align_shift: u8, zeroed: bool },
    Free { index: u16 },
    Realloc { index: u16, size: u32 },
    /// Frees on another thread (a remote free), then flushes it.
    FreeElsewhere { index: u16 },
}

struct Block {
    p: *mut u8,
    layout: Layout,
    fill: u8,
}

fn check(b: &Block) {
    // SAFETY: the block is live and `layout.size()` bytes long.
    let bytes = unsafe { std::slice::from_raw_parts(b.p, b.layout.size()) };
    assert!(bytes.iter().all(|&x| x == b.fill), "a live block changed");
}

fn size_of(size: u32) -> usize {
    // Mostly small, sometimes big: the low bits pick the range.
    match size % 8 {
        0 => 1 + (size as usize >> 3) % (1 << 20),
        1 => 1 + (size as usize >> 3) % 40_000,
        _ => 1 + (size as usize >> 3) % 600,
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let a = HandoffAlloc;
    let mut live: Vec<Block> = Vec::new();
    let mut fill = 0u8;
    for op in ops.into_iter().take(2000) {
        match op {
            Op::Alloc { size, align_shift, zeroed } => {
                let align = 1usize << (align_shift % 17);
                let layout = Layout::from_size_align(size_of(size), align).unwrap();
                // SAFETY: a valid non-zero layout.
                let p = unsafe { if zeroed { a.alloc_zeroed(layout) } else { a.alloc(layout) } };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "misaligned");
                for b in &live {
                    let (s, e) = (b.p as usize, b.p as usize + b.layout.size());
                    assert!(p as usize + layout.size() <= s || p as usize >= e, "overlap");
                }
                if zeroed {
                    // SAFETY: a live block of `size` bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(p, layout.size()) };
                    assert!(bytes.iter().all(|&x| x == 0), "alloc_zeroed not zero");
                }
                fill = fill.wrapping_add(1);
                // SAFETY: a live block of `size` bytes.
                unsafe { std::ptr::write_bytes(p, fill, layout.size()) };
                live.push(Block { p, layout, fill });
            }
            Op::Free { index } if !live.is_empty() => {
                let b = live.swap_remove(index as usize % live.len());
                check(&b);
                // SAFETY: allocated with this layout, freed once.
                unsafe { a.dealloc(b.p, b.layout) };
            }
            Op::FreeElsewhere { index } if !live.is_empty() => {
                let b = live.swap_remove(index as usize % live.len());
                check(&b);
                let (p, layout) = (b.p as usize, b.layout);
                std::thread::spawn(move || {
                    // SAFETY: allocated with this layout, freed once, by this thread.
                    unsafe { HandoffAlloc.dealloc(p as *mut u8, layout) };
                    handoff_alloc::flush();
                })
                .join()
                .unwrap();
            }
            Op::Realloc { index, size } if !live.is_empty() => {
                let i = index as usize % live.len();
                let b = &mut live[i];
                check(b);
                let new_size = size_of(size);
                // SAFETY: `b` is live with its layout; `new_size` is non-zero and small.
                let q = unsafe { a.realloc(b.p, b.layout, new_size) };
                assert!(!q.is_null());
                assert_eq!(q as usize % b.layout.align(), 0);
                let keep = b.layout.size().min(new_size);
                // SAFETY: `q` is live with at least `keep` bytes.
                let bytes = unsafe { std::slice::from_raw_parts(q, keep) };
                assert!(bytes.iter().all(|&x| x == b.fill), "realloc lost bytes");
                b.p = q;
                b.layout = Layout::from_size_align(new_size, b.layout.align()).unwrap();
                // SAFETY: live, `new_size` bytes.
                unsafe { std::ptr::write_bytes(q, b.fill, new_size) };
            }
            _ => {}
        }
    }
    for b in live {
        check(&b);
        // SAFETY: allocated with this layout, freed once.
        unsafe { a.dealloc(b.p, b.layout) };
    }
});
