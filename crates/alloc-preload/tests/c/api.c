/* The C allocation API's contracts, checked in a program that runs with
 * libhandoff_alloc.so preloaded (tests/c_api.rs builds and runs it). Each check that
 * fails prints its line and the program exits 1; every block the program gets is
 * checked to come from handoff-alloc (handoff_alloc_owns), so a run that fell back to
 * the C library's allocator fails too.
 *
 * Usage: api [all | foreign-free | foreign-realloc | interior-big | ...]  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Weak: the program also runs without the library (and must then fail). */
extern int handoff_alloc_owns(const void *p) __attribute__((weak));
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static int failures;
/* "quick": fewer threads and forks; "contracts": one thread, no fork (for runs under
 * Valgrind, which serialises threads). */
static int quick, contracts_only;
static int checks;

#define CHECK(cond)                                                                \
    do {                                                                           \
        checks++;                                                                  \
        if (!(cond)) {                                                             \
            failures++;                                                            \
            fprintf(stderr, "api.c:%d: check failed: %s\n", __LINE__, #cond);      \
        }                                                                          \
    } while (0)

/* Fills n bytes with a pattern from seed, and checks it. */
static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 31);
}
static int intact(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 31)) return 0;
    return 1;
}

/* The alignment malloc(n) promises here, as glibc, jemalloc, mimalloc and tcmalloc: 16
 * above 8 bytes, 8 up to 8. */
static size_t min_align(size_t n) { return n <= 8 ? 8 : 16; }

