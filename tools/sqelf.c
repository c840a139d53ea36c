// SPDX-License-Identifier: BSD-2-Clause
/* sqelf.c - the tools' one ELF reader; see sqelf.h. */
#define _GNU_SOURCE
#include "sqelf.h"

#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYMBOL "sqvm_debug_offsets"

/* ===================================================================== */
/* The walk                                                              */
/* ===================================================================== */

static void walk_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const struct sq_elf_visitor *v,
			 void *ctx, bool *more)
{
	Elf_Data *data = elf_getdata(scn, NULL);

	if (!data || !sh->sh_entsize)
		return;
	for (size_t k = 0; *more && k < sh->sh_size / sh->sh_entsize; k++) {
		GElf_Sym s;
		const char *name;
		if (!gelf_getsym(data, (int)k, &s))
			break;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (name)
			*more = v->sym(ctx, &s, name);
	}
}

static void walk_notes(Elf_Scn *scn, const char *section, int addr_size, const struct sq_elf_visitor *v,
		       void *ctx)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	/* gelf_getnote checks that each note's name and description lie in the section */
	while (data && (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		v->note(ctx, section, &nhdr, (const char *)data->d_buf + name_off,
			(const char *)data->d_buf + desc_off, addr_size);
		off = next;
	}
}

/* The symbols the relocations of a code section refer to (a BPF object's maps). */
static void walk_code_rels(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const struct sq_elf_visitor *v,
			   void *ctx)
{
	Elf_Scn *target = elf_getscn(elf, sh->sh_info), *symscn = elf_getscn(elf, sh->sh_link);
	Elf_Data *data = elf_getdata(scn, NULL), *syms;
	GElf_Shdr tsh, ssh;

	if (!data || !target || !symscn || !gelf_getshdr(target, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR) ||
	    !gelf_getshdr(symscn, &ssh) || !(syms = elf_getdata(symscn, NULL)) || !sh->sh_entsize)
		return;
	for (size_t k = 0; k < sh->sh_size / sh->sh_entsize; k++) {
		GElf_Rel rel;
		GElf_Sym sym;
		const char *name;
		if (!gelf_getrel(data, (int)k, &rel))
			break;
		if (gelf_getsym(syms, (int)GELF_R_SYM(rel.r_info), &sym) &&
		    (name = elf_strptr(elf, ssh.sh_link, sym.st_name)))
			v->code_rel(ctx, name);
	}
}

static void walk(Elf *elf, size_t nphdr, size_t shstrndx, const struct sq_elf_visitor *v, void *ctx)
{
	int addr_size = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	bool more = v->sym != NULL;
	Elf_Scn *scn = NULL;

	for (size_t i = 0; v->phdr && i < nphdr; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph))
			v->phdr(ctx, &ph);
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (more && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			walk_symbols(elf, scn, &sh, v, ctx, &more);
		else if (v->note && sh.sh_type == SHT_NOTE && (name = elf_strptr(elf, shstrndx, sh.sh_name)))
			walk_notes(scn, name, addr_size, v, ctx);
		else if (v->code_rel && sh.sh_type == SHT_REL)
			walk_code_rels(elf, scn, &sh, v, ctx);
	}
}

/* Walks elf if it is an ELF file at all. */
static int walk_elf(Elf *elf, const struct sq_elf_visitor *v, void *ctx)
{
	size_t nphdr, shstrndx;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nphdr) ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	walk(elf, nphdr, shstrndx, v, ctx);
	return 0;
}

/* The REST of "/proc/PID/root/REST" (pid in *pid), or NULL. */
static const char *in_root(const char *path, long *pid)
{
	char *end;

	if (strncmp(path, "/proc/", 6) != 0)
		return NULL;
	*pid = strtol(path + 6, &end, 10);
	if (end == path + 6 || *pid <= 0 || strncmp(end, "/root/", 6) != 0)
		return NULL;
	return end + 6;
}

