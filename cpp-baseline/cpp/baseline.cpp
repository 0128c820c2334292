// The queue document's three C++ variants and their hot loops. Rust pins the
// threads and calls hb_produce / hb_consume once per role; every per-item step
// (pacing, rdtscp stamps, push, pop) happens here, with no call back into Rust.
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <queue>

#include <time.h>
#include <x86intrin.h>

#include "ring.hpp"

#ifdef HB_HAVE_BOOST
#include <boost/lockfree/spsc_queue.hpp>
#endif

namespace {

// The document's 16-byte MarketTick.
struct MarketTick {
    uint64_t seq;
    int32_t price;
    uint32_t qty;
};
static_assert(sizeof(MarketTick) == 16, "MarketTick is 16 bytes");

constexpr size_t kDocCapacity = 1024;

enum Kind : int { kMutexCondvar = 0, kBoostSpsc = 1, kCppRing = 2, kCppRingPrivate = 3 };

// rdtscp; lfence: the documents' rdtscp_ordered(), with TSC_AUX for the core check.
inline uint64_t rdtscp_ordered(uint32_t* aux) {
    uint64_t t = __rdtscp(aux);
    _mm_lfence();
    return t;
}

// CLOCK_MONOTONIC in nanoseconds: handoff-clock's monotonic source reads the same.
inline uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline MarketTick make_tick(uint64_t i) {
    return MarketTick{i, static_cast<int32_t>(i * 7), static_cast<uint32_t>(i)};
}

// The bounded mutex + condvar queue, exactly the document's code.
struct MutexQueue {
    explicit MutexQueue(size_t n) : N(n) {}
    const size_t N;
    std::queue<MarketTick> q;
    std::mutex mtx;
    std::condition_variable cv_not_full;
    std::condition_variable cv_not_empty;
};

struct Handle {
    int kind;
    void* queue;
};

}  // namespace

extern "C" {

// One thread's job. Mirrors `Role` in src/lib.rs (repr(C)).
struct hb_role {
    uint64_t n;              // items to send or receive
    uint64_t t0;             // schedule origin, TSC ticks
    double period;           // ticks between sends (between bursts when burst > 1); 0 = unpaced
    uint64_t burst;          // items sent back to back at each due time (1: none)
    uint64_t* stamps;        // n stamps: send stamp by index / receive stamp by seq
    uint32_t cpu;            // the core this thread is pinned to (TSC_AUX low 12 bits)
    uint32_t clock;          // 0: the TSC (rdtsc, rdtscp); 1: CLOCK_MONOTONIC, no core check
    const uint8_t* stop;     // nonzero: stop pacing, push the rest at once
    uint64_t off_cpu;        // out: stamps taken on another core
    uint64_t bad_seq;        // out (consumer): items out of order or out of range
};

// The pacer's schedule (defined below, exported so a test can check the Rust pacer).
uint64_t hb_due(uint64_t t0, double period, uint64_t i);

}  // extern "C"

