// SPDX-License-Identifier: BSD-2-Clause
/* drain_test.c - sq_loop_drain (tools/sqloop.c) with a budget, against a ring buffer that
 * a BPF program (tests/unit/ringflood.bpf.c, run from a thread with BPF_PROG_TEST_RUN)
 * fills faster than it is read: the drain must return after its budget of batches, not
 * consume for as long as records come (review finding 19: sqstat's scrapes and refreshes
 * drained until the buffer was empty, which a flooding target could keep from ever
 * happening). Needs root; says why it skips without BPF. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqloop.h"

#define BUDGET 16

static atomic_bool stop;
static atomic_ulong produced;
static unsigned long consumed;

/* A reader slower than the producer: a little work per record, as a tool's handler does. */
static int on_record(void *ctx, void *data, size_t size)
{
	volatile unsigned spin = 0;

	(void)ctx;
	(void)data;
	(void)size;
	for (int i = 0; i < 200; i++)
		spin += i;
	consumed++;
	return sq_rb_yield();
}

static void *producer(void *arg)
{
	int fd = *(int *)arg;
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	while (!atomic_load(&stop))
		if (bpf_prog_test_run_opts(fd, &opts) == 0)
			atomic_fetch_add(&produced, 64);
	return NULL;
}

static void too_long(int sig)
{
	(void)sig;
	static const char msg[] = "drain_test: sq_loop_drain did not return within 10 s under a flood\n";
	write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

int main(int argc, char **argv)
{
	const char *obj_path = argc > 1 ? argv[1] : "build/tests/ringflood.bpf.o";
	struct sq_loop l = SQ_LOOP_INIT;
	struct bpf_object *obj;
	struct bpf_program *prog;
	pthread_t t;
	int prog_fd;

	libbpf_set_print(NULL);
	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj || bpf_object__load(obj)) {
		printf("skip: cannot load %s (%s): BPF needs root\n", obj_path, strerror(errno));
		return 77;
	}
	prog = bpf_object__find_program_by_name(obj, "produce");
	prog_fd = bpf_program__fd(prog);
	l.rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "rb")), on_record, NULL, NULL);
	if (!l.rb)
		return 1;
	pthread_create(&t, NULL, producer, &prog_fd);
	while (atomic_load(&produced) < 200000)	/* the buffer full (more than the budget), and filling */
		usleep(1000);
	signal(SIGALRM, too_long);
	alarm(10);
	sq_loop_drain(&l, argc > 2 ? atoi(argv[2]) : BUDGET);
	alarm(0);
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	if (consumed != BUDGET * 4096UL) {
		fprintf(stderr, "drain_test: %lu records consumed, wanted %d batches of 4096\n", consumed, BUDGET);
		return 1;
	}
	printf("drain_test: %d batches (%lu records) drained of a buffer refilled meanwhile (%lu records made), then returned\n",
	       BUDGET, consumed, atomic_load(&produced));
	l.c = NULL;
	ring_buffer__free(l.rb);
	bpf_object__close(obj);
	return 0;
}
