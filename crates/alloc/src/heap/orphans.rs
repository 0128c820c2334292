//! Heaps nobody owns: a thread takes one when it starts and gives it up when it exits
//! (`try_take`, `give_up`, `hand_back`); a heap whose class ran dry borrows the free
//! blocks of that class that such a heap holds (`borrow`, `lend`), found through a
//! per-class hint of the heaps nobody owns that may hold some (`ORPHANS`), and then
//! the blocks other threads returned to any heap that its thread has not taken yet
//! (`take_returned`, found through `RETURNED`).

use super::*;

/// Per class, the heaps nobody owns that may hold returned blocks of that class (on
/// their remote stack or in their inbox): bit `h % 64` of word `h / 64`. Only a hint (a
/// claim decides): whoever gives a heap up sets the bits of the classes it holds
/// returned blocks of, a thread that sends blocks to a heap nobody owns sets that
/// class's bit, and whoever takes a heap clears all of its bits.
pub(super) static ORPHANS: [[AtomicU64; HEAPS / 64]; NUM_CLASSES] =
    [const { [const { AtomicU64::new(0) }; HEAPS / 64] }; NUM_CLASSES];

const _: () = assert!(HEAPS.is_multiple_of(64), "orphan masks are whole words");

/// Per class, the heaps (owned or not) whose remote stack of that class may hold
/// blocks other threads returned: bit `h % 64` of word `h / 64`. Only a hint: set when
/// a batch is pushed ([`note_remote`]), cleared by a heap that finds the stack empty
/// when it looks ([`Heap::take_returned`]).
///
/// Why: blocks always go back to the heap that cut them, and in a program whose
/// threads come and go, a thread rarely gets the heap whose returned blocks fit what it
/// allocates: in 50 waves of 100 workers whose blocks a long-lived thread freed during
/// the next wave, each heap came to hold stock of every class it had ever been given
/// back, and heaps kept cutting new blocks (and committing new memory) for the classes
/// they lacked while other heaps' returned blocks of those classes waited.
pub(super) static RETURNED: [[AtomicU64; HEAPS / 64]; NUM_CLASSES] =
    [const { [const { AtomicU64::new(0) }; HEAPS / 64] }; NUM_CLASSES];

/// Whether some heap's remote stack of class `c` may hold returned blocks.
#[inline]
pub(super) fn any_returned(c: usize) -> bool {
    RETURNED[c].iter().any(|w| w.load(Ordering::Relaxed) != 0)
}

fn mark_orphan(h: usize, c: usize) {
    // Relaxed: a hint. A thread that acts on it claims the heap with an acquire
    // compare-and-swap (`try_take`) before it touches anything of it, and the blocks
    // come to it through the remote stack's release and acquire.
    ORPHANS[c][h / 64].fetch_or(1 << (h % 64), Ordering::Relaxed);
}

/// Clears every class's bit of heap `h`; its new owner calls it.
fn clear_orphan(h: usize) {
    for class in &ORPHANS {
        if class[h / 64].load(Ordering::Relaxed) & (1 << (h % 64)) != 0 {
            // Relaxed: a hint, as in `mark_orphan`.
            class[h / 64].fetch_and(!(1 << (h % 64)), Ordering::Relaxed);
        }
    }
}

/// Whether some heap nobody owns may hold free blocks of class `c`.
#[inline]
pub(super) fn any_orphan(c: usize) -> bool {
    ORPHANS[c].iter().any(|w| w.load(Ordering::Relaxed) != 0)
}

/// After blocks were pushed onto heap `owner`'s remote stack of class `c`: if nobody
/// owns it, says so in the hint. The push (a SeqCst swap) and this load, against
/// [`Heap::give_up`]'s SeqCst store and its look at the stack, are in one total order:
/// either the pusher sees the heap given up, or the heap's last owner sees the push.
/// Its memory then goes back once the heap has stayed idle (`release::release_idle`),
/// even if that heap's memory was given back before these blocks came.
pub(super) fn note_remote(owner: usize, c: usize) {
    if owner != 0 && !HEAP[owner].owned.load(Ordering::SeqCst) {
        mark_orphan(owner, c);
        crate::release::note_returned(owner);
    }
    let (word, bit) = (&RETURNED[c][owner / 64], 1 << (owner % 64));
    if word.load(Ordering::Relaxed) & bit == 0 {
        // Relaxed: a hint; the blocks themselves come through the remote stack's
        // release and acquire.
        word.fetch_or(bit, Ordering::Relaxed);
    }
}

