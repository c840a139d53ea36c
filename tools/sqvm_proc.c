// SPDX-License-Identifier: BSD-2-Clause
/* sqvm_proc.c - reading sqvm processes from outside; see sqvm_proc.h. */
#define _GNU_SOURCE
#include "sqvm_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SYMBOL "sqvm_debug_offsets"

/* ===================================================================== */
/* The executable: symbol and first load address, cached per file        */
/* ===================================================================== */

struct elf_info {
	dev_t dev;
	ino_t ino;
	bool has_symbol;
	int open_errno;			/* the file could not be read: why */
	uint64_t symbol;		/* link-time address of sqvm_debug_offsets */
	uint64_t first_vaddr;		/* of the first PT_LOAD, page-aligned */
};

static struct elf_info *elf_cache;
static size_t elf_cached, elf_cap;

bool sq_elf_walk(const char *path, sq_elf_phdr_fn phdr, sq_elf_sym_fn sym, void *ctx)
{
	Elf_Scn *scn = NULL;
	size_t nphdr;
	bool ok = false, more = true;
	struct stat st;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	/* untrusted (a container's binary): a regular file of sane size, read, not mapped */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SQ_MAX_BINARY_SIZE) {
		close(fd);
		return false;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nphdr))
		goto out;
	ok = true;
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph))
			phdr(ctx, &ph);
	}
	while (more && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; more && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;
			const char *name;
			if (!gelf_getsym(data, (int)k, &s))
				break;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (name)
				more = sym(ctx, &s, name);
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ok;
}

static void info_phdr(void *ctx, const void *p)
{
	struct elf_info *info = ctx;
	const GElf_Phdr *ph = p;
	if (ph->p_type == PT_LOAD && (ph->p_vaddr & ~0xfffULL) < info->first_vaddr)
		info->first_vaddr = ph->p_vaddr & ~0xfffULL;
}

static bool info_sym(void *ctx, const void *s, const char *name)
{
	struct elf_info *info = ctx;
	const GElf_Sym *sym = s;
	if (strcmp(name, SYMBOL) != 0 || !sym->st_value)
		return true;
	info->symbol = sym->st_value;
	info->has_symbol = true;
	return false;
}

/* Reads the symbol and the first load address from an ELF file. */
static void read_elf(const char *path, struct elf_info *info)
{
	info->has_symbol = false;
	info->first_vaddr = UINT64_MAX;
	errno = 0;
	if (!sq_elf_walk(path, info_phdr, info_sym, info))
		info->open_errno = errno;
}

static const struct elf_info *elf_info_of(const char *path)
{
	struct elf_info *info;
	struct stat st;

	if (stat(path, &st) != 0)
		return NULL;
	for (size_t i = 0; i < elf_cached; i++)
		if (elf_cache[i].dev == st.st_dev && elf_cache[i].ino == st.st_ino)
			return &elf_cache[i];
	if (elf_cached == elf_cap) {
		size_t cap = elf_cap ? 2 * elf_cap : 32;
		struct elf_info *grown = realloc(elf_cache, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		elf_cache = grown;
		elf_cap = cap;
	}
	info = &elf_cache[elf_cached++];
	memset(info, 0, sizeof(*info));
	info->dev = st.st_dev;
	info->ino = st.st_ino;
	read_elf(path, info);
	return info;
}

bool sq_is_sqvm_file(const char *path)
{
	const struct elf_info *info = elf_info_of(path);

	return info && info->has_symbol;
}

/* ===================================================================== */
/* The live process                                                      */
/* ===================================================================== */

bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* Where the executable's mapping of file offset 0 starts, found by inode (the path in
 * maps is the one the process sees, which may not be ours). */
static bool load_base(pid_t pid, ino_t ino, uint64_t *base)
{
	char path[64], line[4608];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long lo, off, inode;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %llu", &lo, &off, &inode) == 3 &&
		    inode == (unsigned long long)ino && off == 0) {
			*base = lo;
			found = true;
		}
	}
	fclose(f);
	return found;
}

