//! A cache hint the ring uses and handoff-pool shares (hidden: not part of the crate's
//! supported API, and it may change in any release).

/// Hints the CPU to fetch the cache line at `p` for writing (`prefetchw`: the line comes
/// in exclusive, its copies in other cores' caches invalidated), so that a write to it a
/// little later does not wait for the line to be taken back from another core. Only a
/// hint: nothing is read or written, any address is fine; a no-op off x86-64 and under
/// Miri and loom. Intel CPUs before Broadwell do not report `prefetchw` (CPUID PRFCHW)
/// but decode its opcode (0F 0D /1) as a no-op; every AMD64 CPU has it.
#[inline(always)]
pub fn prefetch_write<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    #[allow(
        clippy::pointers_in_nomem_asm_block,
        reason = "prefetchw reads and writes no memory the program can observe"
    )]
    // SAFETY: `prefetchw` reads and writes no memory and cannot fault (a prefetch of any
    // address is only a hint); it touches no register but its address operand and no
    // flag.
    unsafe {
        core::arch::asm!(
            "prefetchw [{0}]",
            in(reg) p,
            options(nostack, preserves_flags, nomem)
        )
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = p;
}
