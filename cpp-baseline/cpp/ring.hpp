// The queue document's hand-rolled lock-free SPSC ring ("lockfree-handrolled"):
// power-of-two bitmask indexing, head and tail each on its own 64-byte line
// (PaddedAtomic with a static_assert on its alignment), acquire/release only,
// non-blocking try_push / try_pop. The producer reads the consumer's head on every
// push and the consumer reads the producer's tail on every pop: no cached indices,
// exactly as the document's hot path shows.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

namespace hb {

template <typename T>
struct alignas(64) PaddedAtomic {
    std::atomic<T> value{0};
    char pad[64 - sizeof(std::atomic<T>)];
};
static_assert(alignof(PaddedAtomic<size_t>) == 64, "head and tail must own a cache line");
static_assert(sizeof(PaddedAtomic<size_t>) == 64, "head and tail must own a cache line");

// N > 0: compile-time capacity (the document's 1024); N == 0: capacity chosen at
// run time (still a power of two). The same code serves both.
template <typename T, size_t N = 0>
class SpscRing {
    static_assert(N == 0 || (N & (N - 1)) == 0, "capacity must be a power of two");

public:
    explicit SpscRing(size_t capacity = N)
        : cap_(N ? N : capacity), buffer_(new T[N ? N : capacity]) {}

    bool try_push(const T& item) noexcept {
        const size_t tail = tail_.value.load(std::memory_order_relaxed);
        const size_t head = head_.value.load(std::memory_order_acquire);
        if (tail - head >= cap()) return false;
        buffer_[tail & mask()] = item;
        tail_.value.store(tail + 1, std::memory_order_release);
        return true;
    }

    bool try_pop(T& out) noexcept {
        const size_t head = head_.value.load(std::memory_order_relaxed);
        const size_t tail = tail_.value.load(std::memory_order_acquire);
        if (head == tail) return false;
        out = buffer_[head & mask()];
        head_.value.store(head + 1, std::memory_order_release);
        return true;
    }

private:
    size_t cap() const noexcept { return N ? N : cap_; }
    size_t mask() const noexcept { return cap() - 1; }

    PaddedAtomic<size_t> head_;  // written by the consumer
    PaddedAtomic<size_t> tail_;  // written by the producer
    const size_t cap_;
    std::unique_ptr<T[]> buffer_;
};

// The same ring with one change, to isolate a cost of the document's hot path: each
// side keeps its own index in a private copy on a line of its own, so the producer no
// longer loads `tail_` from the line the consumer polls before it can compute the slot
// address (and the consumer no longer loads `head_` from the line the producer polls).
// Each side still loads the other side's index on every operation: no cached indices.
template <typename T, size_t N = 0>
class SpscRingPrivate {
    static_assert(N == 0 || (N & (N - 1)) == 0, "capacity must be a power of two");

public:
    explicit SpscRingPrivate(size_t capacity = N)
        : cap_(N ? N : capacity), buffer_(new T[N ? N : capacity]) {}

    bool try_push(const T& item) noexcept {
        const size_t tail = tail_own_.value;
        const size_t head = head_.value.load(std::memory_order_acquire);
        if (tail - head >= cap()) return false;
        buffer_[tail & mask()] = item;
        tail_own_.value = tail + 1;
        tail_.value.store(tail + 1, std::memory_order_release);
        return true;
    }

    bool try_pop(T& out) noexcept {
        const size_t head = head_own_.value;
        const size_t tail = tail_.value.load(std::memory_order_acquire);
        if (head == tail) return false;
        out = buffer_[head & mask()];
        head_own_.value = head + 1;
        head_.value.store(head + 1, std::memory_order_release);
        return true;
    }

private:
    struct alignas(64) Own {
        size_t value = 0;
        char pad[64 - sizeof(size_t)];
    };
    size_t cap() const noexcept { return N ? N : cap_; }
    size_t mask() const noexcept { return cap() - 1; }

    PaddedAtomic<size_t> head_;  // written by the consumer
    PaddedAtomic<size_t> tail_;  // written by the producer
    Own head_own_;               // the consumer's own copy of head_
    Own tail_own_;               // the producer's own copy of tail_
    const size_t cap_;
    std::unique_ptr<T[]> buffer_;
};

}  // namespace hb
