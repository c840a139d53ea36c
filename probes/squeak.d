/* SPDX-License-Identifier: BSD-2-Clause */
/* Two return probes, one semaphore: see "Semaphores" below (usdt.awk reads these lines). */
#pragma sqvm semaphore block__return method__return
/* The record switches share their batch probes' semaphores (below, after sample__batch). */
#pragma sqvm semaphore sched__records sched__batch
#pragma sqvm semaphore req__records req__batch
#pragma sqvm semaphore io__records io__batch
#pragma sqvm semaphore sample__records sample__batch

/*
 * squeak.d - the "squeak" USDT provider of sqvm: the contract between the VM and
 * every tool. The build generates build/gen/squeak_probes.h (the sites, as 5-byte
 * nops with SDT notes, and the semaphores) from this file with probes/usdt.awk;
 * tests/probes.sh checks that the ELF notes of build/sqvm match it. probes/README.md documents
 * every probe, its arguments and units, where it fires and its stability.
 *
 * Conventions: strings are NUL-terminated bytes owned by the VM (class names,
 * selectors, process names); sizes are bytes; durations nanoseconds; "frame" is
 * the address of the activation's frame (unique while it is active).
 */

provider squeak {
	/* The VM starts (after bootstrap) and exits. */
	/* debugoffsets: the run-time address of sqvm_debug_offsets (probes/debug_offsets.h),
	 * so that a system-wide tool can walk the stacks of a VM that starts after it. */
	probe vm__start(char *version, uintptr_t debugoffsets);
	probe vm__exit(int status);

	/* A class was loaded: its name and the file it came from. */
	probe class__load(char *classname, char *path);

	/* The four call probes stay together and in this order: the VM checks their
	 * semaphores with one load (vm/probes.h). */
	/* A method is activated / returns (normally, by ^ from a block, or unwound).
	 * depth: frames on the process's Smalltalk stack, this one included (1 is the
	 * outermost), the same for an activation's entry and its return. */
	probe method__entry(char *receiverclass, char *selector, char *definingclass, uintptr_t frame, uint32_t depth);
	probe method__return(char *receiverclass, char *selector, char *definingclass, uintptr_t frame, uint32_t depth);

	/* A block is activated / returns; selector and defining class are its home method's. */
	probe block__entry(char *receiverclass, char *selector, char *definingclass, uintptr_t frame, uint32_t depth);
	probe block__return(char *receiverclass, char *selector, char *definingclass, uintptr_t frame, uint32_t depth);

	/* The call events as batches of records (probes/README.md, "Event batches"): while
	 * this probe is enabled the VM writes each entry and return (and each process
	 * switch) as a record into a buffer in its memory and fires call__batch once per
	 * batch. records: the first record's address; count: how many. Its semaphore is the
	 * fourth of the call probes' word (the two return probes share one). */
	probe call__batch(uintptr_t records, uint32_t count);

	/* The two allocation probes: the exact one's semaphore is tested after every
	 * allocation, the sampler's only by the allocation slow path (vm/probes.h).
	 * Every object the program creates; the allocating method is the running one. */
	probe object__alloc(char *classname, uint64_t bytes, char *allocclass, char *allocselector);

	/* Every allocation as a record, in batches (as call__batch). Its semaphore follows
	 * object__alloc's: the allocation gate tests both with one compare. */
	probe alloc__batch(uintptr_t records, uint32_t count);

	/* One allocation in about every N bytes (--alloc-sample N); weight is the bytes it stands for. */
	probe object__alloc__sample(char *classname, uint64_t bytes, char *allocclass, char *allocselector, uint64_t weight);

	/* Young (incremental) and full collections. */
	probe gc__incremental__begin(uint64_t seq, uint64_t youngbytes, uint64_t oldbytes);
	probe gc__incremental__end(uint64_t seq, uint64_t pausens, uint64_t youngbefore, uint64_t youngafter,
	                           uint64_t oldbefore, uint64_t oldafter, uint64_t survived, uint64_t tenured,
	                           uint64_t freed, uint64_t remembered);
	probe gc__full__begin(uint64_t seq, uint64_t youngbytes, uint64_t oldbytes);
	probe gc__full__end(uint64_t seq, uint64_t pausens, uint64_t youngbefore, uint64_t youngafter,
	                    uint64_t oldbefore, uint64_t oldafter, uint64_t survived, uint64_t tenured,
	                    uint64_t freed, uint64_t remembered);

	/* Green processes: the scheduler transfers control; a process is created; it ends. */
	probe process__activate(uint64_t id, char *name, int priority);
	probe process__create(uint64_t id, char *name, int priority);
	probe process__exit(uint64_t id, char *name);
	/* A process is put on its ready queue. reason: 0 resumed (its first run too),
	 * 1 a Semaphore it waited on was signalled, 2 its Delay expired, 3 it was running
	 * and yielded or was preempted, 4 its wait on a file descriptor ended (io__ready). */
	probe process__ready(uint64_t id, char *name, int reason);
	/* The running process blocks: on a Semaphore (semaphore: the Semaphore's identity
	 * hash, timeoutns 0) or a Delay (semaphore 0, timeoutns: the Delay's length). */
	probe process__wait(uint64_t id, char *name, uint64_t semaphore, uint64_t timeoutns);
	/* The running process blocks on a file descriptor until it is ready for op (0 read,
	 * 1 write, 2 accept, 3 connect), for at most timeoutns (0: no limit); and the wait
	 * ends: the descriptor is ready or was closed (timedout 0), or the time passed
	 * (timedout 1). process__ready (reason 4) follows io__ready. */
	probe io__wait(uint64_t id, char *name, int fd, int op, uint64_t timeoutns);
	probe io__ready(uint64_t id, char *name, int fd, int op, int timedout);

	/* Fired from Smalltalk: Probe fire: 'name' with: 42 / Probe fire: 'name' withString: 'text'. */
	probe user__probe(char *name, int64_t arg);
	probe user__probe__str(char *name, char *arg);

	/* Requests, from Smalltalk: id := Probe beginRequest: 'GET /kv' ... Probe endRequest: id
	 * status: 200. id: 1, 2, ... per VM; route: the route as given (interned: the same
	 * route has the same address for the VM's life); process: the id of the green process
	 * that began it (process__activate's), which owns it. status: the program's, or -1
	 * when the process ended with the request open, -2 when the VM exited. */
	probe request__begin(uint64_t id, char *route, uint64_t process);
	probe request__end(uint64_t id, char *route, uint64_t process, int status);
	/* Right after request__begin, for a request that arrived with a valid W3C
	 * traceparent (Probe beginRequest:traceparent:): its 16-byte trace id as two
	 * big-endian halves, the caller's span (parent-id) and the request's own span,
	 * which the VM made and traceresponse carries back. */
	probe request__trace(uint64_t id, uint64_t tracehi, uint64_t tracelo, uint64_t parent, uint64_t span);

	/* The scheduler's events as batches of records (as call__batch): while it is enabled
	 * the VM writes each process__activate, _create, _exit, _ready, _wait and io__wait
	 * as a record (probes/event_batch.h) and fires sched__batch once per batch. (An
	 * io__ready's record is io__batch's: process__ready, reason 4, says the same here.
	 * A request's are req__batch's.) */
	probe sched__batch(uintptr_t records, uint32_t count);

	/* The records of the requests' tools (sqreq): while it is enabled the VM writes
	 * each request__begin and request__end, and the scheduler's records of a process
	 * while it has a request open (and the process__activate that ends one's run),
	 * and fires req__batch once per batch; the other processes' events, no request's
	 * time, cost nothing. A request that ends in the run of its process that began it
	 * is one record (SQ_EV_REQUEST_RUN): the begin waits until its process stops
	 * running. With sched__batch enabled too, both fire with every record. */
	probe req__batch(uintptr_t records, uint32_t count);

	/* The I/O primitives' system calls as batches of records (as call__batch): while it
	 * is enabled the VM writes each read, write, accept, connect, open and close of a
	 * handle as a record, with the descriptor's kind and the running process's
	 * innermost Methods, and each io__ready with its whole wait (probes/event_batch.h),
	 * and fires io__batch once per batch. */
	probe io__batch(uintptr_t records, uint32_t count);

	/* The sampler's allocations as records (as call__batch): while it is enabled the
	 * sampler runs (as while object__alloc__sample is) and the VM writes each sample as
	 * a record (SQ_EV_ALLOC_SAMPLE: object__alloc__sample's arguments, the process and
	 * the allocating Method) and fires sample__batch once per batch. For a tool that
	 * reads other batches anyway: a sample then costs a record, not a uprobe hit. */
	probe sample__batch(uintptr_t records, uint32_t count);

	/* Record switches: each shares its batch probe's semaphore and never fires (its site
	 * is in code the VM never runs). A tool attached to one gets that batch probe's
	 * records written, in the batches every enabled batch probe is handed, without that
	 * probe's uprobe hit at every flush. */
	probe sched__records();
	probe req__records();
	probe io__records();
	probe sample__records();
	/* The record ring's switch (its own semaphore; never fires): while a tool is attached,
	 * every flushed batch is also kept in a ring in the VM's memory (probes/record_ring.h,
	 * found through sqvm_debug_offsets.record_ring), which the tool polls from outside.
	 * With the switches above, a tool reads every record it wants at no uprobe hit at all
	 * (sqslow). */
	probe ring__records();

	/* A message was not understood; a primitive failed (before the error is raised). */
	probe method__dnu(char *receiverclass, char *selector);
	probe primitive__fail(char *receiverclass, char *primitive, char *reason);

	/* An exception is signalled: Exception>>signal starts its handler search (so also
	 * signal:, error:, the VM's errors such as ZeroDivide, and pass and outer, which
	 * signal it again), handled or not. classname: the exception's class;
	 * signallerclass, signallerselector: the method that signalled it (its defining
	 * class and selector), the innermost frame that is not the exception's own nor its
	 * class's ("" at the bottom of the stack). */
	probe exception__signal(char *classname, char *signallerclass, char *signallerselector);
};
