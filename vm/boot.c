// SPDX-License-Identifier: BSD-2-Clause
/* boot.c - the VM's start and its end: vm_boot brings the parts up in the order they
 * need each other, vm_exit ends the program the one way that tells the tools. */
#include "vm.h"
#include "bigint.h"
#include "gc.h"
#include "interp.h"
#include "interrupt.h"
#include "loader.h"
#include "probes.h"
#include "request.h"
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>

Process *vm_boot(const GCConfig *gc, uint64_t allocSampleBytes, size_t stackWords)
{
    gc_init(gc);
    big_stop = &interrupt_pending; /* Ctrl-C and the fuzz budget end long LargeInteger loops */
#ifdef SQVM_FUZZ
    big_fuzz_poll = interrupt_fuzz_spend_work;
#endif
    probes_init(allocSampleBytes);
    interp_init();
    loader_bootstrap();
    Process *p = interp_new_process(stackWords);
    interp_current = p;
    sched_init(p);
    sched_main_object();
    return p;
}

#ifdef SQVM_FUZZ
/* Fuzz builds (fuzz/): the harness runs many programs in one process, so the end of a
 * program returns to it instead of ending the process (a program that runs past its
 * time budget is ended through interrupt.h). */
jmp_buf *vm_fuzz_exit;
#endif

void vm_exit(int status)
{
    request_vm_exit();
    record_flush_pending(); /* before vm__exit: a tool that ends on it has every event */
    if (SQ_ENABLED(VM_EXIT)) probe_vm_exit(status);
    fflush(stdout);
#ifdef SQVM_FUZZ
    if (vm_fuzz_exit) longjmp(*vm_fuzz_exit, 1);
#endif
    if (vm_options.gcStats) gc_print_stats();
    exit(status);
}