static const size_t sizes[] = {0, 1, 7, 8, 9, 16, 17, 24, 25, 48, 64, 100, 128, 255, 256,
                               1000, 4095, 4096, 4097, 65536, 100000, 262144, 262145,
                               1 << 20, (1 << 20) + 1, 4 << 20, (4 << 20) + 1, 9 << 20,
                               64 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_malloc_free(void) {
    void *blocks[NSIZES];
    for (size_t i = 0; i < NSIZES; i++) {
        size_t n = sizes[i];
        unsigned char *p = malloc(n);
        CHECK(p != NULL);
        CHECK(handoff_alloc_owns(p));
        CHECK((uintptr_t)p % min_align(n) == 0);
        CHECK(malloc_usable_size(p) >= n);
        fill(p, n, (unsigned)i);
        blocks[i] = p;
    }
    /* All live at once: nobody's bytes were overwritten by another's. */
    for (size_t i = 0; i < NSIZES; i++) CHECK(intact(blocks[i], sizes[i], (unsigned)i));
    /* The whole usable size is the block's: writing it harms no neighbour. */
    for (size_t i = 0; i < NSIZES; i++) {
        size_t u = malloc_usable_size(blocks[i]);
        memset(blocks[i], 0xee, u);
    }
    for (size_t i = 0; i < NSIZES; i++) free(blocks[i]);
    /* Every size from 9 to 256 bytes, many blocks of each: 16-aligned (compilers assume
     * it for a `new T` of 16 bytes or more), as calloc's and realloc's. */
    for (size_t n = 9; n <= 256; n++) {
        void *few[64];
        for (int k = 0; k < 64; k++) {
            few[k] = malloc(n);
            CHECK((uintptr_t)few[k] % 16 == 0);
        }
        for (int k = 0; k < 64; k++) free(few[k]);
        void *z = calloc(1, n);
        CHECK((uintptr_t)z % 16 == 0);
        void *r = realloc(z, n + 1);
        CHECK((uintptr_t)r % 16 == 0);
        free(r);
    }
    /* malloc(0): a unique pointer each time, freeable. */
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    free(a);
    free(b);
    free(NULL);
    CHECK(malloc_usable_size(NULL) == 0);
    /* Impossible sizes: NULL with ENOMEM. */
    errno = 0;
    CHECK(malloc(SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc((size_t)PTRDIFF_MAX + 1) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(SIZE_MAX - 4096) == NULL && errno == ENOMEM);
    /* Many blocks of one size are distinct and keep their contents. */
    enum { N = 10000 };
    static unsigned char *many[N];
    for (int i = 0; i < N; i++) {
        many[i] = malloc(40);
        CHECK(many[i] != NULL);
        fill(many[i], 40, (unsigned)i);
    }
    for (int i = 0; i < N; i++) CHECK(intact(many[i], 40, (unsigned)i));
    for (int i = 0; i < N; i += 2) free(many[i]);
    for (int i = 0; i < N; i += 2) {
        many[i] = malloc(40);
        fill(many[i], 40, (unsigned)i);
    }
    for (int i = 0; i < N; i++) CHECK(intact(many[i], 40, (unsigned)i));
    for (int i = 0; i < N; i++) free(many[i]);
}

static void test_calloc(void) {
    for (size_t i = 0; i < NSIZES; i++) {
        size_t n = sizes[i];
        /* Dirty a block of the size first, so that a reused block must be zeroed. */
        unsigned char *d = malloc(n);
        memset(d, 0xab, malloc_usable_size(d));
        free(d);
        unsigned char *p = calloc(1, n);
        CHECK(p != NULL && handoff_alloc_owns(p));
        int zero = 1;
        for (size_t k = 0; k < n; k++) zero &= p[k] == 0;
        CHECK(zero);
        free(p);
    }
    unsigned char *p = calloc(1000, 24);
    CHECK(p != NULL);
    for (size_t k = 0; k < 24000; k++) CHECK(p[k] == 0) ;
    free(p);
    void *z = calloc(0, 10);
    CHECK(z != NULL);
    free(z);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
}

static void test_realloc(void) {
    /* NULL: malloc. */
    unsigned char *p = realloc(NULL, 10);
    CHECK(p != NULL && handoff_alloc_owns(p));
    fill(p, 10, 5);
    /* Grow through every kind of block, then shrink back: the contents move along. */
    size_t have = 10;
    static const size_t steps[] = {24, 100, 5000, 262144, 300000, 3 << 20, 5 << 20,
                                   40 << 20, 6 << 20, 2 << 20, 200000, 1000, 16, 1};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        size_t n = steps[i];
        unsigned char *q = realloc(p, n);
        CHECK(q != NULL && handoff_alloc_owns(q));
        CHECK(malloc_usable_size(q) >= n);
        size_t keep = have < n ? have : n;
        CHECK(intact(q, keep, 5));
        fill(q, n, 5);
        p = q;
        have = n;
    }
    /* A failed realloc leaves the block as it was. */
    errno = 0;
    CHECK(realloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
    CHECK(intact(p, have, 5));
    /* realloc(p, 0) frees p and returns NULL, as glibc. */
    CHECK(realloc(p, 0) == NULL);
    /* reallocarray: the product's overflow is ENOMEM, the block untouched. */
    unsigned char *r = reallocarray(NULL, 10, 10);
    CHECK(r != NULL);
    fill(r, 100, 9);
    errno = 0;
    CHECK(reallocarray(r, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    CHECK(intact(r, 100, 9));
    r = reallocarray(r, 1000, 10);
    CHECK(r != NULL && intact(r, 100, 9));
    free(r);
}

static void test_aligned(void) {
    /* posix_memalign: every power of two from 8 to 16 MiB, several sizes. */
    static const size_t asizes[] = {0, 1, 100, 4096, 5000, 262144, 300000, 5 << 20};
    for (size_t shift = 3; shift <= 24; shift++) {
        size_t align = (size_t)1 << shift;
        for (size_t i = 0; i < sizeof(asizes) / sizeof(asizes[0]); i++) {
            size_t n = asizes[i];
            void *p = (void *)1;
            CHECK(posix_memalign(&p, align, n) == 0);
            CHECK(p != NULL && handoff_alloc_owns(p));
            CHECK((uintptr_t)p % align == 0);
            CHECK(malloc_usable_size(p) >= n);
            fill(p, n, (unsigned)shift);
            CHECK(intact(p, n, (unsigned)shift));
            /* realloc of an over-aligned block keeps its bytes. */
            unsigned char *q = realloc(p, n + 3000);
            CHECK(q != NULL && intact(q, n, (unsigned)shift));
            free(q);
        }
    }
    /* posix_memalign's EINVAL: not a power of two, or not a multiple of a pointer;
     * the out pointer is left alone. */
    static const size_t bad[] = {0, 1, 2, 4, 12, 24, 48, 100};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        void *p = (void *)0x1234;
        CHECK(posix_memalign(&p, bad[i], 16) == EINVAL);
        CHECK(p == (void *)0x1234);
    }
    void *p = (void *)0x1234;
    CHECK(posix_memalign(&p, 64, SIZE_MAX) == ENOMEM && p == (void *)0x1234);
    /* aligned_alloc: any power of two; others are EINVAL. */
    for (size_t shift = 0; shift <= 20; shift++) {
        size_t align = (size_t)1 << shift;
        void *a = aligned_alloc(align, 3 * align + 1);
        CHECK(a != NULL && (uintptr_t)a % align == 0 && handoff_alloc_owns(a));
        memset(a, 1, 3 * align + 1);
        free(a);
    }
    errno = 0;
    CHECK(aligned_alloc(24, 48) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(0, 48) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(64, SIZE_MAX - 10) == NULL && errno == ENOMEM);
    /* memalign rounds an alignment that is not a power of two up to one. */
    void *m = memalign(24, 10);
    CHECK(m != NULL && (uintptr_t)m % 32 == 0);
    free(m);
    m = memalign(1 << 20, 10);
    CHECK(m != NULL && (uintptr_t)m % (1 << 20) == 0);
    free(m);
    m = memalign(0, 10);
    CHECK(m != NULL);
    free(m);
    /* valloc and pvalloc: page-aligned; pvalloc rounds the size up to pages. */
    long page = sysconf(_SC_PAGESIZE);
    void *v = valloc(10);
    CHECK(v != NULL && (uintptr_t)v % page == 0);
    free(v);
    void *pv = pvalloc(1);
    CHECK(pv != NULL && (uintptr_t)pv % page == 0 && malloc_usable_size(pv) >= (size_t)page);
    memset(pv, 2, page);
    free(pv);
    pv = pvalloc(0);
    CHECK(pv != NULL && malloc_usable_size(pv) >= (size_t)page);
    free(pv);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
}

static void test_libc_names(void) {
    void *p = __libc_malloc(100);
    CHECK(p != NULL && handoff_alloc_owns(p));
    p = __libc_realloc(p, 200000);
    CHECK(p != NULL && handoff_alloc_owns(p));
    __libc_free(p);
    unsigned char *c = __libc_calloc(10, 10);
    CHECK(c != NULL && c[0] == 0 && c[99] == 0 && handoff_alloc_owns(c));
    free(c);
    p = __libc_memalign(256, 10);
    CHECK(p != NULL && (uintptr_t)p % 256 == 0);
    free(p);
    /* What the C library itself allocates comes from here too. */
    char *s = strdup("handoff");
    CHECK(s != NULL && handoff_alloc_owns(s) && strcmp(s, "handoff") == 0);
    free(s);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    fprintf(f, "%d\n", 42);
    fclose(f);
    CHECK(malloc_trim(0) == 1);
}

/* cfree as old binaries reference it: glibc's compatibility version. */
extern void cfree_compat(void *);
__asm__(".symver cfree_compat, cfree@GLIBC_2.2.5");

/* glibc's extensions answer with this allocator's figures; its compatibility and C23
 * names reach this allocator. */
static void test_extensions(void) {
    enum { K = 1000 };
    static void *kb[K];
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < K; i++) kb[i] = malloc(1000);
    void *big = malloc(16 << 20);
    struct mallinfo2 after = mallinfo2();
    CHECK(after.uordblks >= before.uordblks + (size_t)K * 1000);
    CHECK(after.hblkhd >= before.hblkhd + (16 << 20) && after.hblks >= before.hblks + 1);
    CHECK(after.arena >= after.uordblks);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
    CHECK(old.uordblks >= K * 1000);
    for (int i = 0; i < K; i++) free(kb[i]);
    free(big);
    /* malloc_info: XML on the stream; options other than 0 are EINVAL. */
    FILE *f = tmpfile();
    CHECK(f != NULL && malloc_info(0, f) == 0);
    char text[4096] = {0};
    rewind(f);
    fread(text, 1, sizeof text - 1, f);
    CHECK(strstr(text, "<malloc version=\"handoff-alloc") != NULL && strstr(text, "</malloc>") != NULL);
    errno = 0;
    CHECK(malloc_info(1, f) == -1 && errno == EINVAL);
    fclose(f);
    /* malloc_stats: the allocator's figures on standard error. */
    FILE *err = tmpfile();
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(err), 2);
    malloc_stats();
    dup2(saved, 2);
    close(saved);
    memset(text, 0, sizeof text);
    rewind(err);
    fread(text, 1, sizeof text - 1, err);
    fclose(err);
    CHECK(strstr(text, "handoff-alloc") != NULL && strstr(text, "in use bytes") != NULL);
    /* mallopt: glibc's parameters accepted (and ignored), others refused. */
    CHECK(mallopt(M_ARENA_MAX, 2) == 1 && mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1);
    CHECK(mallopt(12345, 1) == 0);
    /* cfree, as a binary linked before glibc 2.26 calls it (a reference to the
     * compatibility version, cfree@GLIBC_2.2.5, resolved by the dynamic linker);
     * free_sized and free_aligned_sized (C23), which glibc 2.36 lacks. */
    cfree_compat(malloc(100));
    void (*fs)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    void (*fas)(void *, size_t, size_t) =
        (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    CHECK(fs != NULL && fas != NULL);
    if (fs) fs(malloc(100), 100);
    if (fas) fas(aligned_alloc(256, 512), 256, 512);
}

/* Threads: each allocates and frees its own blocks, and frees blocks the others made
 * (a ring of hand-offs), and exits with blocks live that main frees later. */
enum { THREADS = 8, PER_THREAD = 20000 };
static void *slots[THREADS][PER_THREAD];
static void *leftovers[THREADS];

static void *worker(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        size_t n = (size_t)(i * 7 + t) % 3000 + 1;
        unsigned char *p = malloc(n);
        if (!p || !handoff_alloc_owns(p)) return (void *)1;
        fill(p, n < 16 ? n : 16, (unsigned)(i + t));
        slots[t][i] = p;
        if (i % 3 == 0) {
            free(p);
            slots[t][i] = NULL;
        }
    }
    for (int i = 0; i < PER_THREAD; i++) {
        size_t n = (size_t)(i * 7 + t) % 3000 + 1;
        if (slots[t][i] && !intact(slots[t][i], n < 16 ? n : 16, (unsigned)(i + t)))
            return (void *)2;
    }
    leftovers[t] = malloc(12345);
    return NULL;
}

/* A short-lived thread: its own blocks, all freed but one, which main frees after
 * the thread has exited. */
static void *wave_left[200];
static void *short_lived(void *arg) {
    long t = (long)arg;
    enum { M = 2000 };
    unsigned char *mine[M];
    for (int i = 0; i < M; i++) {
        size_t n = (size_t)(i * 13 + t) % 5000 + 1;
        mine[i] = malloc(n);
        if (!mine[i]) return (void *)1;
        fill(mine[i], n < 16 ? n : 16, (unsigned)i);
    }
    for (int i = 0; i < M; i++) {
        size_t n = (size_t)(i * 13 + t) % 5000 + 1;
        if (!intact(mine[i], n < 16 ? n : 16, (unsigned)i)) return (void *)2;
        free(mine[i]);
    }
    wave_left[t] = malloc(100);
    fill(wave_left[t], 100, (unsigned)t);
    return NULL;
}

static void *freer(void *arg) {
    long t = (long)arg;
    long from = (t + 1) % THREADS;
    for (int i = 0; i < PER_THREAD; i++) free(slots[from][i]);
    return NULL;
}

static void test_threads(void) {
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
    for (long t = 0; t < THREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        CHECK(r == NULL);
    }
    /* Every block freed by a thread that did not make it, after its maker exited. */
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, freer, (void *)t) == 0);
    for (long t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (long t = 0; t < THREADS; t++) free(leftovers[t]);
    /* Many short-lived threads, more than the allocator has heaps, 200 at once. */
    for (int wave = 0; wave < (quick ? 1 : 3); wave++) {
        enum { W = 200 };
        pthread_t w[W];
        long nw = quick ? 20 : W;
        for (long t = 0; t < nw; t++) CHECK(pthread_create(&w[t], NULL, short_lived, (void *)t) == 0);
        for (long t = 0; t < nw; t++) {
            void *r;
            pthread_join(w[t], &r);
            CHECK(r == NULL);
        }
        /* Each left one block behind when it exited. */
        for (long t = 0; t < nw; t++) {
            CHECK(intact(wave_left[t], 100, (unsigned)t));
            free(wave_left[t]);
        }
    }
}

