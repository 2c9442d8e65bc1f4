"""C helper giving each thread a reusable scratch block for stencil temporaries.

Allocating the temporaries on every call costs more than it seems: blocks above glibc's mmap
threshold come back from the kernel as fresh pages, so every call page-faults through them
(measured: ~160 faults per hdiff call at 256x256x64, and most of a small call's time). A block
kept per thread, grown when a call needs more, is faulted in once. It lives in thread-specific
storage with a destructor, so a thread that exits frees its block; when no thread-specific key
can be created (a process has a limited number), calls fall back to a block of their own.

The definitions (``SCRATCH_SUPPORT_C``) are compiled once, into the support object every
program links (``backends.c.support``); a unit that uses them holds only the declarations
(``SCRATCH_C``), so it parses neither ``<pthread.h>`` nor ``<stdlib.h>``.
"""

from __future__ import annotations

__all__ = ["SCRATCH_C", "SCRATCH_SUPPORT_C", "agree_on_blocks"]

#: What a unit that uses scratch blocks declares (the support object defines them).
SCRATCH_C = """
#include <stddef.h>
/* At least `bytes` of 64-byte aligned scratch (NULL when out of memory). With *owned == 0 the
   block belongs to the calling thread and is reused by its next calls; with *owned == 1 the
   caller must release it with sf_scratch_free. */
__attribute__((visibility("hidden"))) char* sf_scratch(size_t bytes, int* owned);
__attribute__((visibility("hidden"))) void sf_scratch_free(char* block);
static inline size_t sf_round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }
"""

#: The definitions, in the support object.
SCRATCH_SUPPORT_C = """
#include <pthread.h>
#include <stdlib.h>
typedef struct { char* data; size_t capacity; } sf_scratch_block;
static pthread_key_t sf_scratch_key;
static int sf_scratch_key_ready = 0;
static pthread_once_t sf_scratch_once = PTHREAD_ONCE_INIT;

static void sf_scratch_release(void* block) {
    free(((sf_scratch_block*)block)->data);
    free(block);
}
static void sf_scratch_create_key(void) {
    sf_scratch_key_ready = pthread_key_create(&sf_scratch_key, sf_scratch_release) == 0;
}

char* sf_scratch(size_t bytes, int* owned) {
    void* fresh = NULL;
    *owned = 0;
    if (bytes == 0) bytes = 64;
    pthread_once(&sf_scratch_once, sf_scratch_create_key);
    sf_scratch_block* block = sf_scratch_key_ready ? (sf_scratch_block*)pthread_getspecific(sf_scratch_key) : NULL;
    if (sf_scratch_key_ready && block == NULL) {
        block = (sf_scratch_block*)calloc(1, sizeof(sf_scratch_block));
        if (block != NULL && pthread_setspecific(sf_scratch_key, block) != 0) { free(block); block = NULL; }
    }
    if (block == NULL) {
        *owned = 1;
        return posix_memalign(&fresh, 64, bytes) == 0 ? (char*)fresh : NULL;
    }
    if (block->capacity < bytes) {
        free(block->data);
        block->data = NULL;
        block->capacity = 0;
        if (posix_memalign(&fresh, 64, bytes) != 0) return NULL;
        block->data = (char*)fresh;
        block->capacity = bytes;
    }
    return block->data;
}

void sf_scratch_free(char* block) { free(block); }
"""


def agree_on_blocks(indent: str, no_block: str) -> list[str]:
    """The C lines, at ``indent``, with which the threads of a parallel region agree whether
    each got its scratch block (``no_block``: the C condition that this thread did not); they
    open ``if (!failed_now) {``, which the caller closes around the work-sharing loop.

    Every thread of the team must reach the work-sharing loop or none may (OpenMP's rule):
    hence one verdict for all, read after a barrier.
    """
    return [
        f"{indent}if ({no_block}) {{",
        f"{indent}    #pragma omp atomic write",
        f"{indent}    failed = 1;",
        f"{indent}}}",
        f"{indent}#pragma omp barrier",
        f"{indent}int failed_now;",
        f"{indent}#pragma omp atomic read",
        f"{indent}failed_now = failed;",
        f"{indent}if (!failed_now) {{",
    ]
