// SPDX-License-Identifier: BSD-2-Clause
/* sqstat_prom.h - sqstat as a Prometheus exporter (--listen, --prom): the running VMs'
 * totals, which sqstat.c reads from them, and the kernel's histograms of their GC
 * pauses and requests (bpf/sqstat.bpf.c), in Prometheus's text format or, for a scrape
 * that asks for it, OpenMetrics with the request buckets' exemplars (sqmetrics.h),
 * served over HTTP (sqhttp.h) as every scrape asks, or written to a file (the text
 * format) at every refresh. */
#ifndef SQSTAT_PROM_H
#define SQSTAT_PROM_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct sq_http;
struct sq_loop;
struct sqstat_bpf;

/* The figures sqstat shows, as totals since the VM started. */
struct sqstat_totals {
	__u64 activations, allocations, process_switches, dnus, class_loads, primitive_failures;
	__u64 bytes_allocated;		/* up to the last collection, plus eden now */
	__u64 young_count, full_count, young_pause_ns, full_pause_ns;
};

/* What one VM can put in a scrape: its routes and its request statuses with a series of
 * their own (the rest in "other"), and the bytes of a label value (LABEL_MAX,
 * sqstat_prom.c). At the bounds one VM's requests are (32 + 1) x (16 + 1) x 29 lines of
 * about 230 bytes: 3.7 MB at most. */
#define SQSTAT_ROUTES_PER_VM 32
#define SQSTAT_CODES_PER_VM 16

/* The request series a VM may have (security review, finding 6): the first
 * SQSTAT_ROUTES_PER_VM routes (by address) and SQSTAT_CODES_PER_VM statuses seen keep
 * their own series for the VM's life; any other is route="other" or code="other". Kept
 * in the VM's row, zeroed with it. */
struct sqstat_series {
	__u64 routes[SQSTAT_ROUTES_PER_VM];
	int nroutes;
	__u16 codes[SQSTAT_CODES_PER_VM];
	int ncodes;
};

/* A running VM, as sqstat.c hands it over. */
struct sqstat_prom_vm {
	pid_t pid;
	const char *cmdline;
	const struct sqstat_totals *totals;
	__u64 start_wall;		/* when it started, seconds since the epoch */
	struct sqstat_series *series;	/* its routes and codes admitted so far */
};

/* What one scrape or file shows: the running VMs, the BPF side's maps, and the rows the
 * table dropped (sqstat_dropped_vms_total). */
struct sqstat_metrics {
	struct sqstat_bpf *skel;
	struct sqstat_prom_vm *vms;
	size_t nvms;
	__u64 dropped_vms;
};

/* --prom: the metrics written to a new temporary file beside path (a random name, never
 * a planted link: sq_file_replace) and renamed over it, so that node_exporter never
 * reads half a file. Mode 0644: node_exporter's textfile collector runs as another
 * user. 0, or -1 after saying why. */
int sqstat_write_prom(const char *path, const struct sqstat_metrics *m);

/* A scrape's metrics, as of the moment it is answered. */
typedef const struct sqstat_metrics *(*sqstat_scrape_fn)(void *ctx);

/* --listen: the server of /metrics at addr, its socket watched by loop; each scrape is
 * answered with what scrape(ctx) hands over then. NULL (said why) if it cannot listen. */
struct sq_http *sqstat_serve(struct sq_loop *loop, const char *addr, sqstat_scrape_fn scrape, void *ctx);

#endif
