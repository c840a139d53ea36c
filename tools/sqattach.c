// SPDX-License-Identifier: BSD-2-Clause
/* sqattach.c - attaching BPF programs and handing over the running VMs; see sqattach.h. */
#define _GNU_SOURCE
#include "sqattach.h"
#include "sqtargets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* ===================================================================== */
/* Programs                                                              */
/* ===================================================================== */

static struct bpf_link **links;
static int nlinks, nsites;

/* Keeps link until sq_detach_all; destroys it if there is no room. */
static int keep(struct bpf_link *link)
{
	struct bpf_link **grown = realloc(links, (nlinks + 1) * sizeof(*links));

	if (!grown) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	links = grown;
	links[nlinks++] = link;
	return 0;
}

int sq_attach(struct sq_common *c, struct bpf_program *prog, const char *probe)
{
	for (int i = 0; i < c->nbins; i++) {
		struct sq_binary *b = &c->bins[i];
		struct bpf_link *link;
		int sites = 0;

		for (int j = 0; j < b->probes.nprobes; j++)
			if (strcmp(b->probes.probe[j].name, probe) == 0)
				sites = b->probes.probe[j].sites;
		if (!sites && b->scanned) {
			/* A binary some other process runs, with squeak notes but not this
			 * probe (a fake, or another version): it must not stop the tool from
			 * tracing every other VM on the host. */
			fprintf(stderr, "%s: skipping %s: it has no %s:%s probe\n", c->tool,
				b->shown, SQ_PROVIDER, probe);
			continue;
		}
		if (!sites) {
			sq_error("%s has no %s:%s probe: the VM and the tool disagree about the probe "
			      "contract (probes/squeak.d)", b->shown, SQ_PROVIDER, probe);
			return -ENOENT;
		}
		link = bpf_program__attach_usdt(prog, c->pid ? c->pid : -1, b->path, SQ_PROVIDER,
						probe, NULL);
		if (!link) {
			int err = -errno;
			sq_error("cannot attach to %s:%s in %s: %s", SQ_PROVIDER, probe, b->shown,
			      strerror(-err));
			return err;
		}
		if (keep(link))
			return -ENOMEM;
		nsites += sites;
	}
	return 0;
}

static bool perf_unsupported(int err)
{
	return err == ENOENT || err == ENODEV || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

/* Why no CPU's perf event could be opened. */
static void perf_failed(int err)
{
	if (err == EACCES || err == EPERM)
		sq_error("perf_event_open: %s (needs root, or CAP_PERFMON; see "
			 "/proc/sys/kernel/perf_event_paranoid)", strerror(err));
	else if (perf_unsupported(err))
		sq_error("this kernel cannot open the perf event (perf_event_open: %s): "
			 "it needs CONFIG_PERF_EVENTS", strerror(err));
	else
		sq_error("perf_event_open: %s", strerror(err));
}

int sq_attach_perf(struct bpf_program *prog, struct perf_event_attr *attr)
{
	int ncpus = libbpf_num_possible_cpus(), opened = 0, last_err = 0;

	if (ncpus <= 0) {
		sq_error("cannot count the CPUs: %s", strerror(-ncpus));
		return -1;
	}
	attr->size = sizeof(*attr);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		int fd = (int)syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *link;

		if (fd < 0) {
			last_err = errno;
			if (errno == ENODEV)	/* an offline CPU */
				continue;
			break;
		}
		link = bpf_program__attach_perf_event(prog, fd);
		if (!link) {
			last_err = errno;
			close(fd);
			sq_error("cannot attach the BPF program to CPU %d's perf event: %s", cpu,
				 strerror(last_err));
			return -1;
		}
		if (keep(link))
			return -1;
		opened++;
	}
	if (opened && (!last_err || last_err == ENODEV))
		return 0;
	perf_failed(last_err);
	return -1;
}

void sq_detach_all(void)
{
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
	free(links);
	links = NULL;
	nsites = 0;
}

/* ===================================================================== */
/* The running VMs                                                       */
/* ===================================================================== */

int sq_vm_publish(int vms_fd, const struct sq_vm *vm)
{
	struct sq_vm_offsets o;
	__u32 key = vm->pid;
	int err;

	sq_vm_offsets_from(&vm->d, vm->offsets_addr, 0, &o);
	err = bpf_map_update_elem(vms_fd, &key, &o, BPF_NOEXIST);
	return err == -EEXIST ? 0 : err;
}

static void publish(int vms_fd, pid_t pid, const char *why)
{
	struct sq_vm vm;
	int err = sq_vm_open(pid, &vm, 0);

	if (err) {
		if (why)
			sq_error("PID %d: %s: %s", pid, sq_vm_strerror(err), why);
		return;
	}
	sq_vm_publish(vms_fd, &vm);
}

void sq_publish_running_vms(const struct sq_common *c, int vms_fd, const char *why)
{
	pid_t pids[SQ_MAX_VMS];

	if (c->pid) {
		publish(vms_fd, c->pid, why);
		return;
	}
	for (int b = 0; b < c->nbins; b++) {
		int n = sq_scan_vms(pids, SQ_MAX_VMS, c->bins[b].dev, c->bins[b].ino);
		for (int i = 0; i < n; i++)
			publish(vms_fd, pids[i], NULL);
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