/* fork while other threads allocate: the child can allocate, free, and exec. */
static volatile int stop_churn;
static void *churn(void *arg) {
    (void)arg;
    while (!stop_churn) {
        void *p = malloc(100);
        void *q = malloc(600000);
        free(p);
        free(q);
    }
    return NULL;
}

static void test_fork_exec(void) {
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, churn, NULL);
    for (int round = 0; round < (quick ? 11 : 50); round++) {
        pid_t pid = fork();
        if (pid == 0) {
            int ok = 1;
            for (int i = 0; i < 1000; i++) {
                unsigned char *p = malloc((size_t)i * 13 + 1);
                void *big = malloc(700000);
                ok &= p != NULL && big != NULL && handoff_alloc_owns(p);
                free(p);
                free(big);
            }
            if (round % 10 == 0) {
                /* exec: the new program runs on the preloaded allocator too. */
                execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
                _exit(3);
            }
            _exit(ok ? 0 : 2);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == (round % 10 == 0 ? 7 : 0));
    }
    stop_churn = 1;
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
}

static void test_dlopen(void) {
    /* Loading a library allocates (the loader's own structures, its constructors). */
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    double (*cosine)(double) = (double (*)(double))dlsym(h, "cos");
    CHECK(cosine != NULL && cosine(0.0) == 1.0);
    CHECK(dlclose(h) == 0);
    h = dlopen("libz.so.1", RTLD_NOW);
    if (h) {
        const char *(*version)(void) = (const char *(*)(void))dlsym(h, "zlibVersion");
        CHECK(version != NULL && version() != NULL);
        dlclose(h);
    }
}

