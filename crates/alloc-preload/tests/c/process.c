/* Patterns of real processes under libhandoff_alloc.so, one case per run (tests/processes.rs
 * runs each with the library preloaded, some also on the C library's allocator to compare):
 * plugins whose constructor starts a thread, fork handlers that allocate, threads whose only
 * allocator call is in a pthread key destructor, limits on the address space, aligned big
 * blocks freed again and again, a free list corrupted by a write after free, and waves of
 * short-lived threads whose blocks a long-lived thread frees.
 *
 * Usage: process CASE [ARG]. Exit status 0 when the case holds; each case that could hang
 * arms an alarm first, so a hang ends as a failure (status 124), never a stall. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child_pid;

/* A hang ends the process as a failure; a child it waits for is killed with it. */
static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "process.c: timed out (a hang)\n";
    if (child_pid > 0) kill(child_pid, SIGKILL);
    write(2, msg, sizeof msg - 1);
    _exit(124);
}

static void deadline(unsigned seconds) {
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

static int fail(const char *what) {
    fprintf(stderr, "process.c: %s\n", what);
    return 1;
}

/* Resident memory of this process, in KiB. */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ---- dlopen of a plugin whose constructor starts a thread and joins it ---------------- */

static int dlopen_thread(const char *plugin) {
    deadline(20);
    void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!h) return fail(dlerror());
    int *ran = dlsym(h, "plugin_thread_ran");
    if (!ran || !*ran) return fail("the plugin's thread did not run");
    dlclose(h);
    printf("dlopen-thread: the plugin's constructor thread allocated and was joined\n");
    return 0;
}

/* ---- fork handlers that allocate -------------------------------------------------------- */

/* Small, large (1 MiB) and big (16 MiB) blocks, written and freed. */
static int allocate_some(void) {
    int ok = 1;
    static const size_t sizes[] = {24, 700, 40000, 1 << 20, 3 << 20, 16 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = malloc(sizes[i]);
        ok &= p != NULL;
        if (p) {
            memset(p, 7, sizes[i]);
            free(p);
        }
    }
    return ok;
}

static volatile int handler_ok = 1;
static void alloc_in_handler(void) { handler_ok &= allocate_some(); }
static const char *which_handler;

/* Registered before the program's first allocation (a constructor that runs before any
 * allocator call of the program's own), so before the allocator registers its handlers
 * when it is first used: its prepare handler runs after the allocator's, its parent and
 * child handlers before the allocator's. */
__attribute__((constructor(101))) static void register_early(void) {
    const char *c = getenv("PROCESS_ATFORK");
    if (!c) return;
    which_handler = c;
    if (strcmp(c, "prepare") == 0) pthread_atfork(alloc_in_handler, NULL, NULL);
    else if (strcmp(c, "parent") == 0) pthread_atfork(NULL, alloc_in_handler, NULL);
    else if (strcmp(c, "child") == 0) pthread_atfork(NULL, NULL, alloc_in_handler);
}

static volatile int stop_churn;
static void *churn(void *arg) {
    (void)arg;
    while (!stop_churn) allocate_some();
    return NULL;
}

static int atfork(const char *which) {
    if (!which_handler || strcmp(which_handler, which) != 0)
        return fail("run with PROCESS_ATFORK set to the handler's name");
    deadline(30);
    pthread_t t;
    if (pthread_create(&t, NULL, churn, NULL) != 0) return fail("pthread_create");
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) _exit(handler_ok && allocate_some() ? 0 : 2);
        if (pid < 0) return fail("fork");
        child_pid = pid;
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return fail("a child failed");
        child_pid = 0;
    }
    stop_churn = 1;
    pthread_join(t, NULL);
    if (!handler_ok) return fail("an allocation in a fork handler failed");
    printf("atfork-%s: 20 forks, the %s handler allocating each time\n", which, which);
    return 0;
}

/* ---- threads whose first allocator call is in a pthread key destructor ----------------- */

static pthread_key_t key;
static void free_context(void *ctx) { free(ctx); }
static void *keyed(void *ctx) {
    pthread_setspecific(key, ctx);
    return NULL;
}

static pthread_barrier_t both;
static void *one_block(void *arg) {
    void **out = arg;
    *out = malloc(64);
    pthread_barrier_wait(&both); /* both threads alive, each with its block */
    free(*out);
    return NULL;
}

/* 300 workers (more than the allocator's 127 heaps) whose only call is the free of a
 * context main allocated, in their key destructor; afterwards two threads alive at once
 * must still get heaps of their own: their blocks lie in different heaps' spans (2^37
 * bytes each in the full arena). */
