/* sqstack.c - prints the Smalltalk stack of a running sqvm, read from outside the process
 * through the sqvm_debug_offsets structure (like jstack or py-spy dump). */
#define _GNU_SOURCE
#include "debug_offsets.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <signal.h>

static const char usage[] =
    "Usage: sqstack [-h] [--version] [-n MAXFRAMES] -p PID\n"
    "Print the Smalltalk stack of the running sqvm process PID, innermost frame first,\n"
    "in the format of the VM's own backtraces. The process is not stopped: the stack\n"
    "is read while it runs (a frame may be missed if it returns meanwhile).\n"
    "\n"
    "Examples:\n"
    "  sqstack -p 1234          the active Smalltalk process's stack\n"
    "  sqstack -n 10 -p 1234    at most 10 frames\n";

static pid_t pid;

static bool rd(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static uint64_t rd_ptr(uint64_t addr)
{
    uint64_t v = 0;
    return rd(addr, &v, sizeof v) ? v : 0;
}

static void rd_str(uint64_t addr, char *buf, size_t n)
{
    buf[0] = 0;
    if (!addr) return;
    /* read in small pieces: a string may end just before an unmapped page */
    size_t got = 0;
    while (got + 1 < n) {
        size_t chunk = n - 1 - got < 64 ? n - 1 - got : 64;
        if (!rd(addr + got, buf + got, chunk)) break;
        buf[got + chunk] = 0;
        if (memchr(buf + got, 0, chunk)) return;
        got += chunk;
    }
    buf[got] = 0;
}

/* The link-time address of a symbol in an ELF64 file (from .symtab or .dynsym). */
static uint64_t elf_symbol(const char *path, const char *name, uint64_t *firstLoadVaddr)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) < 0) { close(fd); return 0; }
    unsigned char *img = malloc((size_t)st.st_size);
    if (!img || read(fd, img, (size_t)st.st_size) != st.st_size) { close(fd); free(img); return 0; }
    close(fd);
    uint64_t result = 0;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) goto out;
    Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
    *firstLoadVaddr = UINT64_MAX;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < *firstLoadVaddr) *firstLoadVaddr = ph[i].p_vaddr & ~0xfffull;
    Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !result; i++) {
        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) continue;
        Elf64_Sym *syms = (Elf64_Sym *)(img + sh[i].sh_offset);
        const char *strs = (const char *)(img + sh[sh[i].sh_link].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++)
            if (!strcmp(strs + syms[k].st_name, name)) { result = syms[k].st_value; break; }
    }
out:
    free(img);
    return result;
}

/* Where the executable's first mapping starts: the load bias of a PIE binary. */
static uint64_t load_base(void)
{
    char path[64], exe[4096], line[4600];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n < 0) return 0;
    exe[n] = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    uint64_t base = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, off;
        char file[4096] = "";
        if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %4095s", &lo, &off, file) >= 2 && !strcmp(file, exe) && off == 0) {
            base = lo;
            break;
        }
    }
    fclose(f);
    return base;
}

int main(int argc, char **argv)
{
    int maxFrames = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(argv[i], "--version")) { puts("sqstack 0.1.0"); return 0; }
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) pid = (pid_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) maxFrames = atoi(argv[++i]);
        else { fputs(usage, stderr); return 2; }
    }
    if (pid <= 0) { fputs(usage, stderr); return 2; }
    char exe[64];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    if (kill(pid, 0) != 0 && errno == ESRCH) { fprintf(stderr, "sqstack: no process with PID %d\n", (int)pid); return 1; }
    uint64_t firstVaddr = 0;
    uint64_t sym = elf_symbol(exe, "sqvm_debug_offsets", &firstVaddr);
    if (!sym) { fprintf(stderr, "sqstack: PID %d is not an sqvm (no sqvm_debug_offsets symbol)\n", (int)pid); return 1; }
    uint64_t bias = load_base() - firstVaddr;
    SqDebugOffsets d;
    memset(&d, 0, sizeof d);
    if (!rd(sym + bias, &d, sizeof d)) {
        fprintf(stderr, "sqstack: cannot read PID %d's memory: %s (are you root?)\n", (int)pid, strerror(errno));
        return 1;
    }
    if (memcmp(d.magic, SQVM_DEBUG_MAGIC, 8) != 0 || d.version != SQVM_DEBUG_VERSION) {
        fprintf(stderr, "sqstack: PID %d: unsupported debug offsets (version %u)\n", (int)pid, d.version);
        return 1;
    }
    uint64_t proc = rd_ptr(d.current_process); /* relocated by the loader: a run-time address */
    uint64_t fp = proc ? rd_ptr(proc + d.process_fp) : 0;
    if (!fp) { fprintf(stderr, "sqstack: PID %d has no running Smalltalk process\n", (int)pid); return 1; }
    int frames = 0;
    while (fp && frames < maxFrames) {
        uint64_t method = rd_ptr(fp + d.frame_method);
        if (!method) break; /* the bottom frame */
        char name[512], path[512];
        rd_str(rd_ptr(method + d.method_print_name), name, sizeof name);
        rd_str(rd_ptr(method + d.method_source_path), path, sizeof path);
        uint64_t ip = rd_ptr(fp + d.frame_ip), code = rd_ptr(method + d.method_code);
        uint32_t line = 0;
        rd(method + d.method_line, &line, sizeof line);
        if (code && ip > code && ip - code < (1u << 24)) {
            uint16_t l = 0;
            if (rd(rd_ptr(method + d.method_lines) + 2 * (ip - 1 - code), &l, sizeof l)) line = l;
        }
        const char *base = strrchr(path, '/');
        printf("    at %s (%s:%u)\n", name, base ? base + 1 : path, line);
        fp = rd_ptr(fp + d.frame_caller);
        frames++;
    }
    return 0;
}
