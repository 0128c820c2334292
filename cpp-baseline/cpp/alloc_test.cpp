// Document 004's allocator test as the document ran it, in C++: a working set of live
// blocks of random sizes (8 B to 4 KiB, each octave equally likely, so a size's odds
// fall as 1/size), then replacements: a block picked at random (low slots far more
// often than high ones, odds ~ 1/index) is read, freed, and replaced by a new block of
// a new random size, written once. The same generator (wyrand), size and slot draws
// as the Rust port (runner/src/experiments/alloc/workload.rs), through C++'s operator
// new and delete, so that whatever allocator is preloaded (LD_PRELOAD) serves it.
//
// Usage: alloc_test WORKING_SET_BYTES REPLACEMENTS [SEED]
// Prints its deterministic outcome on stdout (the same under every allocator) and the
// steady part's nanoseconds per replacement on stderr ("ns_per_replacement N").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

struct Rng {
    std::uint64_t s;
    std::uint64_t next() {
        s += 0xa0761d6478bd642fULL;
        unsigned __int128 t = static_cast<unsigned __int128>(s) * (s ^ 0xe7037ed1a0b428dbULL);
        return static_cast<std::uint64_t>(t >> 64) ^ static_cast<std::uint64_t>(t);
    }
};

constexpr unsigned kMinOctave = 3;
constexpr std::uint64_t kOctaves = 9;

std::size_t draw_size(std::uint64_t r) {
    unsigned o = kMinOctave + static_cast<unsigned>(r % kOctaves);
    std::size_t base = std::size_t{1} << o;
    return base + (static_cast<std::size_t>(r >> 8) & (base - 1));
}

std::size_t draw_slot(std::uint64_t r, unsigned levels) {
    std::uint64_t l = ((r & 0xffffffffULL) * (levels + 1)) >> 32;
    return static_cast<std::size_t>((r >> 32) & ((std::uint64_t{1} << l) - 1));
}

struct Live {
    unsigned char *p;
    std::uint32_t size;
    std::uint32_t tag;
    std::uint64_t *word() const { return reinterpret_cast<std::uint64_t *>(p + ((size / 2) & ~std::size_t{7})); }
    std::uint64_t stamp() const { return (std::uint64_t{tag} << 32) | size; }
};

Live make(std::size_t size, std::uint32_t tag) {
    Live l{static_cast<unsigned char *>(::operator new(size)), static_cast<std::uint32_t>(size), tag};
    *l.word() = l.stamp();
    return l;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s WORKING_SET_BYTES REPLACEMENTS [SEED]\n", argv[0]);
        return 2;
    }
    std::size_t working_set = std::strtoull(argv[1], nullptr, 10);
    std::size_t ops = std::strtoull(argv[2], nullptr, 10);
    Rng rng{argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1};
    std::vector<Live> live;
    std::size_t requested = 0;
    std::uint32_t tag = 0;
    while (requested < working_set) {
        std::size_t s = draw_size(rng.next());
        live.push_back(make(s, ++tag));
        requested += s;
    }
    std::size_t peak = requested;
    unsigned levels = 63 - __builtin_clzll(live.size());
    std::size_t bad = 0;
    auto start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < ops; k++) {
        std::size_t i = draw_slot(rng.next(), levels);
        std::size_t s = draw_size(rng.next());
        Live old = live[i];
        bad += *old.word() != old.stamp();
        ::operator delete(old.p);
        live[i] = make(s, ++tag);
        requested = requested - old.size + s;
        if (requested > peak) peak = requested;
    }
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::uint64_t sum = 0;
    for (const Live &l : live) {
        bad += *l.word() != l.stamp();
        sum += l.size;
        ::operator delete(l.p);
    }
    std::printf("blocks %zu replacements %zu live bytes %llu peak bytes %zu overwritten %zu\n", live.size(), ops,
                static_cast<unsigned long long>(sum), peak, bad);
    std::fprintf(stderr, "ns_per_replacement %.3f\n", ops ? secs * 1e9 / static_cast<double>(ops) : 0.0);
    return bad == 0 ? 0 : 1;
}
