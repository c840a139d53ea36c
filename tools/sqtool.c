// SPDX-License-Identifier: BSD-2-Clause
/* sqtool.c - the user-space helpers the sqvm tools share; see sqtool.h. */
#define _GNU_SOURCE
#include "sqtool.h"
#include "sqcommon.h"
#include "sqvm_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqkernel.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static const char *tool_name = "sqtool";
static bool verbose;

static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ===================================================================== */
/* Command line                                                          */
/* ===================================================================== */

void sq_init(struct sq_common *c, const char *tool)
{
	memset(c, 0, sizeof(*c));
	c->tool = tool_name = tool;
	c->start_ns = sq_mono_ns();
	c->pidfd = -1;
	argp_err_exit_status = SQ_EXIT_USAGE;
}

int sq_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int sq_parse_duration(const char *s, __u64 unit_ns, __u64 *ns)
{
	static const struct { const char *suffix; __u64 ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "m", 60000000000ULL }, { "h", 3600000000000ULL },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	if (*end) {
		unit_ns = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].suffix) == 0)
				unit_ns = units[i].ns;
		if (!unit_ns)
			return -EINVAL;
	}
	if (v * unit_ns > 9e18)
		return -ERANGE;
	*ns = (__u64)llround(v * unit_ns);
	return 0;
}

int sq_parse_common_opt(int key, char *arg, struct argp_state *state, struct sq_common *c)
{
	long v;

	switch (key) {
	case 'p':
		if (sq_parse_long(arg, 1, INT_MAX, &v))
			argp_error(state, "invalid PID '%s'", arg);
		c->pid = (pid_t)v;
		return 0;
	case SQ_OPT_VM:
		c->vm = arg;
		return 0;
	case 'T':
		c->timestamp = true;
		return 0;
	case 'j':
		c->format = SQ_FORMAT_JSON;
		return 0;
	case 'v':
		c->verbose = verbose = true;
		return 0;
	case 'd':
		if (sq_parse_duration(arg, 1000000000ULL, &c->duration_ns) || !c->duration_ns)
			argp_error(state, "invalid duration '%s' (seconds, or with a unit: 500ms, 2m)", arg);
		return 0;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		return 0;
	case SQ_OPT_VERSION:
		printf("%s\n", argp_program_version);
		exit(0);
	case ARGP_KEY_ARG:
		if (c->npositional == 0) {
			if (sq_parse_duration(arg, 1000000000ULL, &c->interval_ns) || c->interval_ns == 0)
				argp_error(state, "invalid interval '%s' (seconds, or with a unit: 500ms)", arg);
		} else if (c->npositional == 1) {
			if (sq_parse_long(arg, 1, LONG_MAX, &c->count))
				argp_error(state, "invalid count '%s'", arg);
		} else {
			argp_error(state, "unexpected argument '%s'", arg);
		}
		c->npositional++;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* ===================================================================== */
/* Environment checks                                                    */
/* ===================================================================== */

int sq_check_privileges(const struct sq_common *c)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	__u64 eff;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return geteuid() == 0 ? 0 : (error("needs root (cannot read capabilities: %s)", strerror(errno)), -EPERM);
	eff = data[0].effective | (__u64)data[1].effective << 32;
#define HAS(cap) (eff & (1ULL << (cap)))
	if (HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON)))
		return 0;
#undef HAS
	error("needs root, or the capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), "
	      "to load BPF programs and attach uprobes");
	return -EPERM;
}

int sq_check_kernel(const struct sq_common *c)
{
	int ret;

	errno = 0;
	ret = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL);
	if (ret <= 0) {
		int err = ret < 0 ? -ret : errno;
		if (err == ENOSYS || ret == 0)
			error("this kernel does not support BPF (or BPF kprobe/uprobe programs): "
			      "it needs CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS");
		else
			error("cannot load a BPF program: %s", strerror(err));
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) != 0) {
		error("this kernel does not support uprobes (no /sys/bus/event_source/devices/uprobe): "
		      "it needs CONFIG_UPROBE_EVENTS");
		return -ENOTSUP;
	}
	return 0;
}