static int key_destructor(void) {
    deadline(60);
    if (pthread_key_create(&key, free_context) != 0) return fail("pthread_key_create");
    for (int i = 0; i < 300; i++) {
        void *ctx = malloc(64);
        pthread_t t;
        if (!ctx || pthread_create(&t, NULL, keyed, ctx) != 0) return fail("pthread_create");
        pthread_join(t, NULL);
    }
    void *a = NULL, *b = NULL;
    pthread_t ta, tb;
    pthread_barrier_init(&both, NULL, 2);
    pthread_create(&ta, NULL, one_block, &a);
    pthread_create(&tb, NULL, one_block, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (!a || !b) return fail("malloc failed");
    if ((uintptr_t)a >> 37 == (uintptr_t)b >> 37)
        return fail("after 300 such threads, two new threads share one heap (the shared heap)");
    printf("key-destructor: two threads after 300 keyed workers have heaps of their own\n");
    return 0;
}

/* ---- limits on the address space -------------------------------------------------------- */

/* Runs the rest of the program again under RLIMIT_AS = kib KiB (set before the new
 * program's first allocation). */
static void under_limit(char **argv, long kib) {
    if (getenv("PROCESS_LIMITED")) return;
    struct rlimit r = {(rlim_t)kib * 1024, (rlim_t)kib * 1024};
    setrlimit(RLIMIT_AS, &r);
    setenv("PROCESS_LIMITED", "1", 1);
    execv("/proc/self/exe", argv);
    perror("execv");
    _exit(3);
}

/* 200 000 blocks of 64 bytes under `ulimit -v 16000000`: prints the resident growth. */
static int limit_resident(char **argv) {
    under_limit(argv, 16000000);
    enum { N = 200000 };
    static unsigned char *blocks[N];
    long before = rss_kib();
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(64);
        if (!blocks[i]) return fail("malloc(64) failed");
        memset(blocks[i], i, 64);
    }
    long after = rss_kib();
    for (int i = 0; i < N; i++)
        if (blocks[i][63] != (unsigned char)i) return fail("a block was overwritten");
    printf("limit-resident: %ld KiB\n", after - before);
    for (int i = 0; i < N; i++) free(blocks[i]);
    return 0;
}

/* 32-byte blocks until malloc fails under `ulimit -v 400000`: prints the MiB allocated
 * (at most 4 GiB), and checks the failure is ENOMEM. */
static int limit_failure(char **argv) {
    under_limit(argv, 400000);
    size_t n = 0;
    for (;;) {
        errno = 0;
        unsigned char *p = malloc(32);
        if (!p) {
            if (errno != ENOMEM) return fail("malloc failed without ENOMEM");
            break;
        }
        p[0] = 1;
        p[31] = 2;
        if (++n == ((size_t)4 << 30) / 32) break;
    }
    printf("limit-failure: %zu MiB\n", n * 32 >> 20);
    return 0;
}

/* ---- big blocks freed and allocated again --------------------------------------------- */

/* 200 blocks of about 900 KiB aligned to 8 KiB, each written and freed; then 200 blocks of
 * 8 MiB that realloc shrinks to 900 KiB before they are freed; then malloc_trim(0).
 * Prints the resident growth. */
static int aligned_cache(void) {
    long before = rss_kib();
    for (int i = 0; i < 200; i++) {
        size_t n = 900 * 1024 + (size_t)i * 64;
        void *p = NULL;
        if (posix_memalign(&p, 8192, n) != 0) return fail("posix_memalign failed");
        memset(p, i, n);
        free(p);
    }
    for (int i = 0; i < 200; i++) {
        unsigned char *p = malloc(8 << 20);
        if (!p) return fail("malloc failed");
        memset(p, i, 8 << 20);
        unsigned char *q = realloc(p, 900 * 1024);
        if (!q || q[900 * 1024 - 1] != (unsigned char)i) return fail("realloc failed");
        free(q);
    }
    malloc_trim(0);
    printf("aligned-cache: %ld KiB\n", rss_kib() - before);
    return 0;
}

/* ---- a free list corrupted by a write after free ----------------------------------------- */

static unsigned char *made[64];
static pthread_barrier_t handed, go_on;
static void *maker(void *arg) {
    (void)arg;
    for (int i = 0; i < 64; i++) made[i] = malloc(48);
    pthread_barrier_wait(&handed);
    pthread_barrier_wait(&go_on);
    return NULL; /* its heap gathers the blocks freed to it at exit */
}