int sq_vm_open(pid_t pid, struct sq_vm *vm)
{
	const struct elf_info *info;
	char link[64];
	struct stat st;
	uint64_t base;
	ssize_t n;

	memset(vm, 0, sizeof(*vm));
	vm->pid = pid;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return SQ_VM_GONE;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, vm->exe, sizeof(vm->exe) - 1);
	if (n < 0 || stat(link, &st) != 0)
		return errno == ENOENT || errno == ESRCH ? (kill(pid, 0) != 0 ? SQ_VM_GONE : SQ_VM_NOT_SQVM)
							 : SQ_VM_NO_ACCESS;
	vm->exe[n] = 0;
	vm->dev = st.st_dev;
	vm->ino = st.st_ino;
	info = elf_info_of(link);
	if (info && (info->open_errno == EACCES || info->open_errno == EPERM)) {
		errno = info->open_errno;
		return SQ_VM_NO_ACCESS;
	}
	if (!info || !info->has_symbol)
		return SQ_VM_NOT_SQVM;
	if (!load_base(pid, st.st_ino, &base))
		return kill(pid, 0) != 0 ? SQ_VM_GONE : SQ_VM_NO_ACCESS;
	vm->bias = base - info->first_vaddr;
	vm->offsets_addr = info->symbol + vm->bias;
	if (!sq_read_mem(pid, vm->offsets_addr, &vm->d, sizeof(vm->d)))
		return errno == ESRCH ? SQ_VM_GONE : SQ_VM_NO_ACCESS;
	if (memcmp(vm->d.magic, SQVM_DEBUG_MAGIC, sizeof(SQVM_DEBUG_MAGIC)) != 0 ||
	    vm->d.version != SQVM_DEBUG_VERSION || vm->d.size < sizeof(SqDebugOffsets))
		return SQ_VM_VERSION;
	/* A PIE process's addresses are relocated by its dynamic loader, after exec: until
	 * then they are link-time addresses, below the load bias. */
	if (vm->bias && vm->d.current_process < vm->bias)
		return SQ_VM_STARTING;
	return SQ_VM_OK;
}

const char *sq_vm_strerror(int err)
{
	switch (err) {
	case SQ_VM_GONE:
		return "no such process";
	case SQ_VM_NOT_SQVM:
		return "not an sqvm process: its executable has no " SYMBOL " symbol";
	case SQ_VM_NO_ACCESS: {
		static char buf[200];
		int e = errno ? errno : EACCES;
		if (geteuid() == 0)	/* root too: a security module, another user namespace, ... */
			snprintf(buf, sizeof(buf), "cannot read its executable or memory: %s (denied even "
				 "to root: the process is protected from ptrace access)", strerror(e));
		else
			snprintf(buf, sizeof(buf), "cannot read its executable or memory: %s (reading "
				 "another user's process needs root or CAP_SYS_PTRACE)", strerror(e));
		return buf;
	}
	case SQ_VM_VERSION:
		return "its " SYMBOL " has a version this tool does not know (a newer or older VM)";
	case SQ_VM_STARTING:
		return "the VM is still starting (not yet relocated by the dynamic loader)";
	default:
		return "unknown error";
	}
}

bool sq_method_name(const struct sq_vm *vm, uint64_t method, char *buf, size_t len)
{
	uint64_t str = 0;
	size_t got = 0;

	buf[0] = 0;
	if (!sq_read_mem(vm->pid, method + vm->d.method_print_name, &str, sizeof(str)) || !str)
		return false;
	/* In pieces: the string may end just before an unmapped page. */
	while (got + 1 < len) {
		size_t chunk = len - 1 - got < 64 ? len - 1 - got : 64;
		if (!sq_read_mem(vm->pid, str + got, buf + got, chunk))
			break;
		buf[got + chunk] = 0;
		if (memchr(buf + got, 0, chunk))
			return buf[0] != 0;
		got += chunk;
	}
	buf[got] = 0;
	return got > 0;
}

int sq_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino)
{
	struct dirent *de;
	pid_t self = getpid();
	int n = 0;
	DIR *proc;

	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (n < max && (de = readdir(proc))) {
		char link[64];
		struct stat st;
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid == self)
			continue;
		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		if (stat(link, &st) != 0)
			continue;
		if (only_ino ? st.st_dev == only_dev && st.st_ino == only_ino : sq_is_sqvm_file(link))
			pids[n++] = pid;
	}
	closedir(proc);
	return n;
}

