//! The queue document's C++ variants, compiled by `build.rs` with `cc` (-O3, C++17):
//!
//! - [`Kind::MutexCondvar`]: `std::queue` bounded by a not-full condition variable,
//!   with a `std::mutex` and a not-empty condition variable, the document's code;
//! - [`Kind::BoostSpsc`]: `boost::lockfree::spsc_queue<MarketTick, capacity<1024>>`
//!   (the run-time-capacity form for other capacities), when the Boost headers were
//!   found at build time;
//! - [`Kind::CppRing`]: the document's ~50-line hand-rolled ring (`cpp/ring.hpp`).
//! - [`Kind::CppRingPrivate`]: the same ring, each side keeping its own index in a
//!   private copy (what the document's producer does not: it loads `tail` from the line
//!   the consumer polls).
//!
//! Each role's whole hot loop (pacing, `rdtscp` stamps, push or pop) runs in C++
//! (`CLOCK_MONOTONIC` stamps instead where the TSC is not usable: [`Ticks`]):
//! Rust pins a thread, calls [`ProducerSide::run`] or [`ConsumerSide::run`] once,
//! and reads the stamps back. There is no FFI call per item.
//!
//! ```
//! use cpp_baseline::{queue, Kind, Role};
//! use std::sync::atomic::AtomicU8;
//!
//! let (mut tx, mut rx) = queue(Kind::CppRing, 1024).unwrap();
//! let stop = AtomicU8::new(0);
//! let (mut sent, mut got) = (vec![0u64; 100], vec![0u64; 100]);
//! std::thread::scope(|s| {
//!     s.spawn(|| tx.run(Role::unpaced(&mut sent, &stop)));
//!     let report = rx.run(Role::unpaced(&mut got, &stop));
//!     assert_eq!(report.bad_seq, 0);
//! });
//! assert!(got.iter().zip(&sent).all(|(r, s)| r >= s));
//! ```

// `--cfg handoff_global_alloc` (.ci/run): link handoff-alloc, which then installs itself
// as the global allocator of every binary that links this crate.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use std::fmt;
use std::sync::atomic::AtomicU8;
use std::sync::Arc;

/// Which C++ variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `std::queue` + `std::mutex` + two `std::condition_variable`s.
    MutexCondvar,
    /// `boost::lockfree::spsc_queue`.
    BoostSpsc,
    /// The document's hand-rolled ring.
    CppRing,
    /// The same ring with each side's own index kept in a private copy: the producer no
    /// longer loads `tail` from the line the consumer polls (`cpp/ring.hpp`).
    CppRingPrivate,
}

impl Kind {
    /// Every C++ variant.
    pub const ALL: [Kind; 4] = [
        Kind::MutexCondvar,
        Kind::BoostSpsc,
        Kind::CppRing,
        Kind::CppRingPrivate,
    ];

    /// The runner's name for the variant.
    ///
    /// ```
    /// assert_eq!(cpp_baseline::Kind::BoostSpsc.name(), "boost-spsc");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Kind::MutexCondvar => "mutex-condvar",
            Kind::BoostSpsc => "boost-spsc",
            Kind::CppRing => "cpp-ring",
            Kind::CppRingPrivate => "cpp-ring-private",
        }
    }

    #[cfg(have_cpp)]
    fn code(self) -> i32 {
        match self {
            Kind::MutexCondvar => 0,
            Kind::BoostSpsc => 1,
            Kind::CppRing => 2,
            Kind::CppRingPrivate => 3,
        }
    }

    /// One of the hand-rolled rings (whose capacity must be a power of two).
    pub fn is_ring(self) -> bool {
        matches!(self, Kind::CppRing | Kind::CppRingPrivate)
    }

    /// Why this variant can't run in this build, or `None` when it can.
    ///
    /// ```
    /// use cpp_baseline::Kind;
    /// if cfg!(target_arch = "x86_64") {
    ///     assert_eq!(Kind::MutexCondvar.unavailable(), None);
    /// }
    /// if let Some(why) = Kind::BoostSpsc.unavailable() {
    ///     println!("boost-spsc: {why}");
    /// }
    /// ```
    pub fn unavailable(self) -> Option<&'static str> {
        if !cfg!(have_cpp) {
            return Some("not built: the C++ variants need x86_64");
        }
        if self == Kind::BoostSpsc && !cfg!(have_boost) {
            return Some("unavailable: install libboost-dev");
        }
        None
    }
}

/// The C++ compiler that built the variants (first line of `--version`).
///
/// ```
/// assert!(!cpp_baseline::cxx_version().is_empty());
/// ```
pub fn cxx_version() -> &'static str {
    env!("HB_CXX_VERSION")
}