namespace {

// The two clocks a role can run on, chosen once per role (hb_produce, hb_consume), so
// that the per-item loops read one clock with no branch on which.
// The TSC: rdtsc to pace; rdtscp; lfence to stamp, counting the stamp in `off` when
// TSC_AUX names another core than the pinned one.
struct Tsc {
    static uint64_t now() { return __rdtsc(); }
    static uint64_t stamp(const hb_role* r, uint64_t& off) {
        uint32_t aux;
        const uint64_t t = rdtscp_ordered(&aux);
        off += (aux & 0xfff) != r->cpu;
        return t;
    }
};

// CLOCK_MONOTONIC: no core check, as handoff-clock's monotonic stamps carry no cpu.
struct Monotonic {
    static uint64_t now() { return monotonic_ns(); }
    static uint64_t stamp(const hb_role*, uint64_t&) { return monotonic_ns(); }
};

// Pacing: item i is due at t0 + floor((i / burst) * period), a fixed origin (open
// loop); with burst 1 (the document's runs), t0 + floor(i * period).
// The wait spins on the clock with no pause instruction (see docs/methodology.md).
template <class C>
inline void wait_until_due(const hb_role* r, uint64_t i, double& period) {
    if ((i & 4095) == 0 && __atomic_load_n(r->stop, __ATOMIC_RELAXED) != 0) period = 0.0;
    if (period > 0.0) {
        const uint64_t due = hb_due(r->t0, period, i / r->burst);
        while (C::now() < due) {
        }
    }
}

// Non-blocking push / pop of the two lock-free queues, one spelling for the loops.
template <size_t N>
bool try_push(hb::SpscRing<MarketTick, N>& q, const MarketTick& t) { return q.try_push(t); }
template <size_t N>
bool try_pop(hb::SpscRing<MarketTick, N>& q, MarketTick& t) { return q.try_pop(t); }
template <size_t N>
bool try_push(hb::SpscRingPrivate<MarketTick, N>& q, const MarketTick& t) { return q.try_push(t); }
template <size_t N>
bool try_pop(hb::SpscRingPrivate<MarketTick, N>& q, MarketTick& t) { return q.try_pop(t); }
#ifdef HB_HAVE_BOOST
template <class... Opts>
bool try_push(boost::lockfree::spsc_queue<MarketTick, Opts...>& q, const MarketTick& t) {
    return q.push(t);
}
template <class... Opts>
bool try_pop(boost::lockfree::spsc_queue<MarketTick, Opts...>& q, MarketTick& t) {
    return q.pop(t);
}
#endif

// The producer's step before each push: wait until item i is due, build it, stamp its
// send time, and count the stamp if it was taken off the pinned core.
template <class C>
inline MarketTick due_tick(hb_role* r, uint64_t i, double& period, uint64_t& off) {
    wait_until_due<C>(r, i, period);
    const MarketTick tick = make_tick(i);
    r->stamps[i] = C::stamp(r, off);
    return tick;
}

// The consumer's step after each pop: stamp the receive time at the item's seq (or
// count the item as bad if it is out of order or corrupted), and count the stamp if it
// was taken off the pinned core.
template <class C>
inline void taken(hb_role* r, uint64_t k, const MarketTick& t, uint64_t& off, uint64_t& bad) {
    const uint64_t ts = C::stamp(r, off);
    if (t.seq != k || t.seq >= r->n || t.qty != static_cast<uint32_t>(t.seq)) {
        ++bad;
        return;
    }
    r->stamps[t.seq] = ts;
}

template <class C, class Q>
void produce(Q& q, hb_role* r) {
    double period = r->period;
    uint64_t off = 0;
    for (uint64_t i = 0; i < r->n; ++i) {
        const MarketTick tick = due_tick<C>(r, i, period, off);
        while (!try_push(q, tick)) { /* spin */
        }
    }
    r->off_cpu = off;
}

template <class C, class Q>
void consume(Q& q, hb_role* r) {
    uint64_t off = 0, bad = 0;
    for (uint64_t k = 0; k < r->n; ++k) {
        MarketTick t;
        while (!try_pop(q, t)) { /* spin */
        }
        taken<C>(r, k, t, off, bad);
    }
    r->off_cpu = off;
    r->bad_seq = bad;
}

template <class C>
void produce(MutexQueue& m, hb_role* r) {
    double period = r->period;
    uint64_t off = 0;
    for (uint64_t i = 0; i < r->n; ++i) {
        const MarketTick tick = due_tick<C>(r, i, period, off);
        {
            std::unique_lock<std::mutex> lk(m.mtx);
            m.cv_not_full.wait(lk, [&] { return m.q.size() < m.N; });
            m.q.push(tick);
        }
        m.cv_not_empty.notify_one();
    }
    r->off_cpu = off;
}

template <class C>
void consume(MutexQueue& m, hb_role* r) {
    uint64_t off = 0, bad = 0;
    for (uint64_t k = 0; k < r->n; ++k) {
        MarketTick tick;
        {
            std::unique_lock<std::mutex> lk(m.mtx);
            m.cv_not_empty.wait(lk, [&] { return !m.q.empty(); });
            tick = m.q.front();
            m.q.pop();
        }
        m.cv_not_full.notify_one();
        taken<C>(r, k, tick, off, bad);  // stamped after the unlock
    }
    r->off_cpu = off;
    r->bad_seq = bad;
}

using Ring1024 = hb::SpscRing<MarketTick, kDocCapacity>;
using RingDyn = hb::SpscRing<MarketTick>;
using RingPrivate1024 = hb::SpscRingPrivate<MarketTick, kDocCapacity>;
using RingPrivateDyn = hb::SpscRingPrivate<MarketTick>;
#ifdef HB_HAVE_BOOST
using Boost1024 = boost::lockfree::spsc_queue<MarketTick, boost::lockfree::capacity<kDocCapacity>>;
using BoostDyn = boost::lockfree::spsc_queue<MarketTick>;
#endif

// Each queue type is tagged by kind and by whether its capacity is the compile-time 1024.
enum Impl : int { kMutex, kRing1024, kRingDyn, kBoost1024, kBoostDyn, kRingPrivate1024, kRingPrivateDyn };

// Calls f with the handle's queue as its concrete type: the one place that lists them.
template <class F>
void visit(Handle* handle, F&& f) {
    switch (handle->kind) {
        case kMutex: f(*static_cast<MutexQueue*>(handle->queue)); break;
        case kRing1024: f(*static_cast<Ring1024*>(handle->queue)); break;
        case kRingDyn: f(*static_cast<RingDyn*>(handle->queue)); break;
        case kRingPrivate1024: f(*static_cast<RingPrivate1024*>(handle->queue)); break;
        case kRingPrivateDyn: f(*static_cast<RingPrivateDyn*>(handle->queue)); break;
#ifdef HB_HAVE_BOOST
        case kBoost1024: f(*static_cast<Boost1024*>(handle->queue)); break;
        case kBoostDyn: f(*static_cast<BoostDyn*>(handle->queue)); break;
#endif
        default: break;
    }
}

}  // namespace

