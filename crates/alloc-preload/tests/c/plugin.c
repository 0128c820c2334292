/* A plugin as JNI libraries and Python extension modules often are: its constructor
 * starts a thread and waits for it while dlopen runs the constructors. The thread's
 * first allocations happen then (small blocks, a large one and a big one).
 * tests/c/process.c loads it ("dlopen-thread"). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int plugin_thread_ran;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        unsigned char *p = malloc((size_t)i + 100);
        if (!p) return (void *)1;
        memset(p, 1, (size_t)i + 100);
        free(p);
    }
    void *large = malloc(1 << 20);
    void *big = malloc(8 << 20);
    if (!large || !big) return (void *)1;
    free(large);
    free(big);
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    pthread_t t;
    void *r = (void *)1;
    if (pthread_create(&t, NULL, work, NULL) == 0 && pthread_join(t, &r) == 0 && r == NULL)
        plugin_thread_ran = 1;
}