/* Before main: a constructor's allocation. */
static void *early;
__attribute__((constructor)) static void before_main(void) {
    early = malloc(333);
    memset(early, 3, 333);
}

static void *make_one(void *out) {
    *(char **)out = malloc(48);
    return NULL;
}

/* The cases that must abort: each run in its own process by the Rust test, which
 * checks for SIGABRT and the message. */
static int bad_free(const char *what) {
    static char in_data[64];
    char on_stack[64];
    if (strcmp(what, "foreign-stack") == 0) free(on_stack + 16);
    else if (strcmp(what, "foreign-data") == 0) free(in_data + 16);
    else if (strcmp(what, "foreign-unmapped") == 0) free((void *)0x10000);
    else if (strcmp(what, "interior-big") == 0) {
        char *p = malloc(16 << 20);
        free(p + 4096);
    } else if (strcmp(what, "interior-large") == 0) {
        char *p = malloc(1 << 20);
        free(p + 16);
    } else if (strcmp(what, "foreign-realloc") == 0) {
        realloc(in_data + 16, 100);
    } else if (strcmp(what, "foreign-usable") == 0) {
        (void)malloc_usable_size(on_stack + 16);
    } else if (strcmp(what, "big-twice") == 0) {
        char *p = malloc(16 << 20);
        free(p);
        free(p);
    } else if (strcmp(what, "small-twice") == 0) {
        char *p = malloc(32);
        free(p);
        free(p);
    } else if (strcmp(what, "small-twice-full") == 0) {
        /* The second free finds the magazine full (the slow path). */
        char *p[200];
        for (int i = 0; i < 200; i++) p[i] = malloc(32);
        for (int i = 0; i < 200; i++) free(p[i]);
        free(p[199]);
    } else if (strcmp(what, "large-twice") == 0) {
        char *p = malloc(1 << 20);
        free(p);
        free(p);
    } else if (strcmp(what, "remote-twice") == 0) {
        pthread_t t;
        char *p = NULL;
        pthread_create(&t, NULL, make_one, &p);
        pthread_join(t, NULL);
        free(p);
        free(p);
    } else if (strcmp(what, "foreign-header") == 0) {
        /* A buffer of the program's own whose bytes read as a big block's old header
         * (a page-multiple length, a page-aligned start just before the address). */
        size_t len = 4 << 20;
        unsigned char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        size_t *h = (size_t *)(buf + 4096 - 16);
        h[0] = len;
        h[1] = (size_t)buf;
        free(buf + 4096);
        /* Not reached; had free unmapped the buffer, this would crash. */
        buf[0] = 1;
    } else if (strcmp(what, "foreign-protnone") == 0) {
        /* The 16 bytes before the address lie in a page the program cannot read. */
        unsigned char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(two, 4096, PROT_NONE);
        free(two + 4096);
    } else {
        fprintf(stderr, "unknown case %s\n", what);
        return 2;
    }
    /* Not reached when the allocator aborts. */
    printf("survived %s\n", what);
    return 0;
}

int main(int argc, char **argv) {
    if (!handoff_alloc_owns) {
        fprintf(stderr, "api.c: libhandoff_alloc.so is not loaded (LD_PRELOAD)\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "all") != 0 && strcmp(argv[1], "quick") != 0 &&
        strcmp(argv[1], "contracts") != 0)
        return bad_free(argv[1]);
    quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    contracts_only = argc > 1 && strcmp(argv[1], "contracts") == 0;
    CHECK(early != NULL && handoff_alloc_owns(early));
    free(early);
    test_malloc_free();
    test_calloc();
    test_realloc();
    test_aligned();
    test_libc_names();
    test_extensions();
    test_dlopen();
    if (!contracts_only) {
        test_threads();
        test_fork_exec();
    }
    printf("api.c: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
