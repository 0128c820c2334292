// C++'s operator new and delete under the preloaded allocator: libstdc++ calls malloc,
// aligned_alloc and free, so every object below must come from handoff-alloc.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern "C" int handoff_alloc_owns(const void *p) __attribute__((weak));

static int failures;
#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            std::fprintf(stderr, "cxx.cpp:%d: check failed: %s\n", __LINE__, #cond); \
        }                                                                         \
    } while (0)

struct alignas(4096) Page {
    unsigned char bytes[4096];
};
struct alignas(64) Order {
    std::uint64_t id, price, qty, side;
};

static int handler_calls;
static void give_up() {
    handler_calls++;
    std::set_new_handler(nullptr);
}

// The object that defines `name` for this process.
static const char *defined_in(const char *name) {
    Dl_info info{};
    void *f = dlsym(RTLD_DEFAULT, name);
    return f && dladdr(f, &info) && info.dli_fname ? info.dli_fname : "";
}

int main() {
    if (!handoff_alloc_owns) {
        std::fprintf(stderr, "cxx.cpp: libhandoff_alloc.so is not loaded (LD_PRELOAD)\n");
        return 1;
    }
    // Every form of operator new and delete is the allocator's own, not libstdc++'s.
    for (const char *name : {"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t",
                             "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm",
                             "_ZdlPvSt11align_val_t", "_ZdaPvmSt11align_val_t"}) {
        const char *where = defined_in(name);
        if (!std::strstr(where, "libhandoff_alloc")) {
            failures++;
            std::fprintf(stderr, "cxx.cpp: %s is defined in '%s'\n", name, where);
        }
    }
    // Out of memory: nothrow gives null; the throwing form calls the new handler, then
    // throws std::bad_alloc.
    const std::size_t huge = SIZE_MAX / 4;
    CHECK(new (std::nothrow) char[huge] == nullptr);
    std::set_new_handler(give_up);
    bool threw = false;
    try {
        char *never = new char[huge];
        std::printf("%p\n", static_cast<void *>(never));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && handler_calls == 1);
    int *one = new int(7);
    CHECK(handoff_alloc_owns(one) && *one == 7);
    delete one;
    auto *arr = new double[1000]();
    CHECK(handoff_alloc_owns(arr) && arr[999] == 0.0);
    delete[] arr;
    auto *page = new Page();
    CHECK(handoff_alloc_owns(page) && reinterpret_cast<std::uintptr_t>(page) % 4096 == 0);
    delete page;
    std::vector<std::unique_ptr<Order>> orders;
    for (std::uint64_t i = 0; i < 100000; i++) {
        orders.push_back(std::make_unique<Order>(Order{i, i * 3, i % 7, i & 1}));
        CHECK(reinterpret_cast<std::uintptr_t>(orders.back().get()) % 64 == 0);
    }
    CHECK(handoff_alloc_owns(orders.data()) && handoff_alloc_owns(orders[500].get()));
    std::uint64_t sum = 0;
    for (auto &o : orders) sum += o->id;
    CHECK(sum == 100000ull * 99999 / 2);
    // Made on one thread, freed on another.
    std::thread t([&] { orders.clear(); });
    t.join();
    std::map<std::string, std::string> m;
    for (int i = 0; i < 20000; i++) m[std::to_string(i) + std::string(40, 'x')] = std::to_string(i * i);
    CHECK(m.size() == 20000 && m.begin()->second == "0");
    std::printf("cxx.cpp: %d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