/* libbpf's warnings always (they explain a failure the tool then reports), the rest
 * with -v. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level != LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

void sq_setup_libbpf(const struct sq_common *c)
{
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

/* ===================================================================== */
/* Finding the VM                                                        */
/* ===================================================================== */

/* Parses one stapsdt note's description: three addresses, then provider, name, args. */
static void add_note(struct sq_probes *out, const char *desc, size_t len, int addr_size)
{
	const char *provider, *name;
	size_t off = 3 * addr_size;

	if (len <= off)
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

int sq_read_probes(const char *path, struct sq_probes *out)
{
	struct stat st;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, err = 0, addr_size;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* The file may be a container's: a regular file of sane size, read (not mapped: a
	 * mapping of a file its owner truncates meanwhile faults with SIGBUS). */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SQ_MAX_BINARY_SIZE) {
		err = -ENOEXEC;
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	addr_size = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;
		GElf_Nhdr nhdr;
		size_t off = 0, next, name_off, desc_off;
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".note.stapsdt") != 0)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
			if (nhdr.n_type == 3 && nhdr.n_namesz == 8 &&
			    memcmp((char *)data->d_buf + name_off, "stapsdt", 8) == 0)
				add_note(out, (char *)data->d_buf + desc_off, nhdr.n_descsz, addr_size);
			off = next;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* Adds path to the targets after checking that it has squeak probes; what names the
 * binary in messages ("PID 42 (/usr/bin/sqvm)" or "/usr/bin/sqvm"). quiet: skip silently
 * a binary without probes (found by scanning, not asked for). */
static int add_binary(struct sq_common *c, const char *path, const char *shown,
		      const char *what, bool quiet)
{
	struct sq_binary *b;
	struct stat st;
	int err;

	if (stat(path, &st) != 0) {
		if (!quiet)
			error("%s: cannot access %s: %s", what, shown, strerror(errno));
		return quiet ? 0 : -errno;
	}
	for (int i = 0; i < c->nbins; i++)
		if (c->bins[i].dev == st.st_dev && c->bins[i].ino == st.st_ino)
			return 0;
	if (c->nbins == SQ_MAX_BINARIES) {
		if (!quiet)
			error("more than %d VM binaries to trace", SQ_MAX_BINARIES);
		return quiet ? 0 : -E2BIG;
	}
	b = &c->bins[c->nbins];
	err = sq_read_probes(path, &b->probes);
	if (err == 0 && b->probes.nsites == 0) {
		if (quiet)
			return 0;
		if (sq_is_sqvm_file(path))
			error("%s is sqvm built without probes: its executable has no .note.stapsdt "
			      "squeak notes (rebuild it with probes: make, not make PROBES=0)", what);
		else
			error("%s is not a sqvm process: its executable has no squeak USDT probes", what);
		return -ENOENT;
	}
	if (err) {
		if (!quiet)
			error("%s: cannot read %s: %s", what, shown,
			      err == -ENOEXEC ? "not an ELF file" : strerror(-err));
		return quiet ? 0 : err;
	}
	snprintf(b->path, sizeof(b->path), "%s", path);
	snprintf(b->shown, sizeof(b->shown), "%s", shown);
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	c->nbins++;
	return 0;
}

int sq_add_target(struct sq_common *c, const char *path, const char *shown)
{
	return add_binary(c, path, shown, shown, true);
}

