// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_native.c - symbolizing kernel and C stacks for -K and -U; see sqprof_native.h. */
#define _GNU_SOURCE
#include "sqprof_native.h"
#include "sqelf.h"

#include <gelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#define MAX_FRAMES 127		/* PERF_MAX_STACK_DEPTH: the map's value size */

struct sym {
	uint64_t addr;
	uint64_t size;			/* 0: unknown (kernel symbols) */
	char *name;
};

struct symtab {
	struct sym *syms;
	size_t n, cap;
};

static int by_addr(const void *a, const void *b)
{
	uint64_t x = ((const struct sym *)a)->addr, y = ((const struct sym *)b)->addr;

	return x < y ? -1 : x > y;
}

static void symtab_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct sym *grown = realloc(t->syms, cap * sizeof(*grown));
		if (!grown)
			return;
		t->syms = grown;
		t->cap = cap;
	}
	t->syms[t->n].addr = addr;
	t->syms[t->n].size = size;
	t->syms[t->n].name = strdup(name);
	if (t->syms[t->n].name)
		t->n++;
}

/* The symbol at or below addr, if addr is inside it (when its size is known): a file with
 * only dynamic symbols (a stripped libc) has gaps, its internal functions. */
static const char *symtab_find(const struct symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || (t->syms[lo - 1].size && addr >= t->syms[lo - 1].addr + t->syms[lo - 1].size))
		return NULL;
	return t->syms[lo - 1].name;
}

static void symtab_free(struct symtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->syms[i].name);
	free(t->syms);
	memset(t, 0, sizeof(*t));
}

/* ===================================================================== */
/* The kernel                                                            */
/* ===================================================================== */

static struct symtab ksyms;
static bool ksyms_loaded;

static void load_ksyms(void)
{
	char line[512], name[256], type;
	unsigned long long addr;
	FILE *f;

	ksyms_loaded = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && addr &&
		    strchr("tTwW", type))
			symtab_add(&ksyms, addr, 0, name);
	fclose(f);
	qsort(ksyms.syms, ksyms.n, sizeof(*ksyms.syms), by_addr);
}

/* ===================================================================== */
/* Processes: their executable mappings and the files' function symbols  */
/* ===================================================================== */

struct file {
	char path[PATH_MAX + 64];	/* as reachable from here (/proc/PID/root/...) */
	struct symtab syms;		/* by ELF virtual address */
	uint64_t seg_off[8], seg_vaddr[8], seg_size[8];	/* executable PT_LOADs */
	int nsegs;
};

struct mapping {
	uint64_t lo, hi, off;
	struct file *file;
	char base[64];			/* the file's name, for frames without a symbol */
};

struct process {
	pid_t pid;
	struct mapping *maps;
	size_t nmaps;
};

static struct file **files;
static size_t nfiles;
static struct process *procs;
static size_t nprocs;

static void file_phdr(void *ctx, const GElf_Phdr *ph)
{
	struct file *fl = ctx;
	if (fl->nsegs < 8 && ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
		fl->seg_off[fl->nsegs] = ph->p_offset;
		fl->seg_vaddr[fl->nsegs] = ph->p_vaddr;
		fl->seg_size[fl->nsegs++] = ph->p_filesz;
	}
}

static bool file_sym(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct file *fl = ctx;
	if (GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_value && *name)
		symtab_add(&fl->syms, sym->st_value, sym->st_size, name);
	return true;
}

/* The executable segments and function symbols of one mapped file. */
static void load_file(struct file *fl)
{
	static const struct sq_elf_visitor v = { .phdr = file_phdr, .sym = file_sym };

	sq_elf_walk(fl->path, &v, fl);
	if (fl->syms.n)
		qsort(fl->syms.syms, fl->syms.n, sizeof(*fl->syms.syms), by_addr);
}

static struct file *file_of(const char *path)
{
	struct file *fl, **grown;

	for (size_t i = 0; i < nfiles; i++)
		if (strcmp(files[i]->path, path) == 0)
			return files[i];
	fl = calloc(1, sizeof(*fl));
	grown = realloc(files, (nfiles + 1) * sizeof(*files));
	if (!fl || !grown) {
		free(fl);
		return NULL;
	}
	files = grown;
	snprintf(fl->path, sizeof(fl->path), "%s", path);
	load_file(fl);
	files[nfiles++] = fl;
	return fl;
}

