// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_elf.c - libFuzzer target: the tools' reading of a VM binary, on arbitrary bytes.
 * The tools run as root and open binaries that a container's owner controls (through
 * /proc/PID/root), so every ELF structure, note and size in them is untrusted. The input
 * is written to a memory file and read as the tools read a target (tools/sqelf.h): its
 * squeak USDT notes (sq_elf_probes) and its symbols, program headers and code
 * relocations (the walk that finds sqvm_debug_offsets, and a BPF object's maps). A crash
 * or a sanitizer report is a finding. */
#define _GNU_SOURCE
#include "sqelf.h"
#include "fuzz_watchdog.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void on_phdr(void *ctx, const GElf_Phdr *phdr) { (void)phdr; ++*(int *)ctx; }
static bool on_sym(void *ctx, const GElf_Sym *sym, const char *name)
{
    (void)sym;
    if (name && strcmp(name, "sqvm_debug_offsets") == 0) ++*(int *)ctx;
    return true;
}
static void on_rel(void *ctx, const char *sym) { (void)sym; ++*(int *)ctx; }
static const struct sq_elf_visitor visitor = { .phdr = on_phdr, .sym = on_sym, .code_rel = on_rel };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-elf", 0);
        if (fd < 0) return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size) return 0;
    fuzz_watchdog_arm(5000);
    struct sq_probes probes;
    memset(&probes, 0, sizeof probes);
    sq_elf_probes(path, &probes);
    int n = 0;
    sq_elf_walk(path, &visitor, &n);
    fuzz_watchdog_disarm();
    return 0;
}