/// Why [`queue`] could not make a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The variant isn't in this build; the text says why.
    Unavailable(&'static str),
    /// Capacity 0, or not a power of two for the ring.
    BadCapacity(usize),
    /// The C++ side could not allocate the queue.
    AllocFailed,
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::Unavailable(why) => f.write_str(why),
            QueueError::BadCapacity(c) => {
                write!(
                    f,
                    "capacity {c} is not usable (0, or not a power of two for cpp-ring)"
                )
            }
            QueueError::AllocFailed => f.write_str("the C++ queue could not be allocated"),
        }
    }
}

impl std::error::Error for QueueError {}

/// What the C++ loops pace and stamp with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ticks {
    /// The time-stamp counter: `rdtsc` to pace, `rdtscp; lfence` to stamp, `TSC_AUX`
    /// for the core check.
    #[default]
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds (what `handoff-clock`'s
    /// monotonic source reads), with no core check.
    Monotonic,
}

/// One thread's job: what [`ProducerSide::run`] or [`ConsumerSide::run`] does.
#[derive(Debug)]
pub struct Role<'a> {
    /// Schedule origin in ticks of [`Role::ticks`]: item `i` is due at
    /// `t0 + floor((i / burst) * period_ticks)`.
    pub t0: u64,
    /// Ticks between sends (between bursts); 0 sends as fast as the queue takes them.
    pub period_ticks: f64,
    /// Items sent back to back at each due time: 1 (no bursts) or more (0 counts as 1).
    pub burst: u64,
    /// The clock the schedule, `t0` and the stamps are in.
    pub ticks: Ticks,
    /// The core the thread is pinned to: on the TSC, stamps whose `TSC_AUX` names
    /// another core are counted in [`RoleReport::off_cpu`].
    pub cpu: u32,
    /// One stamp per item (its length is the item count). The producer writes its
    /// send stamp at index `i`; the consumer writes its receive stamp at index `seq`.
    pub stamps: &'a mut [u64],
    /// Set it (nonzero) to make the producer stop pacing and push the rest at once.
    pub stop: &'a AtomicU8,
}

impl<'a> Role<'a> {
    /// An unpaced role on no particular core (every stamp counts as off-core).
    pub fn unpaced(stamps: &'a mut [u64], stop: &'a AtomicU8) -> Role<'a> {
        Role {
            t0: 0,
            period_ticks: 0.0,
            burst: 1,
            ticks: Ticks::Tsc,
            cpu: u32::MAX,
            stamps,
            stop,
        }
    }
}

/// What a role reports back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoleReport {
    /// Stamps whose `TSC_AUX` named a core other than [`Role::cpu`].
    pub off_cpu: u64,
    /// Consumer only: items received out of order, out of range, or corrupted.
    pub bad_seq: u64,
}

/// The C++ side's view of a role (`hb_role` in `cpp/baseline.cpp`).
#[cfg(have_cpp)]
#[repr(C)]
struct RawRole {
    n: u64,
    t0: u64,
    period: f64,
    burst: u64,
    stamps: *mut u64,
    cpu: u32,
    clock: u32,
    stop: *const u8,
    off_cpu: u64,
    bad_seq: u64,
}

#[cfg(have_cpp)]
mod ffi {
    use super::RawRole;
    use std::ffi::c_void;
    extern "C" {
        pub fn hb_tick_size() -> i32;
        pub fn hb_due(t0: u64, period: f64, i: u64) -> u64;
        pub fn hb_new(kind: i32, capacity: usize) -> *mut c_void;
        pub fn hb_free(handle: *mut c_void);
        pub fn hb_produce(handle: *mut c_void, role: *mut RawRole);
        pub fn hb_consume(handle: *mut c_void, role: *mut RawRole);
    }
}

/// The C++ pacer's schedule, `t0 + floor(i * period)`, computed by the C++ code
/// (so a test can check that the Rust pacer agrees). `None` when the C++ variants
/// weren't built.
///
/// ```
/// if let Some(due) = cpp_baseline::cpp_due(100, 2.5, 3) {
///     assert_eq!(due, 107);
/// }
/// ```
pub fn cpp_due(t0: u64, period: f64, i: u64) -> Option<u64> {
    #[cfg(have_cpp)]
    {
        // SAFETY: a pure arithmetic function with no pointers.
        Some(unsafe { ffi::hb_due(t0, period, i) })
    }
    #[cfg(not(have_cpp))]
    {
        let _ = (t0, period, i);
        None
    }
}

/// Size of the C++ `MarketTick` (16, as in the document); `None` when not built.
///
/// ```
/// assert!(matches!(cpp_baseline::tick_size(), Some(16) | None));
/// ```
pub fn tick_size() -> Option<usize> {
    #[cfg(have_cpp)]
    {
        // SAFETY: a pure function returning a constant.
        Some(unsafe { ffi::hb_tick_size() } as usize)
    }
    #[cfg(not(have_cpp))]
    None
}

/// Owns the C++ queue; freed when both sides are dropped.
struct Handle {
    #[cfg(have_cpp)]
    ptr: *mut std::ffi::c_void,
}

