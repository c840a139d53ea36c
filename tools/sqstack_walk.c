// SPDX-License-Identifier: BSD-2-Clause
/* sqstack_walk.c - the walk of a Smalltalk stack read from outside; see sqstack_walk.h. */
#define _GNU_SOURCE
#include "sqstack_walk.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every frame is checked against the VM's invariants before it is believed: it lies in the
 * running process's stack memory, below the frame it called; its method's class is the
 * class table's entry at that class's own index; its ip lies in its method's bytecode;
 * the chain ends at the bottom frame (method NULL). A read of a running VM is then
 * repeated and the two compared: a stack that changed underneath is read again, and one
 * that cannot be read consistently is reported as such, never printed. */

static bool rd64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return sq_read_mem(pid, addr, v, sizeof(*v));
}

static bool rd32(pid_t pid, uint64_t addr, uint32_t *v)
{
	return sq_read_mem(pid, addr, v, sizeof(*v));
}

/* The top of the stack memory, copied in one read (one process_vm_readv): a running VM
 * changes its top frames every few nanoseconds, so reading them field by field (a system
 * call each) would almost never see them whole. Frames below the window are read one by one: a
 * frame's fields do not change while it is on the stack. */
#define STACK_WINDOW (256 << 10)

struct stack_copy {
	pid_t pid;
	uint64_t lo, hi;
	unsigned char *buf;
};

static bool frame_rd64(const struct stack_copy *sc, uint64_t addr, uint64_t *v)
{
	if (addr >= sc->lo && addr <= UINT64_MAX - 8 && addr + 8 <= sc->hi) {
		memcpy(v, sc->buf + (addr - sc->lo), 8);
		return true;
	}
	return rd64(sc->pid, addr, v);
}

/* The class table, for checking the methods of frames. */
struct classes {
	uint64_t table;
	uint32_t n;
};

/* Frame fp runs method, at ip: believe it only if method is one (its class is the class
 * table's entry at that class's index) and ip lies in its bytecode; then describe it into
 * f. STACK_OK, or STACK_TORN with why. */
static int read_frame(const struct sq_vm *vm, const struct classes *cl, uint64_t fp, uint64_t method,
		      uint64_t ip, struct frame *f, char *why, size_t why_len)
{
	const SqDebugOffsets *d = &vm->d;
	uint64_t holder, code, lines, name = 0, entry;
	uint32_t index, codelen, line;
	uint16_t flags = 0, l;
	pid_t pid = vm->pid;

	/* Methods are native memory that never moves: read them directly. */
	if (!rd64(pid, method + d->method_holder, &holder) || !rd32(pid, holder + d->class_index, &index) ||
	    index >= cl->n || !rd64(pid, cl->table + 8ULL * index, &entry) || entry != holder) {
		snprintf(why, why_len, "frame %#llx: %#llx is not a method", (unsigned long long)fp,
			 (unsigned long long)method);
		return STACK_TORN;
	}
	if (!rd64(pid, method + d->method_code, &code) || !rd32(pid, method + d->method_code_len, &codelen) ||
	    ip < code || ip > code + codelen) {
		snprintf(why, why_len, "frame %#llx: ip outside its method", (unsigned long long)fp);
		return STACK_TORN;
	}
	f->addr = fp;
	f->method = method;
	rd64(pid, method + d->method_print_name, &name);
	switch (sq_read_str(pid, name, f->name, sizeof(f->name))) {
	case -1:
		snprintf(why, why_len, "frame %#llx: unreadable method name", (unsigned long long)fp);
		return STACK_TORN;
	case -2:
		strcpy(f->name + sizeof(f->name) - 4, "...");
		break;
	}
	sq_method_where(vm, method, f->file, sizeof(f->file), &line);
	if (ip > code && rd64(pid, method + d->method_lines, &lines) && lines &&
	    sq_read_mem(pid, lines + 2 * (ip - 1 - code), &l, sizeof(l)))
		line = l;
	f->line = line;
	sq_read_mem(pid, method + d->method_flags, &flags, sizeof(flags));
	f->block = (flags & d->method_flag_block) != 0;
	return STACK_OK;
}

/* Copies the top of the stack, from fp's frame header down (STACK_WINDOW bytes at most),
 * into sc's window in one read; an empty window if it cannot. */