/* Another thread's 64 blocks are freed here (they go back to their heap as one chain), and
 * then the program writes into one of them after the free, over the word that links the
 * chain. The allocator must stop with its own message, not unwind or crash inside. */
static int corrupt_link(void) {
    deadline(20);
    pthread_t t;
    pthread_barrier_init(&handed, NULL, 2);
    pthread_barrier_init(&go_on, NULL, 2);
    pthread_create(&t, NULL, maker, NULL);
    pthread_barrier_wait(&handed);
    for (int i = 0; i < 64; i++) free(made[i]);
    /* The write after free: a link that points nowhere. */
    for (int i = 0; i < 64; i++) memcpy(made[i], &(uintptr_t){0x10}, sizeof(uintptr_t));
    pthread_barrier_wait(&go_on);
    pthread_join(t, NULL);
    void *again[200];
    for (int i = 0; i < 200; i++) again[i] = malloc(48);
    (void)again;
    printf("survived corrupt-link\n");
    return 0;
}

/* ---- waves of short-lived threads whose blocks a long-lived thread frees later ------- */

enum { WAVES = 50, WORKERS = 100, PER_WORKER = 100 };

/* A xorshift generator per thread: the same sizes in every run. */
static size_t next_size(unsigned long long *s, int shape) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    unsigned long long r = *s;
    if (shape == 1) return 16 + (size_t)(r % 241) * 16;            /* 16 B to 3.8 KiB */
    unsigned shift = 4 + (unsigned)((r >> 3) % (r % 3 == 0 ? 13 : 7)); /* 16 B to 64 KiB */
    size_t base = (size_t)1 << shift;
    return base + (size_t)((r >> 9) % base) / 2;
}

struct wave_args {
    int wave, worker, shape, together;
};
static pthread_barrier_t wave_barrier;
static unsigned char *wave_blocks[2][WORKERS * PER_WORKER];
static size_t wave_sizes[2][WORKERS * PER_WORKER];

static void *wave_worker(void *arg) {
    struct wave_args *a = arg;
    unsigned long long s = 0x9e3779b97f4a7c15ull ^ (unsigned long long)(a->wave * 1000 + a->worker);
    int w = a->wave % 2;
    for (int i = 0; i < PER_WORKER; i++) {
        size_t n = next_size(&s, a->shape);
        unsigned char *p = malloc(n);
        if (!p) return (void *)1;
        memset(p, i, n);
        int k = a->worker * PER_WORKER + i;
        /* Shape 2: every other block is freed by its own thread at once. */
        if (a->shape == 2 && i % 2) {
            free(p);
            p = NULL;
        }
        wave_blocks[w][k] = p;
        wave_sizes[w][k] = n;
    }
    /* "together": every worker of the wave is alive at once (a pool of 100 threads). */
    if (a->together) pthread_barrier_wait(&wave_barrier);
    return NULL;
}

/* Frees what the wave before the last one made (those of the wave before, for shape 0),
 * checking each block's last byte. */
static int free_wave(int w) {
    for (int k = 0; k < WORKERS * PER_WORKER; k++) {
        unsigned char *p = wave_blocks[w][k];
        if (!p) continue;
        if (p[wave_sizes[w][k] - 1] != (unsigned char)(k % PER_WORKER)) return 0;
        free(p);
        wave_blocks[w][k] = NULL;
    }
    return 1;
}

/* 50 waves of 100 workers, each allocating 100 blocks (sizes by shape: 0 and 2, 16 B to
 * 64 KiB; 1, 16 B to 3.8 KiB) that the long-lived main thread frees while the next wave
 * runs (shape 2: half of them freed by the worker itself first); with "together", the
 * workers of a wave all live until the last has made its blocks. Prints the growth from
 * wave 10 to wave 50 of resident memory (KiB), of the memory the allocator took for small
 * blocks (mallinfo2's arena, KiB; and its size at wave 10) and of its free small blocks
 * (mallinfo2's ordblks: blocks cut anew beyond those in use). */