void sq_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* ===================================================================== */
/* Strings and stacks                                                    */
/* ===================================================================== */

int sq_read_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	buf[0] = 0;
	if (!addr || len == 0)
		return -1;
	/* In pieces: the string may end just before an unmapped page. */
	while (got + 1 < len) {
		size_t chunk = len - 1 - got < 64 ? len - 1 - got : 64;
		char *nul;
		if (!sq_read_mem(pid, addr + got, buf + got, chunk)) {
			buf[got] = 0;
			return -1;
		}
		buf[got + chunk] = 0;
		if ((nul = memchr(buf + got, 0, chunk)))
			return (int)(nul - buf);
		got += chunk;
	}
	buf[got] = 0;
	return -2;
}

static bool rd64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return sq_read_mem(pid, addr, v, sizeof(*v));
}

static bool rd32(pid_t pid, uint64_t addr, uint32_t *v)
{
	return sq_read_mem(pid, addr, v, sizeof(*v));
}

/* The top of the stack memory, copied in one process_vm_readv: a running VM changes its
 * top frames every few nanoseconds, so reading them field by field (a system call each)
 * would almost never see them whole. Frames below the window are read one by one: a
 * frame's fields do not change while it is on the stack. */
#define STACK_WINDOW (256 << 10)

struct stack_copy {
	pid_t pid;
	uint64_t lo, hi;
	unsigned char *buf;
};

static bool frame_rd64(const struct stack_copy *sc, uint64_t addr, uint64_t *v)
{
	if (addr >= sc->lo && addr + 8 <= sc->hi) {
		memcpy(v, sc->buf + (addr - sc->lo), 8);
		return true;
	}
	return rd64(sc->pid, addr, v);
}