extern "C" {

int hb_boost_available(void) {
#ifdef HB_HAVE_BOOST
    return 1;
#else
    return 0;
#endif
}

int hb_tick_size(void) { return static_cast<int>(sizeof(MarketTick)); }

// The pacer's schedule, exported so a test can check that C++ and Rust agree.
uint64_t hb_due(uint64_t t0, double period, uint64_t i) {
    return t0 + static_cast<uint64_t>(static_cast<double>(i) * period);
}

// Returns NULL when the kind is unknown or unavailable (Boost without headers), or
// the capacity is unusable (0; not a power of two for the ring), or allocation fails.
void* hb_new(int kind, size_t capacity) {
    if (capacity == 0) return nullptr;
    try {
        switch (kind) {
            case kMutexCondvar:
                return new Handle{kMutex, new MutexQueue(capacity)};
            case kCppRing:
                if ((capacity & (capacity - 1)) != 0) return nullptr;
                if (capacity == kDocCapacity) return new Handle{kRing1024, new Ring1024()};
                return new Handle{kRingDyn, new RingDyn(capacity)};
            case kCppRingPrivate:
                if ((capacity & (capacity - 1)) != 0) return nullptr;
                if (capacity == kDocCapacity) return new Handle{kRingPrivate1024, new RingPrivate1024()};
                return new Handle{kRingPrivateDyn, new RingPrivateDyn(capacity)};
            case kBoostSpsc:
#ifdef HB_HAVE_BOOST
                if (capacity == kDocCapacity) return new Handle{kBoost1024, new Boost1024()};
                return new Handle{kBoostDyn, new BoostDyn(capacity)};
#else
                return nullptr;
#endif
            default:
                return nullptr;
        }
    } catch (...) {
        return nullptr;
    }
}

void hb_free(void* h) {
    Handle* handle = static_cast<Handle*>(h);
    if (handle == nullptr) return;
    visit(handle, [](auto& q) { delete &q; });
    delete handle;
}

void hb_produce(void* h, hb_role* r) {
    if (r->clock == 0) {
        visit(static_cast<Handle*>(h), [r](auto& q) { produce<Tsc>(q, r); });
    } else {
        visit(static_cast<Handle*>(h), [r](auto& q) { produce<Monotonic>(q, r); });
    }
}

void hb_consume(void* h, hb_role* r) {
    if (r->clock == 0) {
        visit(static_cast<Handle*>(h), [r](auto& q) { consume<Tsc>(q, r); });
    } else {
        visit(static_cast<Handle*>(h), [r](auto& q) { consume<Monotonic>(q, r); });
    }
}

}  // extern "C"
