//! Document 003's fragmentation figure ("Tick Data Processing (1M ticks)": malloc 18%,
//! the arena 0%), which the document gives without its workload. Ours, fixed before it
//! was first measured: ticks of 1000 symbols arrive round-robin; each symbol keeps its
//! last 100 ticks (one `Box<Tick>` each, the oldest freed as a new one comes) and,
//! replaced at every 10th tick of the symbol, a snapshot buffer of 16 to 1024 bytes
//! (uniform, the same stream every run). Once every tick has arrived, glibc's heap is
//! read with `mallinfo2`: the free bytes it holds inside its heap over the heap's size
//! is the fragmentation. It runs in a child process whose allocator is glibc (the
//! patterns child task), so nothing else has used that heap. An arena never frees a
//! block, so it has no free bytes inside it: 0% by construction, not measured.

use super::work::Tick;
use serde::Serialize;
use std::collections::VecDeque;
use std::hint::black_box;

/// Symbols of the workload.
const SYMBOLS: usize = 1000;
/// Ticks each symbol keeps.
const DEPTH: usize = 100;
/// Every this many ticks of a symbol, its snapshot is replaced.
const SNAPSHOT_EVERY: u64 = 10;

/// glibc's heap after the tick processing.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Fragmentation {
    /// Ticks processed.
    pub ticks: u64,
    /// Bytes of glibc's heap (`mallinfo2().arena`: memory obtained with `brk`/arenas).
    pub heap: u64,
    /// Free bytes held inside it (`fordblks`).
    pub free_in_heap: u64,
    /// Bytes the live ticks and snapshots ask for.
    pub live_requested: u64,
}

impl Fragmentation {
    /// Whether glibc's heap served the workload: the bytes in use in it (the heap less
    /// its free bytes) are at least the live bytes. A process whose allocator is another
    /// one reads a glibc heap that other code (the C library's own buffers) may have
    /// grown, even past the live bytes, but whose bytes in use are not the workload's.
    pub fn glibc_served(&self) -> bool {
        self.heap.saturating_sub(self.free_in_heap) >= self.live_requested
            && self.live_requested > 0
    }

    /// Free bytes inside the heap over the heap.
    pub fn fraction(&self) -> f64 {
        self.free_in_heap as f64 / self.heap.max(1) as f64
    }

    /// The four figures as the child's output.
    pub fn to_bytes(self) -> Vec<u8> {
        [
            self.ticks,
            self.heap,
            self.free_in_heap,
            self.live_requested,
        ]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
    }

    /// From the child's output.
    pub fn from_bytes(b: &[u8]) -> Option<Fragmentation> {
        let w = |k: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                b.get(k * 8..k * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Fragmentation {
            ticks: w(0)?,
            heap: w(1)?,
            free_in_heap: w(2)?,
            live_requested: w(3)?,
        })
    }
}

/// The tick processing on this process's allocator, then glibc's heap figures
/// (zeros under another allocator: its own heap is not glibc's).
pub fn tick_processing(ticks: u64) -> Fragmentation {
    let mut history: Vec<VecDeque<Box<Tick>>> = (0..SYMBOLS)
        .map(|_| VecDeque::with_capacity(DEPTH))
        .collect();
    let mut snapshots: Vec<Vec<u8>> = vec![Vec::new(); SYMBOLS];
    let mut rng = 0x5eed_u64;
    for i in 0..ticks {
        let s = (i % SYMBOLS as u64) as usize;
        let h = &mut history[s];
        if h.len() == DEPTH {
            drop(h.pop_front());
        }
        h.push_back(black_box(Box::new(Tick::new(i))));
        if (i / SYMBOLS as u64).is_multiple_of(SNAPSHOT_EVERY) {
            rng = rng
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let size = 16 + (rng >> 33) as usize % (1024 - 16 + 1);
            snapshots[s] = black_box(vec![i as u8; size]);
        }
    }
    let live = history.iter().map(VecDeque::len).sum::<usize>() * size_of::<Tick>()
        + snapshots.iter().map(Vec::len).sum::<usize>();
    // SAFETY: `mallinfo2` only reads glibc's allocator statistics into the returned
    // struct; it takes no pointer and the heap is not modified.
    let info = unsafe { libc::mallinfo2() };
    black_box((&history, &snapshots));
    Fragmentation {
        ticks,
        heap: info.arena as u64,
        free_in_heap: info.fordblks as u64,
        live_requested: live as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_round_trip_and_the_heap_holds_the_live_bytes() {
        // 100 000 ticks: every symbol's history full, about 2 MiB live.
        let f = tick_processing(100_000);
        assert_eq!(f.ticks, 100_000);
        assert!(f.live_requested > 0);
        assert_eq!(
            Fragmentation::from_bytes(&f.to_bytes()).unwrap().heap,
            f.heap
        );
        assert!(Fragmentation::from_bytes(&[0; 31]).is_none());
        assert!(f.free_in_heap <= f.heap);
        // The test binary's allocator is glibc's, except in .ci/run's pass where every
        // binary runs on handoff-alloc: there glibc's heap served none of it.
        assert_eq!(f.glibc_served(), !cfg!(handoff_global_alloc), "{f:?}");
    }
}