/* Opens path read-only if it is the regular file want; else -1. */
static int open_same_file(const char *path, const struct stat *want)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != want->st_dev ||
	    st.st_ino != want->st_ino) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The file a process runs, opened, as the path /proc/self/fd/N of that open file (kept
 * open for the tool's life). A container's owner controls every path under
 * /proc/PID/root, symbolic links included, and could swap the file between a check and
 * a use; an open file cannot be swapped, and /proc/self/fd/N names exactly it, for our
 * ELF reading and for the kernel's uprobe alike. The exe link names the file as seen from
 * the process's mount namespace (reach it through /proc/PID/root) or, for a chroot,
 * from ours; /proc/PID/exe itself (the same file, whatever its name) is the last resort.
 * Answers the descriptor in *fdout. */
static int exe_of(pid_t pid, char *path, size_t len, char *shown, size_t shown_len, int *fdout)
{
	char link[64], target[PATH_MAX], cand[PATH_MAX + 64];
	struct stat want;
	ssize_t n;
	int fd = -1;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (stat(link, &want) != 0)
		return -errno;
	snprintf(shown, shown_len, "%s", target);
	snprintf(cand, sizeof(cand), "/proc/%d/root%s", pid, target);
	if (target[0] == '/')
		fd = open_same_file(cand, &want);
	if (fd < 0 && target[0] == '/')
		fd = open_same_file(target, &want);
	if (fd < 0)
		fd = open_same_file(link, &want);
	if (fd < 0)
		return errno ? -errno : -ENOENT;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	*fdout = fd;
	return 0;
}

static int find_pid_target(struct sq_common *c)
{
	char path[PATH_MAX], shown[PATH_MAX], what[PATH_MAX + 64];
	int err, fd = -1;

	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (c->pidfd < 0 && errno == ESRCH) {
		error("PID %d does not exist", c->pid);
		return -ESRCH;
	}
	if (c->pidfd < 0 && kill(c->pid, 0) < 0 && errno == ESRCH) {
		error("PID %d does not exist", c->pid);
		return -ESRCH;
	}
	err = exe_of(c->pid, path, sizeof(path), shown, sizeof(shown), &fd);
	if (err == -ENOENT) {
		error("PID %d has no executable (a kernel thread, or it has exited): not a sqvm process",
		      c->pid);
		return err;
	}
	if (err) {
		error("cannot read /proc/%d/exe: %s", c->pid, strerror(-err));
		return err;
	}
	snprintf(what, sizeof(what), "PID %d (%s)", c->pid, shown);
	err = add_binary(c, path, shown, what, false);
	if (err)
		close(fd);
	return err;
}

/* name on PATH, as an absolute path, into out (PATH_MAX bytes). */
static bool search_path(const char *name, char *out)
{
	const char *env = getenv("PATH");
	char *dirs, *dir, *save = NULL;
	bool found = false;

	if (!env || !(dirs = strdup(env)))
		return false;
	for (dir = strtok_r(dirs, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%s/%s", *dir ? dir : ".", name);
		found = access(cand, X_OK) == 0 && realpath(cand, out) != NULL;
	}
	free(dirs);
	return found;
}

/* The sqvm of the build tree the tool runs from (build/tools/sqalloc -> build/sqvm),
 * into out (PATH_MAX bytes). */
static bool beside_tool(char *out)
{
	char self[PATH_MAX], cand[PATH_MAX + 16], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return false;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = 0;
	snprintf(cand, sizeof(cand), "%s/../sqvm", self);
	return access(cand, X_OK) == 0 && realpath(cand, out) != NULL;
}

/* Processes running sqvm under another root (containers): their binaries are other files,
 * reached through /proc/PID/root. A process in our own root is covered by the binary
 * already found, or is running some other sqvm that was not asked for. */
static void scan_containers(struct sq_common *c, const char *base)
{
	struct stat root, st;
	struct dirent *de;
	DIR *proc;

	if (stat("/", &root) != 0 || !(proc = opendir("/proc")))
		return;
	while ((de = readdir(proc))) {
		char link[64], path[PATH_MAX], shown[PATH_MAX], what[PATH_MAX + 64];
		const char *slash;
		int fd, nbins;
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		snprintf(link, sizeof(link), "/proc/%d/root", pid);
		if (stat(link, &st) != 0 || (st.st_dev == root.st_dev && st.st_ino == root.st_ino))
			continue;
		if (exe_of(pid, path, sizeof(path), shown, sizeof(shown), &fd) != 0)
			continue;
		slash = strrchr(shown, '/');
		nbins = c->nbins;
		if (strcmp(slash ? slash + 1 : shown, base) == 0) {
			snprintf(what, sizeof(what), "PID %d (%s, in a container)", pid, shown);
			add_binary(c, path, what, what, true);
		}
		if (c->nbins == nbins)	/* not kept: not an sqvm, or a binary already traced */
			close(fd);
	}
	closedir(proc);
}

int sq_find_targets(struct sq_common *c)
{
	char path[PATH_MAX];
	const char *base;
	int err;

	if (c->pid)
		return find_pid_target(c);
	if (c->vm && strchr(c->vm, '/')) {
		if (!realpath(c->vm, path)) {
			error("--vm %s: %s", c->vm, strerror(errno));
			return -errno;
		}
	} else if (c->vm) {
		if (!search_path(c->vm, path)) {
			error("--vm %s: not found on PATH", c->vm);
			return -ENOENT;
		}
	} else if (!search_path("sqvm", path) && !beside_tool(path)) {
		if (c->targets_optional)
			return 0;
		error("no sqvm binary on PATH: give one with --vm PATH, or a process with -p PID");
		return -ENOENT;
	}
	err = add_binary(c, path, path, path, false);
	if (err)
		return err;
	/* --vm names one file: trace exactly it. Without it, "sqvm" means the VM wherever
	 * it runs: also the sqvm binaries of processes in other roots (containers). */
	if (!c->vm) {
		base = strrchr(path, '/') + 1;
		scan_containers(c, base);
	}
	return 0;
}

/* ===================================================================== */
/* Attaching                                                             */
/* ===================================================================== */

static struct bpf_link **links;
static int nlinks, nsites;

int sq_attach(struct sq_common *c, struct bpf_program *prog, const char *probe)
{
	for (int i = 0; i < c->nbins; i++) {
		struct sq_binary *b = &c->bins[i];
		struct bpf_link *link, **grown;
		int sites = 0;

		for (int j = 0; j < b->probes.nprobes; j++)
			if (strcmp(b->probes.probe[j].name, probe) == 0)
				sites = b->probes.probe[j].sites;
		if (!sites) {
			error("%s has no %s:%s probe: the VM and the tool disagree about the probe "
			      "contract (probes/squeak.d)", b->shown, SQ_PROVIDER, probe);
			return -ENOENT;
		}
		link = bpf_program__attach_usdt(prog, c->pid ? c->pid : -1, b->path, SQ_PROVIDER,
						probe, NULL);
		if (!link) {
			int err = -errno;
			error("cannot attach to %s:%s in %s: %s", SQ_PROVIDER, probe, b->shown,
			      strerror(-err));
			return err;
		}
		grown = realloc(links, (nlinks + 1) * sizeof(*links));
		if (!grown) {
			bpf_link__destroy(link);
			return -ENOMEM;
		}
		links = grown;
		links[nlinks++] = link;
		nsites += sites;
	}
	return 0;
}

int sq_attached_sites(void)
{
	return nsites;
}

void sq_detach_all(void)
{
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
	free(links);
	links = NULL;
	nsites = 0;
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

static void add_vm_offsets(const struct sq_common *c, int map_fd, pid_t pid, const char *why)
{
	struct sq_vm_offsets o;
	struct sq_vm vm;
	__u32 key = pid;
	int err = sq_vm_open(pid, &vm);

	if (err) {
		if (why)
			fprintf(stderr, "%s: PID %d: %s: %s\n", c->tool, pid, sq_vm_strerror(err), why);
		return;
	}
	o.current_process = vm.d.current_process;
	o.process_fp = vm.d.process_fp;
	o.frame_caller = vm.d.frame_caller;
	o.frame_method = vm.d.frame_method;
	o.method_print_name = vm.d.method_print_name;
	bpf_map_update_elem(map_fd, &key, &o, BPF_ANY);
}

void sq_add_running_vm_offsets(const struct sq_common *c, int map_fd, const char *why)
{
	pid_t pids[1024];

	if (c->pid) {
		add_vm_offsets(c, map_fd, c->pid, why);
		return;
	}
	for (int b = 0; b < c->nbins; b++) {
		int n = sq_scan_vms(pids, 1024, c->bins[b].dev, c->bins[b].ino);
		for (int i = 0; i < n; i++)
			add_vm_offsets(c, map_fd, pids[i], NULL);
	}
}

void sq_print_tracing(const struct sq_common *c, const char *what)
{
	FILE *f = c->format == SQ_FORMAT_TEXT ? stdout : stderr;

	if (c->verbose) {
		fprintf(stderr, "%s: attached %d probe sites in %d binar%s, %.1f ms after start\n",
			c->tool, nsites, c->nbins, c->nbins == 1 ? "y" : "ies",
			(sq_mono_ns() - c->start_ns) / 1e6);
		for (int i = 0; i < c->nbins; i++)
			fprintf(stderr, "%s:   %s\n", c->tool, c->bins[i].shown);
	}
	if (c->pid)
		fprintf(f, "Tracing %s of PID %d... Hit Ctrl-C to end.\n", what, c->pid);
	else if (c->nbins == 1)
		fprintf(f, "Tracing %s of every process running %s... Hit Ctrl-C to end.\n", what,
			c->bins[0].shown);
	else
		fprintf(f, "Tracing %s of every process running %s (and %d more VM binar%s in "
			"containers)... Hit Ctrl-C to end.\n", what, c->bins[0].shown, c->nbins - 1,
			c->nbins == 2 ? "y" : "ies");
	fflush(f);
}

/* ===================================================================== */
/* The event loop                                                        */
/* ===================================================================== */

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int sq_loop_open(struct sq_loop *l, const struct sq_common *c)
{
	sigset_t set;

	memset(l, 0, sizeof(*l));
	l->c = c;
	l->sigfd = l->timerfd = l->deadlinefd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto fail;
	/* A shell starts background commands with SIGINT ignored; an ignored signal is
	 * discarded rather than queued for the signalfd, so restore the default first. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		goto fail;
	l->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (l->sigfd < 0 || epoll_add(l->epfd, l->sigfd) < 0)
		goto fail;
	if (c->interval_ns) {
		struct itimerspec its;
		its.it_value.tv_sec = c->interval_ns / 1000000000ULL;
		its.it_value.tv_nsec = c->interval_ns % 1000000000ULL;
		its.it_interval = its.it_value;
		l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (l->timerfd < 0 || timerfd_settime(l->timerfd, 0, &its, NULL) < 0 ||
		    epoll_add(l->epfd, l->timerfd) < 0)
			goto fail;
	}
	if (c->duration_ns) {
		struct itimerspec its = { .it_value = { (time_t)(c->duration_ns / 1000000000ULL),
							(long)(c->duration_ns % 1000000000ULL) } };
		l->deadlinefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (l->deadlinefd < 0 || timerfd_settime(l->deadlinefd, 0, &its, NULL) < 0 ||
		    epoll_add(l->epfd, l->deadlinefd) < 0)
			goto fail;
	}
	if (c->pidfd >= 0 && epoll_add(l->epfd, c->pidfd) < 0)
		goto fail;
	return 0;
fail:
	error("cannot set up the event loop: %s", strerror(errno));
	return -errno;
}

int sq_loop_restart_timer(struct sq_loop *l)
{
	struct itimerspec its;

	if (l->deadlinefd >= 0) {
		struct itimerspec d = { .it_value = { (time_t)(l->c->duration_ns / 1000000000ULL),
						      (long)(l->c->duration_ns % 1000000000ULL) } };
		if (timerfd_settime(l->deadlinefd, 0, &d, NULL) < 0) {
			error("cannot set the duration timer: %s", strerror(errno));
			return -errno;
		}
	}
	if (l->timerfd < 0)
		return 0;
	its.it_value.tv_sec = l->c->interval_ns / 1000000000ULL;
	its.it_value.tv_nsec = l->c->interval_ns % 1000000000ULL;
	its.it_interval = its.it_value;
	if (timerfd_settime(l->timerfd, 0, &its, NULL) < 0) {
		error("cannot set the interval timer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int sq_loop_add_ringbuf(struct sq_loop *l, struct ring_buffer *rb)
{
	l->rb = rb;
	if (epoll_add(l->epfd, ring_buffer__epoll_fd(rb)) < 0) {
		error("cannot poll the ring buffer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* ring_buffer__consume reads until the buffer is empty, which a busy VM can keep it from
 * ever being: every SQ_RB_BATCH records the callbacks answer sq_rb_yield's -EINTR, which
 * stops the consumer, so the loop looks at Ctrl-C, the timers and the process between
 * batches. */
#define SQ_RB_BATCH 4096

int sq_rb_yield(void)
{
	static unsigned n;

	return ++n % SQ_RB_BATCH == 0 ? -EINTR : 0;
}

static int consume(struct sq_loop *l)
{
	int n;

	if (!l->rb)
		return 0;
	n = ring_buffer__consume(l->rb);
	if (n == -EINTR)
		n = 0;
	fflush(stdout);		/* what the callbacks printed, in whole batches */
	if (n < 0) {
		error("reading the ring buffer: %s", strerror(-n));
		return SQ_WAKE_ERROR;
	}
	return 0;
}

int sq_loop_wait(struct sq_loop *l)
{
	for (;;) {
		struct epoll_event evs[8];
		bool tick = false, stop = false, exited = false, over = false;
		int n = epoll_wait(l->epfd, evs, 8, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error("epoll_wait: %s", strerror(errno));
			return SQ_WAKE_ERROR;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l->sigfd) {
				struct signalfd_siginfo si;
				if (read(l->sigfd, &si, sizeof(si)) > 0)
					stop = true;
			} else if (fd == l->timerfd) {
				__u64 expirations;
				if (read(l->timerfd, &expirations, sizeof(expirations)) > 0)
					tick = true;
			} else if (fd == l->deadlinefd) {
				over = true;
			} else if (fd == l->c->pidfd) {
				exited = true;
			}
		}
		/* Records first: whatever the wake-up, what has arrived belongs before it. */
		if (consume(l) < 0)
			return SQ_WAKE_ERROR;
		if (stop)
			return SQ_WAKE_STOP;
		if (exited)
			return SQ_WAKE_EXITED;
		if (over)
			return SQ_WAKE_DEADLINE;
		if (tick)
			return SQ_WAKE_TICK;
	}
}

void sq_loop_close(struct sq_loop *l)
{
	if (l->c && l->deadlinefd >= 0)
		close(l->deadlinefd);
	if (l->timerfd >= 0)
		close(l->timerfd);
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->epfd >= 0)
		close(l->epfd);
}

/* ===================================================================== */
/* Time                                                                  */
/* ===================================================================== */

__u64 sq_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void sq_format_time(char *buf, size_t len, __u64 mono_ns, bool micros)
{
	static __s64 offset;	/* wall clock minus monotonic clock, in ns */
	struct timespec rt;
	struct tm tm;
	__s64 wall;
	time_t secs;
	size_t n;

	if (!offset) {
		clock_gettime(CLOCK_REALTIME, &rt);
		offset = (rt.tv_sec * 1000000000LL + rt.tv_nsec) - (__s64)sq_mono_ns();
	}
	wall = (__s64)mono_ns + offset;
	secs = wall / 1000000000LL;
	localtime_r(&secs, &tm);
	n = strftime(buf, len, "%H:%M:%S", &tm);
	if (micros && n < len)
		snprintf(buf + n, len - n, ".%06lld", (long long)(wall % 1000000000LL) / 1000);
}

void sq_format_iso_time(char *buf, size_t len, __u64 mono_ns)
{
	static __s64 offset;
	struct timespec rt;
	struct tm tm;
	__s64 wall;
	time_t secs;
	size_t n;
	char zone[8];

	if (!offset) {
		clock_gettime(CLOCK_REALTIME, &rt);
		offset = (rt.tv_sec * 1000000000LL + rt.tv_nsec) - (__s64)sq_mono_ns();
	}
	wall = (__s64)mono_ns + offset;
	secs = wall / 1000000000LL;
	localtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	/* strftime's %z is +hhmm; RFC 3339 wants +hh:mm */
	strftime(zone, sizeof(zone), "%z", &tm);
	if (n < len)
		snprintf(buf + n, len - n, ".%06lld%.3s:%.2s", (long long)(wall % 1000000000LL) / 1000,
			 zone, zone + 3);
}

void sq_print_time_header(const struct sq_common *c, FILE *f)
{
	char buf[32];

	sq_format_time(buf, sizeof(buf), sq_mono_ns(), false);
	fprintf(f, "%s\n", buf);
}

void sq_format_duration(char *buf, size_t len, __u64 ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, len, "%g s", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%g ms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%g us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
}

/* ===================================================================== */
/* Output                                                                */
/* ===================================================================== */

static void print_stars(FILE *f, __u64 val, __u64 max, int width)
{
	int stars = max ? (int)(val * width / max) : 0;
	bool more = val > max;

	if (stars > width)
		stars = width;
	for (int i = 0; i < width; i++)
		fputc(i < stars ? '*' : ' ', f);
	if (more)
		fputc('+', f);
}

void sq_print_log2_hist(FILE *f, const __u64 *slots, int nslots, const char *unit)
{
	int last = -1, wide, stars;
	__u64 max = 0;

	for (int i = 0; i < nslots; i++) {
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	wide = last > 32;	/* ranges past 2^32 need wider columns */
	stars = wide ? 20 : 40;
	fprintf(f, "%*s%-*s : count    distribution\n", wide ? 15 : 5, "", wide ? 29 : 19, unit);
	for (int i = 0; i <= last; i++) {
		__u64 low = i == 0 ? 0 : 1ULL << i, high = (1ULL << (i + 1)) - 1;
		fprintf(f, "%*llu -> %-*llu : %-8llu |", wide ? 20 : 10, (unsigned long long)low,
			wide ? 20 : 10, (unsigned long long)high, (unsigned long long)slots[i]);
		print_stars(f, slots[i], max, stars);
		fprintf(f, "|\n");
	}
}

void sq_json_log2_hist(FILE *f, const __u64 *slots, int nslots)
{
	int last = -1;

	for (int i = 0; i < nslots; i++)
		if (slots[i])
			last = i;
	fputc('[', f);
	for (int i = 0; i <= last; i++) {
		__u64 low = i == 0 ? 0 : 1ULL << i, high = (1ULL << (i + 1)) - 1;
		fprintf(f, "%s{\"low\":%llu,\"high\":%llu,\"count\":%llu}", i ? "," : "",
			(unsigned long long)low, (unsigned long long)high, (unsigned long long)slots[i]);
	}
	fputc(']', f);
}

void sq_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int sq_prepare(struct sq_common *c, struct bpf_object_open_opts *opts)
{
	sq_setup_libbpf(c);
	if (sq_check_privileges(c) || sq_check_kernel(c) || sq_find_targets(c))
		return SQ_EXIT_ERROR;
	sq_open_opts(c, opts);
	return 0;
}
