// SPDX-License-Identifier: BSD-2-Clause
/* sqbpf.c - libbpf set-up, checks and map reading for every tool; see sqbpf.h. */
#define _GNU_SOURCE
#include "sqbpf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqelf.h"
#include "sqkernel.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* ===================================================================== */
/* Checks and set-up                                                     */
/* ===================================================================== */

int sq_check_privileges(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	__u64 eff;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return geteuid() == 0 ? 0 : (sq_error("needs root (cannot read capabilities: %s)", strerror(errno)), -EPERM);
	eff = data[0].effective | (__u64)data[1].effective << 32;
#define HAS(cap) (eff & (1ULL << (cap)))
	if (HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON)))
		return 0;
#undef HAS
	sq_error("needs root, or the capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), "
	      "to load BPF programs and attach uprobes");
	return -EPERM;
}

int sq_check_kernel(void)
{
	int ret;

	errno = 0;
	ret = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL);
	if (ret <= 0) {
		int err = ret < 0 ? -ret : errno;
		if (err == ENOSYS || ret == 0)
			sq_error("this kernel does not support BPF (or BPF kprobe/uprobe programs): "
			      "it needs CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS");
		else
			sq_error("cannot load a BPF program: %s", strerror(err));
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) != 0) {
		sq_error("this kernel does not support uprobes (no /sys/bus/event_source/devices/uprobe): "
		      "it needs CONFIG_UPROBE_EVENTS");
		return -ENOTSUP;
	}
	return 0;
}

/* libbpf's warnings always (they explain a failure the tool then reports), the rest
 * with -v. */
static bool verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level != LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

void sq_setup_libbpf(const struct sq_common *c)
{
	verbose = c->verbose;
	libbpf_set_print(libbpf_print);
}

/* The BTF types the CO-RE relocations of every tool need, from the kernel described in
 * sqkernel.h (bpftool gen min_core_btf), built into the binary. */
extern const char sq_min_btf[], sq_min_btf_end[];
__asm__(".pushsection .rodata\n"
	".balign 8\n"
	".global sq_min_btf\n"
	"sq_min_btf:\n"
	".incbin \"" SQ_MIN_BTF_PATH "\"\n"
	".global sq_min_btf_end\n"
	"sq_min_btf_end:\n"
	".popsection\n");

void sq_open_opts(const struct sq_common *c, struct bpf_object_open_opts *opts)
{
	static char path[64];
	char running[2 * sizeof(((struct utsname *)0)->release) + 2];
	struct utsname u;
	struct stat st;
	size_t len = sq_min_btf_end - sq_min_btf;
	int fd;

	if (uname(&u) != 0 || stat("/sys/kernel/btf/vmlinux", &st) != 0)
		return;
	snprintf(running, sizeof(running), "%s %s", u.release, u.version);
	if (strcmp(running, SQ_BUILD_KERNEL) != 0 || (__u64)st.st_size != SQ_BUILD_BTF_SIZE) {
		if (c->verbose)
			fprintf(stderr, "%s: not the kernel the tools were built on: loading its BTF\n",
				c->tool);
		return;
	}
	fd = memfd_create("sqtool-btf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, sq_min_btf, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	opts->btf_custom_path = path;	/* the fd stays open: libbpf reads it at load */
	if (c->verbose)
		fprintf(stderr, "%s: the kernel the tools were built on: using its built-in BTF subset\n",
			c->tool);
}

/* Can this kernel run a BPF program on perf events at all? */
int sq_check_perf(void)
{
	int ret;

	if (access("/proc/sys/kernel/perf_event_paranoid", F_OK) != 0) {
		sq_error("this kernel has no perf events "
			 "(no /proc/sys/kernel/perf_event_paranoid): it needs CONFIG_PERF_EVENTS");
		return -1;
	}
	errno = 0;
	ret = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL);
	if (ret <= 0) {
		sq_error("this kernel cannot run BPF programs on perf events%s%s",
			 ret < 0 ? ": " : " (it needs CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS)",
			 ret < 0 ? strerror(-ret) : "");
		return -1;
	}
	return 0;
}

int sq_start(struct sq_common *c, const char *tool, const struct argp *argp, int argc, char **argv,
	     struct bpf_object_open_opts *opts)
{
	sq_init(c, tool);
	if (argp_parse(argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return SQ_EXIT_USAGE;
	sq_setup_libbpf(c);
	if (sq_check_privileges() || sq_check_kernel() || sq_find_targets(c))
		return SQ_EXIT_ERROR;
	sq_open_opts(c, opts);
	return 0;
}

/* ===================================================================== */
/* Maps                                                                  */
/* ===================================================================== */

static const char *const family_maps[] = { "vms", "names", "name_scratch" };
#define NFAMILY (sizeof(family_maps) / sizeof(family_maps[0]))

/* sq_elf_walk_image: the family maps the code refers to. */
static void note_use(void *ctx, const char *symbol)
{
	bool *used = ctx;

	for (size_t i = 0; i < NFAMILY; i++)
		if (strcmp(symbol, family_maps[i]) == 0)
			used[i] = true;
}

void sq_skip_unused_maps(const struct bpf_object_skeleton *s)
{
	static const struct sq_elf_visitor v = { .code_rel = note_use };
	bool used[NFAMILY] = { false };

	if (sq_elf_walk_image(s->data, s->data_sz, &v, used))
		return;		/* unreadable: create them all, as libbpf would */
	for (size_t i = 0; i < NFAMILY; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(*s->obj, family_maps[i]);
		if (map && !used[i])
			bpf_map__set_autocreate(map, false);
	}
}

void *sq_map_keys(int fd, size_t key_size, size_t max, size_t *n)
{
	char *keys = calloc(max ? max : 1, key_size);
	size_t i;

	if (!keys)
		return NULL;
	/* each key read is the cursor for the next: the array holds them in order */
	for (i = 0; i < max; i++)
		if (bpf_map_get_next_key(fd, i ? keys + (i - 1) * key_size : NULL, keys + i * key_size))
			break;
	*n = i;
	return keys;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

void sq_map_forget_pids(const struct bpf_map *map, pid_t *pids, size_t npids)
{
	size_t n, size = bpf_map__key_size(map);
	int fd = bpf_map__fd(map);
	char *keys;

	if (fd < 0 || !npids)
		return;
	qsort(pids, npids, sizeof(*pids), by_pid);
	keys = sq_map_keys(fd, size, bpf_map__max_entries(map), &n);
	for (size_t i = 0; keys && i < n; i++) {
		__u32 kpid;
		memcpy(&kpid, keys + i * size, sizeof(kpid));
		if (bsearch(&(pid_t){ (pid_t)kpid }, pids, npids, sizeof(*pids), by_pid))
			bpf_map_delete_elem(fd, keys + i * size);
	}
	free(keys);
}
