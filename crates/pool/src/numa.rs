//! NUMA placement of a pool's or an arena's memory (the memory-patterns write-up's `NUMAAllocator`),
//! with the kernel's own calls (`mmap` + `mbind`), no libnuma.
//!
//! A [`Placement`] other than [`Placement::Default`] makes the memory an anonymous
//! mapping of whole pages with a memory policy bound to it before any page is
//! touched, so every page is placed by that policy when it is first written:
//!
//! * [`Placement::Node`]: on that node only (`MPOL_BIND`);
//! * [`Placement::Local`]: on the node of the CPU that first touches each page
//!   (`MPOL_LOCAL`), whatever the process's policy says;
//! * [`Placement::Interleave`]: page by page across every online node
//!   (`MPOL_INTERLEAVE`).
//!
//! On a machine with one node every placement puts the memory on node 0; it still
//! works, it just cannot differ. Placements other than `Default` need Linux and the
//! `std` feature; elsewhere they are refused with [`NumaError::Unsupported`].
//!
//! ```
//! use handoff_pool::numa::{self, Placement};
//! use handoff_pool::{Capacity, Pool, PoolConfig};
//! # if cfg!(miri) { return; }
//! let nodes = numa::online_nodes().unwrap();
//! let on_first = PoolConfig { placement: Placement::Node(nodes[0]), ..PoolConfig::new(Capacity::Fixed(1024)) };
//! let pool = Pool::<[u64; 8]>::with_config(on_first).unwrap();
//! let order = pool.try_alloc([7; 8]).unwrap();
//! assert_eq!(numa::node_of(&*order).unwrap(), nodes[0]);
//! // A node that does not exist is a clear error, not a silent default.
//! let missing = PoolConfig { placement: Placement::Node(999), ..PoolConfig::new(Capacity::Fixed(8)) };
//! let bad = Pool::<u64>::with_config(missing).unwrap_err();
//! assert!(bad.to_string().contains("NUMA node 999"));
//! ```

use core::fmt;

/// Where a pool's or an arena's memory goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// The global allocator's memory, placed by the process's policy (usually the
    /// node of the thread that first touches a page).
    #[default]
    Default,
    /// Only on this node.
    Node(u32),
    /// On the node of the CPU that first touches each page.
    Local,
    /// Page by page across every online node.
    Interleave,
}

/// Why memory could not be placed, or a node not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NumaError {
    /// The node is not online on this machine (`online` is the online-node mask).
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// Bit `n` set: node `n` is online.
        online: u64,
    },
    /// A system call failed with this `errno`.
    Os {
        /// The call.
        call: &'static str,
        /// Its `errno`.
        errno: i32,
    },
    /// The online-node list (`/sys/devices/system/node/online`) could not be read
    /// or names a node above 63.
    Topology,
    /// Placed memory is page-aligned; this alignment is larger than a page.
    Alignment {
        /// The alignment asked for.
        align: usize,
    },
    /// Placement needs Linux and the `std` feature.
    Unsupported,
}

impl fmt::Display for NumaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaError::NoSuchNode { node, online } => {
                write!(f, "NUMA node {node} is not online (online nodes:")?;
                for n in (0..64).filter(|n| online >> n & 1 == 1) {
                    write!(f, " {n}")?;
                }
                f.write_str(")")
            }
            NumaError::Os { call, errno } => write!(f, "{call} failed: errno {errno}"),
            NumaError::Topology => {
                f.write_str("cannot read the online NUMA nodes from /sys/devices/system/node/online (or a node is above 63)")
            }
            NumaError::Alignment { align } => {
                write!(f, "placed memory is page-aligned; {align}-byte alignment is more than a page")
            }
            NumaError::Unsupported => {
                f.write_str("NUMA placement needs Linux and the `std` feature")
            }
        }
    }
}

impl core::error::Error for NumaError {}

#[cfg(all(feature = "std", target_os = "linux"))]
pub use crate::per_node::PerNode;
#[cfg(all(feature = "std", target_os = "linux"))]
pub use imp::{cpus_of_node, current_cpu, node_of, online_nodes};

#[cfg(all(feature = "std", target_os = "linux"))]
pub(crate) use imp::Region;

#[cfg(all(feature = "std", target_os = "linux"))]
mod imp {
    use core::ptr::NonNull;

    use alloc::vec::Vec;

    use super::{NumaError, Placement};

    const MPOL_BIND: libc::c_long = 2;
    const MPOL_INTERLEAVE: libc::c_long = 3;
    const MPOL_LOCAL: libc::c_long = 4;
    const MPOL_F_NODE: libc::c_long = 1;
    const MPOL_F_ADDR: libc::c_long = 2;
    /// Bits in the node masks passed to the kernel (one `u64`); the kernel reads
    /// `maxnode - 1` bits, hence the `+ 1` where it is passed.
    const MASK_BITS: libc::c_ulong = 64;

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    /// The online NUMA nodes, in order (`[0]` on a single-node machine).
    ///
    /// ```
    /// # if cfg!(miri) { return; } // Miri cannot read /sys
    /// let nodes = handoff_pool::numa::online_nodes().unwrap();
    /// assert!(!nodes.is_empty());
    /// ```
    pub fn online_nodes() -> Result<Vec<u32>, NumaError> {
        let mask = online_mask()?;
        Ok((0..64).filter(|n| mask >> n & 1 == 1).collect())
    }