static int open_in_root(long pid, const char *rest, int flags)
{
	struct open_how how = { .flags = (uint64_t)flags, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[64];
	int dfd, fd;

	snprintf(root, sizeof(root), "/proc/%ld/root", pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, rest, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dfd, rest, flags | O_NOFOLLOW);
	int saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

int sq_elf_open(const char *path)
{
	int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
	const char *rest;
	struct stat st;
	long pid;
	int fd;

	rest = in_root(path, &pid);
	fd = rest ? open_in_root(pid, rest, flags) : open(path, flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int sq_elf_walk(const char *path, const struct sq_elf_visitor *v, void *ctx)
{
	struct stat st;
	Elf *elf;
	int fd, err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = sq_elf_open(path);	/* a FIFO a target names must not block us */
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0 || st.st_size > SQ_MAX_BINARY_SIZE) {
		close(fd);
		return -ENOEXEC;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);	/* read, not mapped: see sqelf.h */
	err = walk_elf(elf, v, ctx);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int sq_elf_walk_image(const void *image, size_t size, const struct sq_elf_visitor *v, void *ctx)
{
	/* libelf may convert a memory image in place: give it an aligned, writable copy */
	char *copy = malloc(size);
	Elf *elf;
	int err;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(copy);
		return -EINVAL;
	}
	elf = elf_memory(copy, size);
	err = walk_elf(elf, v, ctx);
	if (elf)
		elf_end(elf);
	free(copy);
	return err;
}

/* ===================================================================== */
/* USDT probes                                                           */
/* ===================================================================== */

/* One stapsdt note's description: three addresses, then provider, name, arguments. */
static void probe_note(void *ctx, const char *section, const GElf_Nhdr *nhdr, const char *owner,
		       const char *desc, int addr_size)
{
	struct sq_probes *out = ctx;
	size_t len = nhdr->n_descsz, off = 3 * (size_t)addr_size;
	const char *provider, *name;

	if (strcmp(section, ".note.stapsdt") != 0 || nhdr->n_type != 3 || nhdr->n_namesz != 8 ||
	    memcmp(owner, "stapsdt", 8) != 0 || len <= off)
		return;
	provider = desc + off;
	off += strnlen(provider, len - off) + 1;
	if (off >= len)
		return;
	name = desc + off;
	if (strnlen(name, len - off) == len - off || strcmp(provider, SQ_PROVIDER) != 0)
		return;
	out->nsites++;
	for (int i = 0; i < out->nprobes; i++)
		if (strcmp(out->probe[i].name, name) == 0) {
			out->probe[i].sites++;
			return;
		}
	if (out->nprobes < SQ_MAX_PROBES) {
		snprintf(out->probe[out->nprobes].name, sizeof(out->probe[0].name), "%s", name);
		out->probe[out->nprobes++].sites = 1;
	}
}

int sq_elf_probes(const char *path, struct sq_probes *out)
{
	static const struct sq_elf_visitor v = { .note = probe_note };

	memset(out, 0, sizeof(*out));
	return sq_elf_walk(path, &v, out);
}

/* ===================================================================== */
/* The debug-offsets symbol, cached per file                             */
/* ===================================================================== */

static struct sq_elf_vm *cache;
static size_t cached, cache_cap;

static void vm_phdr(void *ctx, const GElf_Phdr *ph)
{
	struct sq_elf_vm *info = ctx;

	if (ph->p_type == PT_LOAD && (ph->p_vaddr & ~0xfffULL) < info->first_vaddr)
		info->first_vaddr = ph->p_vaddr & ~0xfffULL;
}

static bool vm_sym(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct sq_elf_vm *info = ctx;

	if (strcmp(name, SYMBOL) != 0 || !sym->st_value)
		return true;
	info->symbol = sym->st_value;
	info->has_symbol = true;
	return false;
}

const struct sq_elf_vm *sq_elf_vm(const char *path)
{
	static const struct sq_elf_visitor v = { .phdr = vm_phdr, .sym = vm_sym };
	struct sq_elf_vm *info;
	struct stat st;

	if (stat(path, &st) != 0)
		return NULL;
	for (size_t i = 0; i < cached; i++)
		if (cache[i].dev == st.st_dev && cache[i].ino == st.st_ino)
			return &cache[i];
	if (cached == cache_cap) {
		size_t cap = cache_cap ? 2 * cache_cap : 32;
		struct sq_elf_vm *grown = realloc(cache, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		cache = grown;
		cache_cap = cap;
	}
	info = &cache[cached++];
	memset(info, 0, sizeof(*info));
	info->dev = st.st_dev;
	info->ino = st.st_ino;
	info->first_vaddr = UINT64_MAX;
	info->err = sq_elf_walk(path, &v, info);
	return info;
}

bool sq_elf_is_sqvm(const char *path)
{
	const struct sq_elf_vm *info = sq_elf_vm(path);

	return info && info->has_symbol;
}
