/* sqprof_vm.c - reading sqvm processes from outside; see sqprof_vm.h. */
#define _GNU_SOURCE
#include "sqprof_vm.h"

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
#include <sys/uio.h>
#include <unistd.h>

#define SYMBOL "sqvm_debug_offsets"

/* ===================================================================== */
/* The executable: symbol and first load address, cached per file        */
/* ===================================================================== */

struct elf_info {
	dev_t dev;
	ino_t ino;
	bool has_symbol;
	uint64_t symbol;		/* link-time address of sqvm_debug_offsets */
	uint64_t first_vaddr;		/* of the first PT_LOAD, page-aligned */
};

static struct elf_info *elf_cache;
static size_t elf_cached, elf_cap;

bool sqp_elf_walk(const char *path, sqp_elf_phdr_fn phdr, sqp_elf_sym_fn sym, void *ctx)
{
	Elf_Scn *scn = NULL;
	size_t nphdr;
	bool ok = false, more = true;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
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
	sqp_elf_walk(path, info_phdr, info_sym, info);
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

bool sqp_is_sqvm_file(const char *path)
{
	const struct elf_info *info = elf_info_of(path);

	return info && info->has_symbol;
}

/* ===================================================================== */
/* The live process                                                      */
/* ===================================================================== */

bool sqp_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
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

int sqp_vm_open(pid_t pid, struct sqp_vm *vm)
{
	const struct elf_info *info;
	char link[64];
	struct stat st;
	uint64_t base;
	ssize_t n;

	memset(vm, 0, sizeof(*vm));
	vm->pid = pid;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return SQP_VM_GONE;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, vm->exe, sizeof(vm->exe) - 1);
	if (n < 0 || stat(link, &st) != 0)
		return errno == ENOENT || errno == ESRCH ? (kill(pid, 0) != 0 ? SQP_VM_GONE : SQP_VM_NOT_SQVM)
							 : SQP_VM_NO_ACCESS;
	vm->exe[n] = 0;
	vm->dev = st.st_dev;
	vm->ino = st.st_ino;
	info = elf_info_of(link);
	if (!info || !info->has_symbol)
		return SQP_VM_NOT_SQVM;
	if (!load_base(pid, st.st_ino, &base))
		return kill(pid, 0) != 0 ? SQP_VM_GONE : SQP_VM_NO_ACCESS;
	vm->bias = base - info->first_vaddr;
	if (!sqp_read_mem(pid, info->symbol + vm->bias, &vm->d, sizeof(vm->d)))
		return errno == ESRCH ? SQP_VM_GONE : SQP_VM_NO_ACCESS;
	if (memcmp(vm->d.magic, SQVM_DEBUG_MAGIC, sizeof(SQVM_DEBUG_MAGIC)) != 0 ||
	    vm->d.version != SQVM_DEBUG_VERSION || vm->d.size < sizeof(SqDebugOffsets))
		return SQP_VM_VERSION;
	/* A PIE process's addresses are relocated by its dynamic loader, after exec: until
	 * then they are link-time addresses, below the load bias. */
	if (vm->bias && vm->d.current_process < vm->bias)
		return SQP_VM_STARTING;
	return SQP_VM_OK;
}

const char *sqp_vm_strerror(int err)
{
	switch (err) {
	case SQP_VM_GONE:
		return "no such process";
	case SQP_VM_NOT_SQVM:
		return "not an sqvm process: its executable has no " SYMBOL " symbol";
	case SQP_VM_NO_ACCESS:
		return "cannot read its executable or memory";
	case SQP_VM_VERSION:
		return "its " SYMBOL " has a version this tool does not know (a newer or older VM)";
	case SQP_VM_STARTING:
		return "the VM is still starting (not yet relocated by the dynamic loader)";
	default:
		return "unknown error";
	}
}

bool sqp_method_name(const struct sqp_vm *vm, uint64_t method, char *buf, size_t len)
{
	uint64_t str = 0;
	size_t got = 0;

	buf[0] = 0;
	if (!sqp_read_mem(vm->pid, method + vm->d.method_print_name, &str, sizeof(str)) || !str)
		return false;
	/* In pieces: the string may end just before an unmapped page. */
	while (got + 1 < len) {
		size_t chunk = len - 1 - got < 64 ? len - 1 - got : 64;
		if (!sqp_read_mem(vm->pid, str + got, buf + got, chunk))
			break;
		buf[got + chunk] = 0;
		if (memchr(buf + got, 0, chunk))
			return buf[0] != 0;
		got += chunk;
	}
	buf[got] = 0;
	return got > 0;
}

int sqp_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino)
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
		if (only_ino ? st.st_dev == only_dev && st.st_ino == only_ino : sqp_is_sqvm_file(link))
			pids[n++] = pid;
	}
	closedir(proc);
	return n;
}

void sqp_comm(pid_t pid, char *buf, size_t len)
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