// SAFETY: the C++ queues are built for exactly one producer thread and one consumer
// thread running at once; `queue` hands out one non-Clone `ProducerSide` and one
// `ConsumerSide` whose `run` takes `&mut self`, so at most one thread plays each role.
unsafe impl Send for Handle {}
// SAFETY: as above: shared only by the two sides, each used by one thread at a time.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        #[cfg(have_cpp)]
        // SAFETY: `ptr` came from `hb_new`, and this is the last owner (the Arc's drop).
        unsafe {
            ffi::hb_free(self.ptr)
        }
    }
}

/// The producer half of a C++ queue. `Send`, not `Clone`.
pub struct ProducerSide(Arc<Handle>);

/// The consumer half of a C++ queue. `Send`, not `Clone`.
pub struct ConsumerSide(Arc<Handle>);

impl fmt::Debug for ProducerSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProducerSide")
    }
}

impl fmt::Debug for ConsumerSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConsumerSide")
    }
}

/// Makes a C++ queue of `kind` holding `capacity` 16-byte ticks, split into its two
/// sides. Run the producer and the consumer on two threads with the same item count.
///
/// ```
/// use cpp_baseline::{queue, Kind, QueueError};
/// assert_eq!(queue(Kind::CppRing, 0).unwrap_err(), QueueError::BadCapacity(0));
/// assert_eq!(queue(Kind::CppRing, 1000).unwrap_err(), QueueError::BadCapacity(1000));
/// ```
pub fn queue(kind: Kind, capacity: usize) -> Result<(ProducerSide, ConsumerSide), QueueError> {
    if let Some(why) = kind.unavailable() {
        return Err(QueueError::Unavailable(why));
    }
    if capacity == 0 || (kind.is_ring() && !capacity.is_power_of_two()) {
        return Err(QueueError::BadCapacity(capacity));
    }
    #[cfg(have_cpp)]
    {
        // SAFETY: `hb_new` validates its arguments and returns NULL on any failure.
        let ptr = unsafe { ffi::hb_new(kind.code(), capacity) };
        if ptr.is_null() {
            return Err(QueueError::AllocFailed);
        }
        let h = Arc::new(Handle { ptr });
        Ok((ProducerSide(h.clone()), ConsumerSide(h)))
    }
    #[cfg(not(have_cpp))]
    unreachable!("unavailable() is Some when the C++ code is not built")
}

#[cfg(have_cpp)]
fn raw(role: Role<'_>) -> RawRole {
    RawRole {
        n: role.stamps.len() as u64,
        t0: role.t0,
        period: if role.period_ticks.is_finite() && role.period_ticks > 0.0 {
            role.period_ticks
        } else {
            0.0
        },
        burst: role.burst.max(1),
        stamps: role.stamps.as_mut_ptr(),
        cpu: role.cpu,
        clock: match role.ticks {
            Ticks::Tsc => 0,
            Ticks::Monotonic => 1,
        },
        stop: role.stop.as_ptr().cast_const(),
        off_cpu: 0,
        bad_seq: 0,
    }
}

impl ProducerSide {
    /// Sends `role.stamps.len()` ticks (seq 0, 1, ...) on the role's schedule,
    /// stamping each with `rdtscp; lfence` (or a monotonic read, per [`Role::ticks`])
    /// just before its push. Blocks (spinning, or
    /// on the condition variable) while the queue is full.
    pub fn run(&mut self, role: Role<'_>) -> RoleReport {
        #[cfg(have_cpp)]
        {
            let mut r = raw(role);
            // SAFETY: `r.stamps` points to `r.n` writable u64s borrowed for this call;
            // `r.stop` points to a live AtomicU8 that C++ reads atomically; this is the
            // only producer (`&mut self` on the only ProducerSide).
            unsafe { ffi::hb_produce(self.0.ptr, &mut r) };
            RoleReport {
                off_cpu: r.off_cpu,
                bad_seq: 0,
            }
        }
        #[cfg(not(have_cpp))]
        {
            let _ = role;
            unreachable!("no ProducerSide exists without the C++ code")
        }
    }
}

impl ConsumerSide {
    /// Receives `role.stamps.len()` ticks, stamping each with `rdtscp; lfence` (or a
    /// monotonic read, per [`Role::ticks`]) just after its pop (after the unlock for the mutex variant) at index `seq`.
    /// Spins (or waits on the condition variable) while the queue is empty.
    pub fn run(&mut self, role: Role<'_>) -> RoleReport {
        #[cfg(have_cpp)]
        {
            let mut r = raw(role);
            // SAFETY: as in `ProducerSide::run`; this is the only consumer.
            unsafe { ffi::hb_consume(self.0.ptr, &mut r) };
            RoleReport {
                off_cpu: r.off_cpu,
                bad_seq: r.bad_seq,
            }
        }
        #[cfg(not(have_cpp))]
        {
            let _ = role;
            unreachable!("no ConsumerSide exists without the C++ code")
        }
    }
}
