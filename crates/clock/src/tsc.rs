//! Raw time-stamp-counter reads for x86_64.
//!
//! * [`start`]: `lfence; rdtsc`. The `lfence` keeps the read from being executed
//!   before earlier instructions finish, so it marks the start of an interval.
//! * [`end`]: `rdtscp; lfence`. `rdtscp` waits for earlier instructions; the trailing
//!   `lfence` keeps later instructions from starting before the read.
//! * [`rdtscp`]: the bare `rdtscp` the source documents stamp with, returning the
//!   `TSC_AUX` value as well (on Linux, `node << 12 | cpu`; see [`cpu_of`]).
//! * [`rdtsc`]: an unordered read, for when ordering is provided otherwise.

use core::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};

/// An unordered TSC read: the CPU may execute it before or after its neighbours.
///
/// ```
/// let a = handoff_clock::tsc::rdtsc();
/// let b = handoff_clock::tsc::rdtsc();
/// assert!(b >= a);
/// ```
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` is part of the x86_64 baseline; it reads a register and has no
    // memory effects.
    unsafe { _rdtsc() }
}

/// Start-of-interval read: `lfence; rdtsc`.
///
/// ```
/// let t0 = handoff_clock::tsc::start();
/// let t1 = handoff_clock::tsc::end();
/// assert!(t1 >= t0);
/// ```
#[inline(always)]
pub fn start() -> u64 {
    // SAFETY: `lfence` (SSE2) and `rdtsc` are part of the x86_64 baseline and have no
    // memory effects beyond ordering.
    unsafe {
        _mm_lfence();
        _rdtsc()
    }
}

/// End-of-interval read: `rdtscp; lfence`.
///
/// ```
/// let t0 = handoff_clock::tsc::start();
/// assert!(handoff_clock::tsc::end() >= t0);
/// ```
#[inline(always)]
pub fn end() -> u64 {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` writes the TSC_AUX value through a pointer to a local; every
    // x86_64 CPU the crate accepts for TSC timing has it (see `has_rdtscp`), and on
    // one without it the instruction faults with SIGILL rather than misbehaving.
    unsafe {
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    }
}

/// The documents' `rdtscp` read: waits for earlier instructions, returns the counter
/// and the `TSC_AUX` value that identifies the core it ran on.
///
/// ```
/// let (t, aux) = handoff_clock::tsc::rdtscp();
/// assert!(t > 0);
/// let _cpu = handoff_clock::tsc::cpu_of(aux);
/// ```
#[inline(always)]
pub fn rdtscp() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: as in `end`.
    let t = unsafe { __rdtscp(&mut aux) };
    (t, aux)
}

/// The documents' `rdtscp_ordered()`: `rdtscp; lfence`, returning the counter and
/// `TSC_AUX`. Later instructions wait for the read, so the stamp can't drift past
/// the work that follows it; the `TSC_AUX` value tells a harness which core took it.
///
/// ```
/// let (t, aux) = handoff_clock::tsc::rdtscp_ordered();
/// assert!(t > 0);
/// let _cpu = handoff_clock::tsc::cpu_of(aux);
/// ```
#[inline(always)]
pub fn rdtscp_ordered() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: as in `end`.
    let t = unsafe {
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    };
    (t, aux)
}

/// The cpu number Linux stores in the low 12 bits of `TSC_AUX`.
///
/// ```
/// assert_eq!(handoff_clock::tsc::cpu_of((1 << 12) | 5), 5);
/// ```
#[inline(always)]
pub fn cpu_of(aux: u32) -> u32 {
    aux & 0xfff
}

/// The NUMA node Linux stores above bit 12 of `TSC_AUX`.
///
/// ```
/// assert_eq!(handoff_clock::tsc::node_of((1 << 12) | 5), 1);
/// ```
#[inline(always)]
pub fn node_of(aux: u32) -> u32 {
    aux >> 12
}

fn cpuid(leaf: u32) -> (u32, u32, u32, u32) {
    // SAFETY: `cpuid` is part of the x86_64 baseline; unsupported leaves return zeros
    // or the highest basic leaf's data, which the callers check for. (Newer compilers
    // declare `__cpuid` safe, hence the `allow`.)
    #[allow(unused_unsafe)]
    let r = unsafe { __cpuid(leaf) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Whether the CPU says its TSC runs at a constant rate in every power state
/// (CPUID `0x8000_0007`, EDX bit 8: "invariant TSC"). Hypervisors may hide or fake it.
///
/// ```
/// let _ = handoff_clock::tsc::invariant();
/// ```
pub fn invariant() -> bool {
    let (max_ext, ..) = cpuid(0x8000_0000);
    max_ext >= 0x8000_0007 && cpuid(0x8000_0007).3 & (1 << 8) != 0
}

/// The hypervisor's vendor signature (CPUID leaf `0x4000_0000`: EBX, ECX, EDX as 12
/// ASCII bytes, trailing NULs dropped), when CPUID says a hypervisor is present (leaf 1,
/// ECX bit 31); `None` on bare metal or when the hypervisor hides itself.
/// `"KVMKVMKVM"` is KVM, `"TCGTCGTCGTCG"` QEMU emulating the CPU in software (TCG),
/// `"XenVMMXenVMM"` Xen, `"Microsoft Hv"` Hyper-V, `"VMwareVMware"` VMware.
///
/// ```
/// if let Some(v) = handoff_clock::tsc::hypervisor_signature() {
///     println!("hypervisor: {v}");
/// }
/// ```
pub fn hypervisor_signature() -> Option<String> {
    if cpuid(1).2 & (1 << 31) == 0 {
        return None;
    }
    let (_, ebx, ecx, edx) = cpuid(0x4000_0000);
    Some(signature(ebx, ecx, edx)).filter(|s| !s.is_empty())
}

/// The 12 bytes of a vendor signature held in three registers, low byte first,
/// without trailing NULs; bytes outside printable ASCII as `?`.
///
/// ```
/// // "KVMKVMKVM\0\0\0" as KVM returns it.
/// assert_eq!(handoff_clock::tsc::signature(0x4b4d_564b, 0x564b_4d56, 0x0000_004d), "KVMKVMKVM");
/// ```
pub fn signature(ebx: u32, ecx: u32, edx: u32) -> String {
    let bytes: Vec<u8> = [ebx, ecx, edx]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes[..end]
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

/// Whether the CPU has `rdtscp` (CPUID `0x8000_0001`, EDX bit 27).
///
/// ```
/// let _ = handoff_clock::tsc::has_rdtscp();
/// ```
pub fn has_rdtscp() -> bool {
    let (max_ext, ..) = cpuid(0x8000_0000);
    max_ext >= 0x8000_0001 && cpuid(0x8000_0001).3 & (1 << 27) != 0
}