/* One pass over the stack; SQ_STACK_TORN with why on a failed check. */
static int read_stack_once(const struct sq_vm *vm, struct sq_frame *frames, int max, int *n,
			   bool *truncated, char *why, size_t why_len, unsigned char *window)
{
	const SqDebugOffsets *d = &vm->d;
	pid_t pid = vm->pid;
	uint64_t proc, fp, base, limit, table, prev = 0, hdr;
	struct stack_copy sc = { .pid = pid, .buf = window };
	uint32_t nclasses;

	*n = 0;
	*truncated = false;
	if (!rd64(pid, d->current_process, &proc))
		return kill(pid, 0) ? SQ_STACK_GONE : (snprintf(why, why_len, "unreadable process pointer"), SQ_STACK_TORN);
	if (!proc)
		return SQ_STACK_NONE;
	if (!rd64(pid, proc + d->process_fp, &fp) || !rd64(pid, proc + d->process_stack_base, &base) ||
	    !rd64(pid, proc + d->process_stack_limit, &limit) || !rd64(pid, d->class_table, &table) ||
	    !rd32(pid, d->class_count, &nclasses)) {
		snprintf(why, why_len, "unreadable process or class table");
		return SQ_STACK_TORN;
	}
	if (!fp)
		return SQ_STACK_NONE;
	/* The frame header ends after its last field the reader uses. */
	hdr = d->frame_caller;
	if (d->frame_method > hdr) hdr = d->frame_method;
	if (d->frame_ip > hdr) hdr = d->frame_ip;
	hdr += 8;
	if (fp >= base && fp < limit + 512) {
		sc.hi = fp + hdr;
		sc.lo = fp - base > STACK_WINDOW - hdr ? sc.hi - STACK_WINDOW : base;
		struct iovec local = { window, sc.hi - sc.lo }, remote = { (void *)(uintptr_t)sc.lo, sc.hi - sc.lo };
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)(sc.hi - sc.lo))
			sc.lo = sc.hi = 0;
	}
	for (;;) {
		uint64_t method, caller, ip, holder, code, lines, name, path, entry;
		uint32_t index, codelen, line = 0;
		uint16_t flags = 0, l;
		struct sq_frame *f;

		if (fp < base || fp >= limit + 512 || (fp & 7) || (prev && fp >= prev)) {
			snprintf(why, why_len, "frame %#llx outside the stack or not below its callee",
				 (unsigned long long)fp);
			return SQ_STACK_TORN;
		}
		if (!frame_rd64(&sc, fp + d->frame_method, &method) || !frame_rd64(&sc, fp + d->frame_caller, &caller)) {
			snprintf(why, why_len, "unreadable frame");
			return SQ_STACK_TORN;
		}
		if (!method)
			return SQ_STACK_OK;	/* the bottom frame */
		if (*n == max) {
			*truncated = true;
			return SQ_STACK_OK;
		}
		/* Methods are native memory that never moves: read them directly. */
		if (!frame_rd64(&sc, fp + d->frame_ip, &ip) || !rd64(pid, method + d->method_holder, &holder) ||
		    !rd32(pid, holder + d->class_index, &index) || index >= nclasses ||
		    !rd64(pid, table + 8ULL * index, &entry) || entry != holder) {
			snprintf(why, why_len, "frame %#llx: %#llx is not a method", (unsigned long long)fp,
				 (unsigned long long)method);
			return SQ_STACK_TORN;
		}
		if (!rd64(pid, method + d->method_code, &code) || !rd32(pid, method + d->method_code_len, &codelen) ||
		    ip < code || ip > code + codelen) {
			snprintf(why, why_len, "frame %#llx: ip outside its method", (unsigned long long)fp);
			return SQ_STACK_TORN;
		}
		f = &frames[(*n)++];
		f->addr = fp;
		f->method = method;
		rd64(pid, method + d->method_print_name, &name);
		switch (sq_read_str(pid, name, f->name, sizeof(f->name))) {
		case -1:
			snprintf(why, why_len, "frame %#llx: unreadable method name", (unsigned long long)fp);
			return SQ_STACK_TORN;
		case -2:
			strcpy(f->name + sizeof(f->name) - 4, "...");
			break;
		}
		f->file[0] = 0;
		if (rd64(pid, method + d->method_source_path, &path) && path) {
			char full[PATH_MAX];
			const char *slash;
			sq_read_str(pid, path, full, sizeof(full));
			slash = strrchr(full, '/');
			slash = slash ? slash + 1 : full;
			memcpy(f->file, slash, strnlen(slash, sizeof(f->file) - 1));
			f->file[strnlen(slash, sizeof(f->file) - 1)] = 0;
		}
		rd32(pid, method + d->method_line, &line);
		if (ip > code && rd64(pid, method + d->method_lines, &lines) && lines &&
		    sq_read_mem(pid, lines + 2 * (ip - 1 - code), &l, sizeof(l)))
			line = l;
		f->line = line;
		sq_read_mem(pid, method + d->method_flags, &flags, sizeof(flags));
		f->block = (flags & d->method_flag_block) != 0;
		prev = fp;
		fp = caller;
	}
}

int sq_stack_read(const struct sq_vm *vm, struct sq_frame *frames, int max, int *nframes,
		  bool *truncated, int tries, char *why, size_t why_len)
{
	unsigned char *window = malloc(STACK_WINDOW);
	int err = SQ_STACK_TORN;

	if (!window) {
		snprintf(why, why_len, "out of memory");
		return SQ_STACK_TORN;
	}
	for (int i = 0; i < tries; i++) {
		err = read_stack_once(vm, frames, max, nframes, truncated, why, why_len, window);
		if (err != SQ_STACK_TORN)
			break;
	}
	if (err == SQ_STACK_TORN && tries > 1) {
		size_t len = strlen(why);
		snprintf(why + len, why_len - len, " (in each of %d reads)", tries);
	}
	free(window);
	return err;
}

int sq_pause(pid_t pid, struct sq_paused *p)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int err = 0;

	p->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((de = readdir(dir)) && p->n < (int)(sizeof(p->tids) / sizeof(p->tids[0]))) {
		pid_t tid;
		int status;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = atoi(de->d_name);
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
			if (errno == ESRCH)	/* the thread ended meanwhile */
				continue;
			err = -errno;
			break;
		}
		p->tids[p->n++] = tid;
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || waitpid(tid, &status, __WALL) != tid) {
			err = -errno;
			break;
		}
	}
	closedir(dir);
	if (err)
		sq_resume(p);
	return err;
}

void sq_resume(struct sq_paused *p)
{
	while (p->n > 0)
		ptrace(PTRACE_DETACH, p->tids[--p->n], 0, 0);
}
