// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_merge.c - libFuzzer target: sqflow --merge (tools/sqflow_merge.c, with sqjson.c and
 * sqjson_write.c) on an arbitrary file given as the browser's trace. Whatever the file
 * holds, the merge either refuses it (and writes nothing) or writes events that, between
 * the server's own, still make one JSON array of objects; its counts must agree (no more
 * fetches than measures, linked within what the requests allow, inside within linked).
 * A crash, a sanitizer report or a broken promise (abort) is a finding.
 *
 * The input is the file's bytes (a memfd, read through /proc/self/fd as sqflow reads a
 * path). The server's side is four fixed requests whose trace ids and parent spans are
 * those of fuzz/seeds/merge/'s fetches, so that mutations of the seeds reach the linking. */
#define _GNU_SOURCE
#include "sqflow_merge.h"
#include "sqjson.h"
#include "fuzz_watchdog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define check(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_merge: broken: %s\n", #cond); abort(); } } while (0)

/* The seeds' fetches: trace 4bf92f3577b34da6a3ce929d0e0e47NN, span 00f067aa0ba902NN. */
static void requests(struct sqflow_merge_request *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		r[i] = (struct sqflow_merge_request){
			.trace_hi = 0x4bf92f3577b34da6ULL, .trace_lo = 0xa3ce929d0e0e4700ULL + i + 1,
			.parent = 0x00f067aa0ba90200ULL + i + 1, .span = 0x1000 + i,
			.begin_ns = 5000000000ULL + i * 1000000, .end_ns = 5000500000ULL + i * 1000000,
			.pid = 77, .tid = 1 + (__u32)i,
		};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sqflow_merge_request reqs[4];
	struct sqflow_merge_stats st;
	char path[64], err[512], perr[160];
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	int fd;

	fuzz_watchdog_arm(5000);
	fd = memfd_create("trace", MFD_CLOEXEC);
	check(fd >= 0);
	check(write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	requests(reqs, 4);
	check((f = open_memstream(&out, &len)) != NULL);
	fputs("[{}", f);	/* the server's slices, before the merge's ",\n"-led events */
	if (sqflow_merge_browser(f, path, reqs, 4, &st, err, sizeof(err)) == 0) {
		struct sq_jv *root;

		fputs("]", f);
		fclose(f);
		root = sq_jv_parse(out, len, perr, sizeof(perr));
		if (!root) {
			fprintf(stderr, "fuzz_merge: what the merge wrote is not JSON: %s\n", perr);
			abort();
		}
		check(root->type == SQ_JSON_ARRAY);
		for (const struct sq_jv *e = sq_jv_first(root); e; e = e->next)
			check(e->type == SQ_JSON_OBJECT);
		check(st.inside <= st.linked && st.ended_after <= st.inside);
		/* one fetch per trace and parent span: a request is linked to each fetch of it */
		check(st.linked <= st.fetches * 4);
		sq_jv_free(root);
	} else {
		fclose(f);
		check(len == 3);	/* refused: nothing written */
		check(err[0] != '\0');
	}
	free(out);
	close(fd);
	fuzz_watchdog_disarm();
	return 0;
}