void sqp_native_add_process(pid_t pid)
{
	char path[64], line[4608], file[4096], perms[8];
	struct process *grown, *p;
	FILE *f;

	grown = realloc(procs, (nprocs + 1) * sizeof(*procs));
	if (!grown)
		return;
	procs = grown;
	p = &procs[nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char where[PATH_MAX + 64];
		struct mapping *m;
		const char *slash;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &off, file) != 5 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		m = realloc(p->maps, (p->nmaps + 1) * sizeof(*m));
		if (!m)
			break;
		p->maps = m;
		m = &p->maps[p->nmaps++];
		m->lo = lo;
		m->hi = hi;
		m->off = off;
		slash = strrchr(file, '/');
		snprintf(m->base, sizeof(m->base), "%s", slash + 1);
		snprintf(where, sizeof(where), "/proc/%d/root%s", pid, file);
		m->file = file_of(where);
	}
	fclose(f);
}

static const char *user_symbol(pid_t pid, uint64_t ip, char *buf, size_t len)
{
	for (size_t i = 0; i < nprocs; i++) {
		if (procs[i].pid != pid)
			continue;
		for (size_t j = 0; j < procs[i].nmaps; j++) {
			const struct mapping *m = &procs[i].maps[j];
			uint64_t off = ip - m->lo + m->off;
			const char *name = NULL;

			if (ip < m->lo || ip >= m->hi)
				continue;
			for (int s = 0; m->file && s < m->file->nsegs && !name; s++)
				if (off >= m->file->seg_off[s] &&
				    off < m->file->seg_off[s] + m->file->seg_size[s])
					name = symtab_find(&m->file->syms,
							   off - m->file->seg_off[s] + m->file->seg_vaddr[s]);
			if (name)
				return name;
			snprintf(buf, len, "[%s]", m->base);
			return buf;
		}
	}
	return "[unknown]";
}

/* ===================================================================== */
/* Stacks                                                                */
/* ===================================================================== */

void sqp_native_fold(int map_fd, int id, pid_t pid, bool kernel,
		     void (*add)(void *ctx, const char *frame), void *ctx)
{
	uint64_t ips[MAX_FRAMES] = { 0 };
	const char *names[MAX_FRAMES];
	char bufs[MAX_FRAMES][80], frame[300];
	int n = 0, from;

	if (bpf_map_lookup_elem(map_fd, &id, ips) != 0)
		return;
	if (kernel && !ksyms_loaded)
		load_ksyms();
	while (n < MAX_FRAMES && ips[n])
		n++;
	for (int i = 0; i < n; i++) {
		if (kernel) {
			const char *s = symtab_find(&ksyms, ips[i]);
			snprintf(bufs[i], sizeof(bufs[i]), "%s", s ? s : "[unknown]");
			names[i] = bufs[i];
		} else {
			names[i] = user_symbol(pid, ips[i], bufs[i], sizeof(bufs[i]));
		}
	}
	/* Innermost is 0. The C frames wanted are those inside the innermost interpreter
	 * frame. Without one, the unwinder stopped early (no frame pointers) or read garbage,
	 * unless it reached _start: keep only the innermost frame, which is exact. */
	from = n - 1;
	if (!kernel && n > 0) {
		from = strcmp(names[n - 1], "_start") == 0 ? n - 1 : 0;
		for (int i = 0; i < n; i++)
			if (strcmp(names[i], "run") == 0 || strcmp(names[i], "interp_run_send") == 0) {
				from = i - 1;
				break;
			}
	}
	for (int i = from; i >= 0; i--) {
		snprintf(frame, sizeof(frame), kernel ? "%s_[k]" : "%s", names[i]);
		for (char *s = frame; (s = strchr(s, ';'));)
			*s = ':';
		add(ctx, frame);
	}
}

void sqp_native_forget(pid_t pid)
{
	for (size_t i = 0; i < nprocs;) {
		if (procs[i].pid != pid) {
			i++;
			continue;
		}
		free(procs[i].maps);
		procs[i] = procs[--nprocs];
	}
}

void sqp_native_free(void)
{
	symtab_free(&ksyms);
	for (size_t i = 0; i < nfiles; i++) {
		symtab_free(&files[i]->syms);
		free(files[i]);
	}
	free(files);
	for (size_t i = 0; i < nprocs; i++)
		free(procs[i].maps);
	free(procs);
	files = NULL;
	procs = NULL;
	nfiles = nprocs = 0;
}