impl Heap {
    /// Whether class `c` of this heap holds free blocks another heap may borrow: in
    /// its depot, taken into its inbox, or still on its remote stack.
    ///
    /// # Safety
    /// The caller owns this heap.
    pub(super) unsafe fn holds_free(&self, c: usize) -> bool {
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and the inbox.
        let held = unsafe { *bin.depot_len.get() > 0 || !(*bin.inbox.get()).is_null() };
        held || !self.remote[c].is_empty()
    }

    /// Takes heap `self` for the calling thread if nobody owns it; true if it did.
    pub(crate) fn try_take(&self) -> bool {
        // Acquire: the heap's last owner gave it up with a store that releases
        // (`hand_back`), so its magazines, depots and lists are ours as it left them.
        if self.owned.load(Ordering::Relaxed)
            || self
                .owned
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        // Relaxed: a count that only tells a waiting thread when to look again
        // (`claim`); the claim itself is the compare-and-swap above.
        OWNED.fetch_add(1, Ordering::Relaxed);
        clear_orphan(self.index());
        true
    }

    /// Gives the heap up when its thread exits: sends the remote frees its thread
    /// collected, gathers each class's free blocks into its depot (giving back the
    /// memory `release` says goes back at exit), hands the heap back, and gives back the
    /// memory of heaps left idle.
    ///
    /// # Safety
    /// The caller owns this heap and does not use it afterwards.
    pub(super) unsafe fn give_up(&self) {
        // SAFETY: the caller owns the heap; `retire` may forward borrowed blocks
        // through the outboxes, so they are flushed after it too.
        unsafe {
            self.flush_outboxes();
            self.retire_all(crate::release::now_ns());
            for c in 0..NUM_CLASSES {
                self.offer_spares(c);
            }
            self.flush_outboxes();
        }
        crate::release::note_given_up(self.index());
        // SAFETY: as above.
        unsafe { self.hand_back() };
        // A thread's exit is a moment to give back the memory of heaps left idle.
        crate::release::release_idle(crate::release::DECAY_NS);
    }

    /// Lets another thread take the heap, marking in the hint the classes it holds
    /// free blocks of, for a thread that runs out of them.
    ///
    /// # Safety
    /// The caller owns this heap, its outboxes are empty, and it does not use the
    /// heap afterwards.
    pub(crate) unsafe fn hand_back(&self) {
        let mut holds = 0u32;
        for c in 0..NUM_CLASSES {
            // SAFETY: the caller owns the heap.
            if unsafe { self.holds_free(c) } {
                holds |= 1 << c;
            }
        }
        // SeqCst: see `note_remote`.
        self.owned.store(false, Ordering::SeqCst);
        // Relaxed: as in `try_take`.
        OWNED.fetch_sub(1, Ordering::Relaxed);
        let mut returned = false;
        for c in 0..NUM_CLASSES {
            let pushed = !self.remote[c].is_empty();
            returned |= pushed;
            if holds & (1 << c) != 0 || pushed {
                mark_orphan(self.index(), c);
            }
        }
        if returned {
            // Blocks pushed while this thread held the heap (`note_remote` saw it
            // owned): their memory goes back once the heap has stayed idle.
            crate::release::note_returned(self.index());
        }
    }

    /// Takes up to a batch of class `c`'s free blocks from heap `other`, which this
    /// thread has taken: those other threads returned to it (its inbox, refilled from
    /// its remote stack), else those in its depot. They come back as a chain linked
    /// through their first words; null when it holds none.
    ///
    /// # Safety
    /// This thread owns `other` (taken from nobody) and the arena is reserved.
    unsafe fn lend(other: &Heap, c: usize) -> *mut u8 {
        let bin = &other.bins[c];
        // SAFETY: this thread owns `other`, so its inbox and depot are ours to touch;
        // the chains hold free blocks of class `c`, linked through their first words,
        // that nobody else can reach.
        unsafe {
            let inbox = &mut *bin.inbox.get();
            if inbox.is_null() {
                *inbox = other.remote[c].take_all();
            }
            // At most a batch: the rest stays for the next borrower (or the heap's
            // next owner), so a thread that needs one block does not take thousands.
            let first = *inbox;
            if !first.is_null() {
                let mut last = first;
                for _ in 1..BATCH {
                    let after = next_checked(last, c);
                    if after.is_null() {
                        break;
                    }
                    last = after;
                }
                *inbox = next_checked(last, c);
                set_next(last, ptr::null_mut());
                return first;
            }
            // The depot (sorted when its thread exited: lowest addresses at its end).
            let len = &mut *bin.depot_len.get();
            let take = (*len).min(BATCH as usize);
            if take == 0 {
                return ptr::null_mut();
            }
            *len -= take;
            bin.depot_shrunk(*len);
            let start = other.region_start(c);
            let depot = other.depot(c).add(*len);
            // Linked so that the lowest address comes out first.
            let mut chain: *mut u8 = ptr::null_mut();
            for k in 0..take {
                let p = start.wrapping_add(depot.add(k).read() as usize);
                set_next(p, chain);
                chain = p;
            }
            sub(&bin.listed, take as u64);
            add(&bin.lent, take as u64);
            chain
        }
    }

