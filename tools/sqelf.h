// SPDX-License-Identifier: BSD-2-Clause
/* sqelf.h - the tools' one ELF reader (libelf): a binary's program headers, symbols and
 * notes, and what the tools ask of them: the squeak USDT probes a binary carries, and
 * whether (and where) it has the sqvm_debug_offsets symbol.
 *
 * Every file is untrusted (a container's owner controls its bytes and may truncate it
 * meanwhile): it is opened once, accepted only as a regular file of at most
 * SQ_MAX_BINARY_SIZE, and read with read(2), never mapped; every length in it is checked
 * before use. fuzz/fuzz_elf.c feeds it arbitrary bytes. */
#ifndef SQELF_H
#define SQELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest binary the tools read (an sqvm is about 1 MB). */
#define SQ_MAX_BINARY_SIZE ((off_t)1 << 30)

#define SQ_PROVIDER "squeak"
#define SQ_MAX_PROBES 64

/* What the walk reports, each callback optional: every program header; every symbol of
 * the symbol tables (until sym answers false); every note of every note section; the
 * symbol every relocation of code (an executable section) refers to. */
struct sq_elf_visitor {
	void (*phdr)(void *ctx, const GElf_Phdr *phdr);
	bool (*sym)(void *ctx, const GElf_Sym *sym, const char *name);
	void (*note)(void *ctx, const char *section, const GElf_Nhdr *nhdr, const char *owner,
		     const char *desc, int addr_size);
	void (*code_rel)(void *ctx, const char *symbol);
};

/* Walks the ELF file at path. 0, or -errno: the open's, or ENOEXEC (not a regular file
 * of sane size, or not ELF). */
int sq_elf_walk(const char *path, const struct sq_elf_visitor *v, void *ctx);

/* The same for an ELF image in memory (a skeleton's BPF object). */
int sq_elf_walk_image(const void *image, size_t size, const struct sq_elf_visitor *v, void *ctx);

/* The squeak probes found in one binary: name and number of sites of each. */
struct sq_probes {
	int nprobes;
	int nsites;
	struct {
		char name[64];
		int sites;
	} probe[SQ_MAX_PROBES];
};

/* Reads the squeak USDT notes (.note.stapsdt) of an ELF file; 0, or as sq_elf_walk. */
int sq_elf_probes(const char *path, struct sq_probes *out);

/* What reading a process that runs this executable needs: the link-time address of
 * sqvm_debug_offsets and the first load address. Read once per file (device, inode). */
struct sq_elf_vm {
	dev_t dev;
	ino_t ino;
	int err;			/* the walk's error: the file could not be read */
	bool has_symbol;		/* sqvm_debug_offsets is defined */
	uint64_t symbol;		/* its link-time address */
	uint64_t first_vaddr;		/* of the first PT_LOAD, page-aligned */
};

/* NULL if path cannot be stat'ed (or out of memory). */
const struct sq_elf_vm *sq_elf_vm(const char *path);

/* Does the executable at path carry sqvm_debug_offsets? */
bool sq_elf_is_sqvm(const char *path);

/* Opens a file a target names, read-only, never blocking and never leaving the target's
 * root: a path /proc/PID/root/REST is resolved inside that root (openat2 RESOLVE_IN_ROOT|
 * RESOLVE_NO_MAGICLINKS: an absolute symlink of the container stays in it; without
 * openat2, the last component is not followed); any other path as is (so /proc/PID/exe
 * and /proc/self/fd/N still work). O_NONBLOCK: a FIFO or device at the name cannot stop
 * the open. Answers the descriptor (O_NONBLOCK cleared) of a regular file, or -errno
 * (-EINVAL: not a regular file). */
int sq_elf_open(const char *path);

#endif