static int waves(const char *shape_arg, const char *together) {
    int shape = shape_arg ? atoi(shape_arg) : 0;
    int all = together && strcmp(together, "together") == 0;
    deadline(300);
    static struct wave_args args[WORKERS];
    pthread_t th[WORKERS];
    long rss10 = 0, arena10 = 0, free10 = 0;
    pthread_barrier_init(&wave_barrier, NULL, WORKERS);
    for (int w = 0; w < WAVES; w++) {
        for (int t = 0; t < WORKERS; t++) {
            args[t] = (struct wave_args){w, t, shape, all};
            if (pthread_create(&th[t], NULL, wave_worker, &args[t]) != 0) return fail("pthread_create");
        }
        /* Meanwhile: the previous wave's blocks. */
        if (w > 0 && !free_wave((w - 1) % 2)) return fail("a block was overwritten");
        for (int t = 0; t < WORKERS; t++) {
            void *r;
            pthread_join(th[t], &r);
            if (r) return fail("malloc failed");
        }
        if (w == 9) {
            struct mallinfo2 m = mallinfo2();
            rss10 = rss_kib();
            arena10 = (long)(m.arena >> 10);
            free10 = (long)m.ordblks;
        }
    }
    struct mallinfo2 m = mallinfo2();
    printf("waves: %ld KiB resident, %ld KiB arena (of %ld), %ld free blocks (growth from wave 10 to %d)\n",
           rss_kib() - rss10, (long)(m.arena >> 10) - arena10, arena10, (long)m.ordblks - free10, WAVES);
    return 0;
}

/* ---- a pool of threads left idle, whose blocks another thread freed ------------------ */

enum { IDLE_WAVES = 50, IDLE_BLOCKS = 2000, IDLE_SIZE = 1000 };
static unsigned char *idle_blocks[IDLE_WAVES][IDLE_BLOCKS];
static sem_t idle_made;
static volatile int idle_stop;

static void *idle_worker(void *arg) {
    long w = (long)arg;
    for (int i = 0; i < IDLE_BLOCKS; i++) {
        idle_blocks[w][i] = malloc(IDLE_SIZE);
        if (!idle_blocks[w][i]) return (void *)1;
        memset(idle_blocks[w][i], (int)(w + i), IDLE_SIZE);
    }
    sem_post(&idle_made);
    /* Then idle, alive, until the end (a session's thread waiting for its client). */
    while (!idle_stop) usleep(1000);
    return NULL;
}

/* 50 waves: a new thread allocates 2 000 blocks of 1 000 bytes, hands them over and then
 * stays idle; the main thread frees them during the next wave. Each thread's blocks go
 * back to its heap, whose thread is alive and never allocates again. Prints the growth of
 * resident memory from wave 10 to wave 50, in KiB. */
static int idle_pool(void) {
    deadline(120);
    static pthread_t th[IDLE_WAVES];
    sem_init(&idle_made, 0, 0);
    long rss10 = 0;
    for (long w = 0; w < IDLE_WAVES; w++) {
        if (pthread_create(&th[w], NULL, idle_worker, (void *)w) != 0) return fail("pthread_create");
        if (w > 0) {
            for (int i = 0; i < IDLE_BLOCKS; i++) {
                if (idle_blocks[w - 1][i][IDLE_SIZE - 1] != (unsigned char)(w - 1 + i))
                    return fail("a block was overwritten");
                free(idle_blocks[w - 1][i]);
            }
        }
        sem_wait(&idle_made);
        if (w == 9) rss10 = rss_kib();
    }
    long grew = rss_kib() - rss10;
    idle_stop = 1;
    for (long w = 0; w < IDLE_WAVES; w++) {
        void *r;
        pthread_join(th[w], &r);
        if (r) return fail("malloc failed");
    }
    printf("idle-pool: %ld KiB resident (growth from wave 10 to %d)\n", grew, IDLE_WAVES);
    return 0;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "dlopen-thread") == 0 && argc > 2) return dlopen_thread(argv[2]);
    if (strcmp(c, "atfork-prepare") == 0) return atfork("prepare");
    if (strcmp(c, "atfork-parent") == 0) return atfork("parent");
    if (strcmp(c, "atfork-child") == 0) return atfork("child");
    if (strcmp(c, "key-destructor") == 0) return key_destructor();
    if (strcmp(c, "limit-resident") == 0) return limit_resident(argv);
    if (strcmp(c, "limit-failure") == 0) return limit_failure(argv);
    if (strcmp(c, "aligned-cache") == 0) return aligned_cache();
    if (strcmp(c, "corrupt-link") == 0) return corrupt_link();
    if (strcmp(c, "waves") == 0) return waves(argc > 2 ? argv[2] : NULL, argc > 3 ? argv[3] : NULL);
    if (strcmp(c, "idle-pool") == 0) return idle_pool();
    fprintf(stderr, "usage: process CASE [ARG]\n");
    return 2;
}