    /// When this heap has no free block of class `c` left (nor did any heap nobody owns
    /// lend it one): takes the blocks other threads returned to another heap's remote
    /// stack of the class, all of them (one swap, as that heap's own thread takes them),
    /// into this heap's inbox, and hands out the first. The blocks stay that heap's:
    /// freed again, they go back to it. Its thread, when it runs out of the class, takes
    /// returned blocks in turn (or cuts new ones): the stock follows the demand. Null
    /// when no remote stack of the class holds any.
    ///
    /// # Safety
    /// The caller owns this heap, and its inbox of class `c` is empty.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn take_returned(&self, c: usize) -> *mut u8 {
        let heaps = geometry().heaps;
        for (word, bits) in RETURNED[c].iter().enumerate() {
            let mut seen = bits.load(Ordering::Relaxed);
            while seen != 0 {
                let h = word * 64 + seen.trailing_zeros() as usize;
                seen &= seen - 1;
                if h >= heaps || h == self.index() {
                    continue;
                }
                // Any thread may take a remote stack whole: its owner does the same
                // swap, and whoever swaps first gets the chain.
                let chain = HEAP[h].remote[c].take_all();
                if chain.is_null() {
                    // Relaxed: a hint, as in `note_remote`. A push between the swap and
                    // this may see the bit still set and not set it again: the hint is
                    // lost for those blocks, which wait for their heap's own thread.
                    bits.fetch_and(!(1 << (h % 64)), Ordering::Relaxed);
                    continue;
                }
                // Relaxed: a figure for statistics.
                TAKEN_RETURNED.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the caller owns this heap and its inbox is empty; the chain
                // holds free blocks of class `c`, which nobody else can reach now (the
                // acquire in `take_all` made the links visible).
                return unsafe { self.adopt(c, chain) };
            }
        }
        ptr::null_mut()
    }

    /// Hands out the first block of `chain` (free blocks of class `c`, of any heap) and
    /// keeps the rest in this heap's inbox, handed out one per allocation.
    ///
    /// # Safety
    /// The caller owns this heap and its inbox of class `c` is empty; nobody else can
    /// reach the chain, whose links are visible to this thread.
    pub(super) unsafe fn adopt(&self, c: usize, chain: *mut u8) -> *mut u8 {
        // SAFETY: the caller's contract; `next_checked` checks each block before its
        // link is read.
        unsafe {
            *self.bins[c].inbox.get() = next_checked(chain, c);
        }
        add(&self.bins[c].reclaimed, 1);
        chain
    }

    /// When this heap has no free block of class `c` left: takes up to a batch of the
    /// free blocks of a heap nobody owns (see [`lend`](Self::lend)) into this heap's
    /// inbox, and hands out the first. The blocks stay that heap's (their address says
    /// so): freed again, they go back to it as remote frees. Null when no heap nobody
    /// owns holds any.
    ///
    /// # Safety
    /// The caller owns this heap, and its inbox of class `c` is empty.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn borrow(&self, c: usize) -> *mut u8 {
        let heaps = geometry().heaps;
        for (word, bits) in ORPHANS[c].iter().enumerate() {
            let mut bits = bits.load(Ordering::Relaxed);
            while bits != 0 {
                let h = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if h == 0 || h >= heaps || h == self.index() || !HEAP[h].try_take() {
                    continue;
                }
                let other = &HEAP[h];
                // SAFETY: this thread took `other` from nobody; the arena is reserved.
                let chain = unsafe { Heap::lend(other, c) };
                // SAFETY: this thread took `other` and gives it back (marking what it
                // still holds); it collected no remote frees while it held it.
                unsafe { other.hand_back() };
                if chain.is_null() {
                    continue;
                }
                // Relaxed: a figure for statistics.
                BORROWS.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the caller owns this heap and its inbox is empty; the chain
                // holds free blocks of class `c`, linked, that nobody else can reach now.
                return unsafe { self.adopt(c, chain) };
            }
        }
        ptr::null_mut()
    }
}
