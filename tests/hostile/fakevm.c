// SPDX-License-Identifier: BSD-2-Clause
/* fakevm.c - a fake sqvm for the hostile tier (tests/hostile.sh): it carries the squeak
 * provider's USDT sites (the VM's own generated header, so semaphores and argument types
 * match) and an sqvm_debug_offsets block that lies, one lie per --mode:
 *   start-flood   fire vm__start 10,000 times (--count N, or --forever) in a loop
 *   bad-offsets   frame_ip 32 MiB past a 4 KiB stack, offsets past every bound, a size
 *                 that wraps
 *   loop-chain    a frame whose caller is itself; its method points into unmapped memory
 *   flip          a thread flips current_process between two processes under the reader
 *   names         class/method names with ESC [ 2J, BEL, C1 0x9b, invalid UTF-8, no NUL
 * Every mode prints "ready PID" and then runs until killed (start-flood: until its count
 * is done, then it sleeps too, unless --exit). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "debug_offsets.h"
#include "squeak_probes.h"

__attribute__((section(".probes"), aligned(64))) struct squeak_semaphores squeak_semaphores = {0};

/* Writable, not const: each mode fills in its lie before the first probe fires. */
__attribute__((used, visibility("default"))) SqDebugOffsets sqvm_debug_offsets = {
    .magic = SQVM_DEBUG_MAGIC,
    .version = SQVM_DEBUG_VERSION,
    .size = sizeof(SqDebugOffsets),
};

/* A fake Process and Frame: plain words, laid out by the lying offsets below. */
static uint64_t process_a[16], process_b[16];
static uint64_t frame[16];
static uint64_t stack_mem[512]; /* 4096 bytes */
static void *current_process;
static uint32_t class_count = 3;
static char hostile_name[64] = "Evil\x1b[2J\x07\x9b\xff\xfe" "Class";
static char *class_row[3];
static void *class_table = class_row;

static void common_offsets(void)
{
    SqDebugOffsets *d = &sqvm_debug_offsets;
    d->current_process = (uint64_t)(uintptr_t)&current_process;
    d->class_table = (uint64_t)(uintptr_t)&class_table;
    d->class_count = (uint64_t)(uintptr_t)&class_count;
    d->process_fp = 0;
    d->process_stack_base = 8;
    d->process_stack_limit = 16;
    d->frame_caller = 0;
    d->frame_method = 8;
    d->frame_ip = 16;
    d->frame_self = 24;
    d->frame_closure = 32;
    d->method_print_name = 0;
    d->class_name = 0;
    d->value_tag_mask = 3;
    d->value_int_mask = 1;
    d->value_float_tag = 2;
    process_a[0] = (uint64_t)(uintptr_t)frame;
    process_a[1] = (uint64_t)(uintptr_t)stack_mem;
    process_a[2] = (uint64_t)(uintptr_t)(stack_mem + 512);
    memcpy(process_b, process_a, sizeof process_a);
    current_process = process_a;
}

static void *flipper(void *arg)
{
    (void)arg;
    for (;;) {
        current_process = current_process == (void *)process_a ? (void *)process_b : (void *)process_a;
        process_b[0] = process_b[0] ? 0 : (uint64_t)0xdead0000;
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: fakevm --mode start-flood|bad-offsets|loop-chain|flip|names "
                    "[--count N] [--forever] [--exit]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = NULL;
    long count = 10000;
    int forever = 0, exit_after = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atol(argv[++i]);
        else if (!strcmp(argv[i], "--forever")) forever = 1;
        else if (!strcmp(argv[i], "--exit")) exit_after = 1;
        else return usage();
    }
    if (!mode) return usage();
    common_offsets();
    SqDebugOffsets *d = &sqvm_debug_offsets;
    if (!strcmp(mode, "start-flood")) {
        /* offsets stay sane: the flood itself is the abuse */
    } else if (!strcmp(mode, "bad-offsets")) {
        d->frame_ip = 32u << 20;          /* review finding 1: past a 4096-byte stack */
        d->frame_method = 0xfffffff8u;    /* wraps any base it is added to */
        d->process_fp = 0xfffffff0u;
        d->method_print_name = 0x7fffffffu;
        d->size = 0xffffffffu;            /* a size that wraps */
    } else if (!strcmp(mode, "loop-chain")) {
        frame[0] = (uint64_t)(uintptr_t)frame; /* caller: itself */
        void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(gone, 4096);
        frame[1] = (uint64_t)(uintptr_t)gone;  /* method: unmapped */
        frame[2] = (uint64_t)(uintptr_t)gone;
    } else if (!strcmp(mode, "flip")) {
        pthread_t t;
        pthread_create(&t, NULL, flipper, NULL);
    } else if (!strcmp(mode, "names")) {
        memset(hostile_name + strlen(hostile_name), 'A', sizeof hostile_name - strlen(hostile_name));
        for (int i = 0; i < 3; i++) class_row[i] = hostile_name; /* no terminator */
        frame[1] = (uint64_t)(uintptr_t)hostile_name;
    } else {
        return usage();
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(mode, "start-flood")) {
        for (long n = 0; forever || n < count; n++) {
            SQUEAK_VM_START("fake", &sqvm_debug_offsets);
            if (!forever && n % 1000 == 999) usleep(1000);
        }
        if (exit_after) return 0;
    }
    for (;;) {
#define NAME hostile_name
#include "sites.h"
        usleep(10000);
    }
}