    /// The online nodes as a mask. A kernel built without NUMA has no such file:
    /// that is one node, 0.
    fn online_mask() -> Result<u64, NumaError> {
        let text = match std::fs::read_to_string("/sys/devices/system/node/online") {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(1),
            Err(_) => return Err(NumaError::Topology),
        };
        parse_list(text.trim()).ok_or(NumaError::Topology)
    }

    /// The CPUs of `node` (`/sys/devices/system/node/node<N>/cpulist`; a node without
    /// CPUs has none). A kernel built without NUMA has no such files: every online CPU
    /// is then node 0's.
    ///
    /// ```
    /// # if cfg!(miri) { return; } // Miri cannot read /sys
    /// let first = handoff_pool::numa::online_nodes().unwrap()[0];
    /// let cpus = handoff_pool::numa::cpus_of_node(first).unwrap();
    /// assert!(cpus.iter().all(|&c| c < 1 << 20));
    /// ```
    pub fn cpus_of_node(node: u32) -> Result<Vec<u32>, NumaError> {
        let path = std::format!("/sys/devices/system/node/node{node}/cpulist");
        match std::fs::read_to_string(&path) {
            Ok(t) => parse_cpus(t.trim()).ok_or(NumaError::Topology),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The mask has bits for nodes 0 to 63; a node beyond with no
                // directory of its own is not online either (`checked_shr`: a shift
                // by 64 or more would overflow).
                let online = online_mask()?;
                if online.checked_shr(node).unwrap_or(0) & 1 == 0 {
                    return Err(NumaError::NoSuchNode { node, online });
                }
                if std::fs::metadata("/sys/devices/system/node").is_ok() {
                    return Err(NumaError::Topology);
                }
                let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
                    .map_err(|_| NumaError::Topology)?;
                parse_cpus(online.trim()).ok_or(NumaError::Topology)
            }
            Err(_) => Err(NumaError::Topology),
        }
    }

    /// A kernel CPU list such as `0-3,8,10-11` (empty: none).
    pub(crate) fn parse_cpus(s: &str) -> Option<Vec<u32>> {
        let mut cpus = Vec::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
                None => {
                    let n = part.parse::<u32>().ok()?;
                    (n, n)
                }
            };
            if lo > hi || hi >= 1 << 20 {
                return None;
            }
            cpus.extend(lo..=hi);
        }
        Some(cpus)
    }

    /// The CPU the calling thread runs on now (`sched_getcpu`).
    ///
    /// ```
    /// # if cfg!(miri) { return; }
    /// let cpu = handoff_pool::numa::current_cpu().unwrap();
    /// assert!(cpu < 1 << 20);
    /// ```
    pub fn current_cpu() -> Result<u32, NumaError> {
        // SAFETY: `sched_getcpu` takes no argument and only returns a number.
        let cpu = unsafe { libc::sched_getcpu() };
        u32::try_from(cpu).map_err(|_| NumaError::Os {
            call: "sched_getcpu",
            errno: errno(),
        })
    }

    /// A kernel CPU/node list such as `0-3,8,10-11` as a mask.
    pub(crate) fn parse_list(s: &str) -> Option<u64> {
        let mut mask = 0u64;
        for part in s.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
                None => {
                    let n = part.parse::<u32>().ok()?;
                    (n, n)
                }
            };
            if lo > hi || hi > 63 {
                return None;
            }
            for n in lo..=hi {
                mask |= 1 << n;
            }
        }
        (mask != 0).then_some(mask)
    }

    /// The node holding the page at `p` (the page is faulted in if it was not yet).
    ///
    /// ```
    /// # if cfg!(miri) { return; } // Miri has no get_mempolicy
    /// let x = Box::new(5u64);
    /// let node = handoff_pool::numa::node_of(&*x).unwrap();
    /// assert!(handoff_pool::numa::online_nodes().unwrap().contains(&node));
    /// ```
    pub fn node_of<T: ?Sized>(p: &T) -> Result<u32, NumaError> {
        let mut node: libc::c_int = -1;
        // SAFETY: `get_mempolicy` with MPOL_F_NODE | MPOL_F_ADDR writes one `int`
        // (the node of the page at `addr`) to `node`, reads no mask (null, 0), and
        // only looks up `addr`, which is mapped because `p` is a live reference.
        let r = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut node as *mut libc::c_int,
                core::ptr::null_mut::<libc::c_ulong>(),
                0 as libc::c_ulong,
                p as *const T as *const u8,
                MPOL_F_NODE | MPOL_F_ADDR,
            )
        };
        if r != 0 || node < 0 {
            return Err(NumaError::Os {
                call: "get_mempolicy",
                errno: errno(),
            });
        }
        Ok(node as u32)
    }

    /// Whole pages of anonymous memory with a NUMA policy bound before any page is
    /// touched; unmapped on drop.
    pub(crate) struct Region {
        base: NonNull<u8>,
        len: usize,
    }

    // SAFETY: a `Region` is plain memory owned by the value; it has no thread
    // affinity.
    unsafe impl Send for Region {}
    // SAFETY: `Region` itself reads or writes nothing through `base`; its owners
    // synchronise their accesses.
    unsafe impl Sync for Region {}

    impl Region {
        /// At least `bytes` (rounded up to whole pages) placed by `placement`, which
        /// must not be `Default`, aligned to at least `align`.
        pub(crate) fn new(
            bytes: usize,
            align: usize,
            placement: Placement,
        ) -> Result<Region, NumaError> {
            // SAFETY: `sysconf` only reads a constant of the system.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
            if align > page {
                return Err(NumaError::Alignment { align });
            }
            let (mode, mask): (libc::c_long, u64) = match placement {
                Placement::Default => unreachable!("Default is the global allocator's memory"),
                Placement::Node(n) => {
                    let online = online_mask()?;
                    if n > 63 || online >> n & 1 == 0 {
                        return Err(NumaError::NoSuchNode { node: n, online });
                    }
                    (MPOL_BIND, 1 << n)
                }
                Placement::Local => (MPOL_LOCAL, 0),
                Placement::Interleave => (MPOL_INTERLEAVE, online_mask()?),
            };
            let len = bytes.max(1).div_ceil(page) * page;
            // SAFETY: an anonymous private mapping at an address of the kernel's
            // choosing; no existing memory is affected.
            let raw = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if raw == libc::MAP_FAILED {
                return Err(NumaError::Os {
                    call: "mmap",
                    errno: errno(),
                });
            }
            let region = Region {
                base: NonNull::new(raw.cast()).expect("mmap never returns null on success"),
                len,
            };
            let mask_ptr: *const u64 = if mode == MPOL_LOCAL {
                core::ptr::null()
            } else {
                &mask
            };
            let maxnode = if mode == MPOL_LOCAL { 0 } else { MASK_BITS + 1 };
            // SAFETY: `mbind` sets the policy of the pages of the mapping just made
            // (owned by `region`, nothing else refers to it); it reads at most
            // `maxnode - 1 = 64` bits of `mask`, which is one `u64`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_mbind,
                    region.base.as_ptr(),
                    len as libc::c_ulong,
                    mode,
                    mask_ptr,
                    maxnode,
                    0 as libc::c_uint,
                )
            };
            if r != 0 {
                // `region` is dropped here: the mapping is unmapped.
                return Err(NumaError::Os {
                    call: "mbind",
                    errno: errno(),
                });
            }
            Ok(region)
        }

        pub(crate) fn base(&self) -> NonNull<u8> {
            self.base
        }

        pub(crate) fn len(&self) -> usize {
            self.len
        }
    }

    impl Drop for Region {
        fn drop(&mut self) {
            // SAFETY: `base..base + len` is the mapping made in `new`, unmapped only
            // here, once; its owner no longer uses it.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{parse_cpus, parse_list};

        #[test]
        fn node_lists_parse() {
            assert_eq!(parse_list("0"), Some(1));
            assert_eq!(parse_list("0-1"), Some(0b11));
            assert_eq!(parse_list("0-2,5,7-8"), Some(0b1_1010_0111));
            assert_eq!(parse_list(""), None);
            assert_eq!(parse_list("3-1"), None);
            assert_eq!(parse_list("64"), None);
            assert_eq!(parse_list("x"), None);
        }

        #[test]
        fn cpu_lists_parse_past_64() {
            assert_eq!(parse_cpus("0-2,70"), Some(std::vec![0, 1, 2, 70]));
            assert_eq!(parse_cpus(""), Some(std::vec![]), "a node without CPUs");
            assert_eq!(parse_cpus("3-1"), None);
            assert_eq!(parse_cpus("x"), None);
        }
    }
}

/// Without Linux and `std` there is no placed memory: a stand-in that can never be
/// made, so the placed paths compile away.
#[cfg(not(all(feature = "std", target_os = "linux")))]
pub(crate) struct Region(core::convert::Infallible);

#[cfg(not(all(feature = "std", target_os = "linux")))]
impl Region {
    pub(crate) fn new(_: usize, _: usize, _: Placement) -> Result<Region, NumaError> {
        Err(NumaError::Unsupported)
    }

    pub(crate) fn base(&self) -> core::ptr::NonNull<u8> {
        match self.0 {}
    }

    pub(crate) fn len(&self) -> usize {
        match self.0 {}
    }
}