static void copy_top(const struct sq_vm *vm, struct stack_copy *sc, uint64_t fp, uint64_t base,
		     uint64_t limit)
{
	const SqDebugOffsets *d = &vm->d;
	uint64_t hdr = d->frame_caller;

	/* The frame header ends after its last field the reader uses. */
	if (d->frame_method > hdr) hdr = d->frame_method;
	if (d->frame_ip > hdr) hdr = d->frame_ip;
	hdr += 8;
	uint64_t hi, lo, len;

	sc->lo = sc->hi = 0;
	/* The offsets are bounded (sq_debug_offsets_ok: SQ_STRUCT_MAX), the addresses are the
	 * target's: check each sum for a wrap and the length against the window. */
	if (hdr > STACK_WINDOW || fp < base || limit > UINT64_MAX - 512 || fp >= limit + 512 ||
	    fp > UINT64_MAX - hdr)
		return;
	hi = fp + hdr;
	lo = hi - base > STACK_WINDOW ? hi - STACK_WINDOW : base;
	len = hi - lo;
	if (len > STACK_WINDOW)
		return;
	if (!sq_read_mem(vm->pid, lo, sc->buf, len))
		return;
	sc->lo = lo;
	sc->hi = hi;
}

/* One pass over the stack; STACK_TORN with why on a failed check. */
static int read_stack_once(const struct sq_vm *vm, struct frame *frames, int max, int *n,
			   bool *truncated, char *why, size_t why_len, unsigned char *window)
{
	const SqDebugOffsets *d = &vm->d;
	pid_t pid = vm->pid;
	uint64_t proc, fp, base, limit, prev = 0;
	struct stack_copy sc = { .pid = pid, .buf = window };
	struct classes cl;

	*n = 0;
	*truncated = false;
	if (!rd64(pid, d->current_process, &proc))
		return kill(pid, 0) ? STACK_GONE : (snprintf(why, why_len, "unreadable process pointer"), STACK_TORN);
	if (!proc)
		return STACK_NONE;
	if (!rd64(pid, proc + d->process_fp, &fp) || !rd64(pid, proc + d->process_stack_base, &base) ||
	    !rd64(pid, proc + d->process_stack_limit, &limit) || !rd64(pid, d->class_table, &cl.table) ||
	    !rd32(pid, d->class_count, &cl.n)) {
		snprintf(why, why_len, "unreadable process or class table");
		return STACK_TORN;
	}
	if (!fp)
		return STACK_NONE;
	copy_top(vm, &sc, fp, base, limit);
	for (;;) {
		uint64_t method, caller, ip;
		int err;

		if (fp < base || fp >= limit + 512 || (fp & 7) || (prev && fp >= prev)) {
			snprintf(why, why_len, "frame %#llx outside the stack or not below its callee",
				 (unsigned long long)fp);
			return STACK_TORN;
		}
		if (!frame_rd64(&sc, fp + d->frame_method, &method) || !frame_rd64(&sc, fp + d->frame_caller, &caller)) {
			snprintf(why, why_len, "unreadable frame");
			return STACK_TORN;
		}
		if (!method)
			return STACK_OK;	/* the bottom frame */
		if (*n == max) {
			*truncated = true;
			return STACK_OK;
		}
		if (!frame_rd64(&sc, fp + d->frame_ip, &ip)) {
			snprintf(why, why_len, "frame %#llx: %#llx is not a method", (unsigned long long)fp,
				 (unsigned long long)method);
			return STACK_TORN;
		}
		if ((err = read_frame(vm, &cl, fp, method, ip, &frames[*n], why, why_len)))
			return err;
		(*n)++;
		prev = fp;
		fp = caller;
	}
}

int sq_read_stack(const struct sq_vm *vm, struct frame *frames, int max, int *nframes,
		  bool *truncated, int tries, char *why, size_t why_len)
{
	unsigned char *window = malloc(STACK_WINDOW);
	int err = STACK_TORN;

	if (!window) {
		snprintf(why, why_len, "out of memory");
		return STACK_TORN;
	}
	for (int i = 0; i < tries; i++) {
		err = read_stack_once(vm, frames, max, nframes, truncated, why, why_len, window);
		if (err != STACK_TORN)
			break;
	}
	if (err == STACK_TORN && tries > 1) {
		size_t len = strlen(why);
		snprintf(why + len, why_len - len, " (in each of %d reads)", tries);
	}
	free(window);
	return err;
}
