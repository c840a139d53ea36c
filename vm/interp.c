// SPDX-License-Identifier: BSD-2-Clause
/* interp.c - the bytecode interpreter: dispatch loop, sends, activations and returns. */
#include "interp.h"
#include "alloc.h"
#include "gc.h"
#include "globals.h"
#include "loader.h"
#include "prims.h"
#include "probes.h"
#include "sched.h"
#include "symbol.h"
#include "unwind.h"
#include "vm.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

Process *interp_current;
Method *interp_prim;
#ifdef SQVM_OPCODE_STATS
static void opstats_dump(void);
#endif

/* ---- Method lookup: a global cache in front of the class dictionaries ---- */

#define MCACHE_SIZE 4096
typedef struct { uint32_t cls; Value sel; Method *m; } MCacheEntry;
static MCacheEntry mcache[MCACHE_SIZE];
static bool mcacheUsed;	/* an entry was filled since the last flush */

Method *interp_lookup(ClassInfo *c, Value sel)
{
    uint32_t h = (uint32_t)(((sel >> 3) ^ (c->index * 2654435761u)) & (MCACHE_SIZE - 1));
    MCacheEntry *e = &mcache[h];
    if (e->cls == c->index && e->sel == sel) return e->m;
    Method *m = class_lookup(c, sel);
    if (m) { e->cls = c->index; e->sel = sel; e->m = m; mcacheUsed = true; }
    return m;
}

/* Every class loaded flushes: at start-up, before any send, 22 whole-cache memsets
 * were 30% of its instructions. */
void interp_flush_caches(void)
{
    if (!mcacheUsed) return;
    memset(mcache, 0, sizeof mcache);
    mcacheUsed = false;
}

/* A class's methods changed (methodarray.c): no cache may answer the old ones, and a
 * special send whose primitive is gone from Integer, Double or Array becomes a plain send. */
void interp_methods_changed(void)
{
    interp_flush_caches();
    method_flush_send_caches();
    interp_check_fast_paths();
}

/* ---- Processes and frames ---- */

/* Every process's frames are roots (sched.c keeps the list). */
static void scan_roots(GCVisitFn visit) { sched_scan_roots(visit); }

void interp_init(void)
{
    gc_add_root_scanner(scan_roots, false);
#ifdef SQVM_OPCODE_STATS
    atexit(opstats_dump);
#endif
}

void interp_process_init(Process *p, Value *stack, size_t stackWords)
{
    p->stackBase = stack;
    p->stackWords = stackWords;
    p->stackEnd = stack + stackWords - 64; /* slack for DNU/perform: argument shuffles */
    p->stackLimit = p->stackEnd - unwind_stack_reserve(stackWords);
}

Process *interp_new_process(size_t stackWords)
{
    Process *p = vm_xcalloc(1, sizeof(Process));
    interp_process_init(p, vm_xmalloc(stackWords * sizeof(Value)), stackWords);
    return p;
}

size_t interp_depth(void)
{
    size_t n = 0;
    for (Frame *f = interp_current ? interp_current->fp : NULL; f && f->method; f = f->caller) n++;
    return n;
}

/* An activation would end at top, past the stack limit: a Stack overflow Error, unless
 * the process is handling one (then it may use the reserve). */
static __attribute__((cold, noinline)) void stack_overflow(Value *top)
{
    if (unwind_overflow_allowed(interp_current, top)) return;
    interp_error("Stack overflow (depth %zu)", interp_depth());
}

/* Pushes an activation of m just above its arguments; the caller is the current frame.
 * The call probes are checked by the caller: the dispatch loop's send together with
 * its safe point (ACTIVATION_SAFE_POINT), everybody else with activate(). */
static inline __attribute__((always_inline)) Frame *push_frame(Process *p, Method *m, Value *args, uint32_t nargs, Value closure)
{
    /* nil and the method's sizes in registers: the stores into the new frame could
     * alias VM.nil or m's fields for all gcc knows, which reloaded them per local */
    Value nil = VM.nil;
    uint32_t nlocals = m->nlocals;
    Frame *caller = p->fp;
    Value *base = args + nargs + 1;
    caller->sp = base;
    Frame *f = (Frame *)base;
    if (UNLIKELY(f->locals + nlocals + m->maxStack > p->stackLimit)) stack_overflow(f->locals + nlocals + m->maxStack);
    f->caller = caller;
    f->method = m;
    f->ip = m->code;
    f->args = args;
    if (closure == nil) {
        f->self = args[0];
        f->ctx = VM.nil;
    } else {
        f->self = as_obj(closure)->slots[BLK_SELF];
        f->ctx = as_obj(closure)->slots[BLK_CTX];
    }
    f->closure = closure;
    f->serial = ++vm_counters.activations; /* unique: every activation counts */
    for (uint32_t i = 0; i < nlocals; i++) f->locals[i] = nil;
    f->sp = f->locals + nlocals;
    if (m->flags & MF_HAS_CTX) {
        Obj *ctx = obj_alloc(CLS_CONTEXT, FMT_FIXED, 1u + m->ctxSize, false);
        ctx->slots[CTX_OUTER] = f->ctx;
        for (uint32_t i = 1; i <= m->ctxSize; i++) ctx->slots[i] = nil;
        for (uint32_t i = 1; i <= nargs; i++)
            if (m->argCopy[i]) ctx->slots[m->argCopy[i]] = args[i];
        f->ctx = obj_value(ctx);
    }
    /* Published last, with release order: a reader that stops the thread (sqstack,
     * sqprof's sampler) finds either the old frame or the new one complete. On x86-64
     * this is a plain store. */
    __atomic_store_n(&p->fp, f, __ATOMIC_RELEASE);
    return f;
}

/* push_frame for the activations that primitives make (block value, perform:) and
 * for a program's first one. */
static Frame *activate(Process *p, Method *m, Value *args, uint32_t nargs, Value closure)
{
    Frame *f = push_frame(p, m, args, nargs, closure);
    if (sq_call_probes_enabled()) interp_trace_entry(f);
    return f;
}

PrimResult interp_activate(Method *m, Value *args, Value closure)
{
    activate(interp_current, m, args, m->nargs, closure);
    return PRIM_ACTIVATED;
}

/* Rewrites args[0..nargs] into doesNotUnderstand: selector arguments: #(args). */
static Method *prepare_dnu(Value *args, uint32_t *nargs, Value selector)
{
    vm_counters.dnus++;
    if (SQ_ENABLED(METHOD_DNU)) probe_dnu(args[0], selector);
    Value arr = array_new(*nargs);
    for (uint32_t i = 0; i < *nargs; i++) as_obj(arr)->slots[i] = args[i + 1];
    args[1] = selector;
    args[2] = arr;
    *nargs = 2;
    Method *m = interp_lookup(class_of(args[0]), SYM.doesNotUnderstand);
    if (!m) interp_error("%s does not understand #%s (and has no doesNotUnderstand:arguments:)",
                         class_of(args[0])->name, sym_cstr(selector));
    return m;
}

PrimResult interp_send(Value *args, uint32_t nargs, Value selector, ClassInfo *lookupFrom)
{
    if (args + nargs + 8 > interp_current->stackLimit) stack_overflow(args + nargs + 8);
    ClassInfo *c = lookupFrom ? lookupFrom : class_of(args[0]);
    Method *m = interp_lookup(c, selector);
    if (!m) m = prepare_dnu(args, &nargs, selector);
    /* A send compiled from source always matches; a primitive's does not have to */
    if (UNLIKELY(m->nargs != nargs))
        interp_error("%s takes %u argument%s, but %u %s given", method_print_name(m), m->nargs,
                     m->nargs == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    if (m->prim) {
        interp_current->fp->sp = args + nargs + 1;
        interp_prim = m;
        PrimResult r = m->prim(args, nargs);
        if (r != PRIM_FAIL || !m->code) return r;
    }
    if (!m->code) return prim_fail(args, "no primitive implementation");
    activate(interp_current, m, args, nargs, VM.nil);
    return PRIM_ACTIVATED;
}

/* The operands of a Double fast path other than two immediate Doubles: a boxed
 * Double, or a small integer beside a Double. */
static bool double_operands(Value a, Value b, double *x, double *y)
{
    if (is_int(a)) {
        if (!is_double(b)) return false;
        *x = (double)int_val(a);
    } else if (is_double(a)) {
        *x = double_val(a);
    } else {
        return false;
    }
    if (is_int(b)) *y = (double)int_val(b);
    else if (is_double(b)) *y = double_val(b);
    else return false;
    return true;
}

/* ---- Call probes ----
 * An untraced VM pays for the call probes one test per activation (in
 * push_frame), nothing on return and nothing for quick methods. When that test
 * sees a call probe's semaphore set, the interpreter enters traced mode: the
 * dispatch entries of the return opcodes point at handlers that fire
 * method__return / block__return, and quick methods run as real activations so
 * that they fire too. A traced return that finds no call probe enabled any more
 * leaves traced mode. The probes carry the frame's depth on its process's stack:
 * counted per process while traced, and computed by walking the stack when
 * tracing starts (or a process that was not traced meanwhile runs), so it is
 * true from the first event of a tracer that attaches to a busy VM. */

static bool callsTraced;
static void route_traced_returns(bool traced);

static uint32_t walk_depth(Frame *f)
{
    uint32_t n = 0;
    for (; f && f->method; f = f->caller) n++;
    return n;
}

static void set_calls_traced(bool on)
{
    if (callsTraced == on) return;
    callsTraced = on;
    method_set_quick_enabled(!on);
    if (on) for (Process *q = sched_all_processes(); q; q = q->allNext) q->traceDepth = 0;
    route_traced_returns(on);
}

void interp_trace_entry(Frame *f)
{
    Process *p = interp_current;
    if (!callsTraced) set_calls_traced(true);
    p->traceDepth = p->traceDepth ? p->traceDepth + 1 : walk_depth(f);
    probe_method_entry(f, p->traceDepth);
}

static void trace_return(Frame *f)
{
    Process *p = interp_current;
    if (!sq_call_probes_enabled()) { set_calls_traced(false); return; }
    uint32_t depth = p->traceDepth ? p->traceDepth : walk_depth(f);
    probe_method_return(f, depth);
    p->traceDepth = depth - 1;
}

void interp_trace_unwind(Frame *top, Frame *to)
{
    for (Frame *f = top; callsTraced && f != to; f = f->caller) trace_return(f);
}

/* ---- Dispatch routes: redefined kernel methods and traced returns ----
 * Every opcode has a handler named for it (op_NAME, in run()). A few handlers are
 * entered only when an opcode is routed to them instead of its own:
 *  - miss_SHAPE, one for each operand shape in SHAPE_LIST: push the operands and
 *    continue wherever the plain opcode is routed. SEND_ADD and its siblings compute
 *    Integer and Double arithmetic (SEND_AT and SEND_ATPUT Array access) without a
 *    send, which is right only while those classes answer the selector with the VM's
 *    own primitive. A kernel class file on the class path may redefine one (SOM
 *    allows it): then interp_check_fast_paths routes the plain opcode to SEND and
 *    each of its shapes to its miss_ handler.
 *  - traced_RETURN_SELF, traced_RETURN_LOCAL: fire the return probe, then return
 *    (traced mode: set_calls_traced routes the two return opcodes there).
 * route[op] is the handler that runs opcode op, and route_opcode, which changes it,
 * is the one mechanism for both. With computed goto run()'s dispatch table holds the
 * label of each opcode's route, so neither the fast paths nor the untraced returns
 * test anything; the switch build switches on route[op]. */

/* The operand shapes (opcodes.h): X(shape, its plain opcode, where its operands are) */
#define SHAPE_LIST(X)                                                                                               \
    X(SEND_ADD_L, SEND_ADD, L) X(SEND_ADD_LL, SEND_ADD, LL) X(SEND_ADD_I, SEND_ADD, I) X(SEND_ADD_LI, SEND_ADD, LI) \
    X(SEND_SUB_L, SEND_SUB, L) X(SEND_SUB_LL, SEND_SUB, LL) X(SEND_SUB_I, SEND_SUB, I) X(SEND_SUB_LI, SEND_SUB, LI) \
    X(SEND_MUL_L, SEND_MUL, L) X(SEND_MUL_LL, SEND_MUL, LL) X(SEND_MUL_I, SEND_MUL, I) X(SEND_MUL_LI, SEND_MUL, LI) \
    X(SEND_LT_L, SEND_LT, L) X(SEND_LT_LL, SEND_LT, LL) X(SEND_LT_I, SEND_LT, I) X(SEND_LT_LI, SEND_LT, LI)         \
    X(SEND_GT_L, SEND_GT, L) X(SEND_GT_LL, SEND_GT, LL) X(SEND_GT_I, SEND_GT, I) X(SEND_GT_LI, SEND_GT, LI)         \
    X(SEND_LE_L, SEND_LE, L) X(SEND_LE_LL, SEND_LE, LL) X(SEND_LE_I, SEND_LE, I) X(SEND_LE_LI, SEND_LE, LI)         \
    X(SEND_GE_L, SEND_GE, L) X(SEND_GE_LL, SEND_GE, LL) X(SEND_GE_I, SEND_GE, I) X(SEND_GE_LI, SEND_GE, LI)         \
    X(SEND_EQ_L, SEND_EQ, L) X(SEND_EQ_LL, SEND_EQ, LL) X(SEND_EQ_I, SEND_EQ, I) X(SEND_EQ_LI, SEND_EQ, LI)         \
    X(SEND_NE_L, SEND_NE, L) X(SEND_NE_LL, SEND_NE, LL) X(SEND_NE_I, SEND_NE, I) X(SEND_NE_LI, SEND_NE, LI)

/* Handlers: the opcodes' own, in opcode order (so H_op_NAME == OP_NAME), then the rest. */
typedef enum {
#define OPCODE(name, operands, effect, format) H_op_##name,
#include "opcodes.h"
#undef OPCODE
#define MISS_HANDLER(shape, plain, kind) H_miss_##shape,
    SHAPE_LIST(MISS_HANDLER)
#undef MISS_HANDLER
    H_traced_RETURN_SELF,
    H_traced_RETURN_LOCAL,
    H_bad_opcode,
    H__COUNT
} Handler;

static uint8_t route[256] = {
#define OPCODE(name, operands, effect, format) [OP_##name] = H_op_##name,
#include "opcodes.h"
#undef OPCODE
    [OP__COUNT ... 255] = H_bad_opcode,
};

/* What float_chain (in run()) does with the instruction after a Double result, in one
 * load: an _L shape of +, - or * takes the result as its receiver, the plain opcode as
 * its argument (the receiver below it on the stack); POP_LOCAL stores it; a comparison
 * (an _L shape, or a plain one after PUSH_LIT) branches on it; SEND_SQRT takes its root,
 * SEND_FDIV divides the value below it by it; anything else ends the chain with a push. After a store, an _LL shape (or PUSH_LIT and an _L shape) may start
 * the next statement's chain. chainStep[op] is chainKind[op] while op runs its own
 * handler, and CH_END while it is routed elsewhere (its selector redefined): route_opcode
 * keeps it so. */
typedef enum {
    CH_END, CH_ADD_L, CH_SUB_L, CH_MUL_L, CH_ADD, CH_SUB, CH_MUL, CH_STORE, CH_LIT,
    CH_LT_L, CH_GT_L, CH_LE_L, CH_GE_L, CH_EQ_L, CH_NE_L, CH_LT, CH_GT, CH_LE, CH_GE, CH_EQ, CH_NE,
    CH_ADD_LL, CH_SUB_LL, CH_MUL_LL, CH_FDIV, CH_SQRT,
} ChainStep;
#define CHAIN_KINDS                                                                                 \
    [OP_SEND_ADD_L] = CH_ADD_L, [OP_SEND_SUB_L] = CH_SUB_L, [OP_SEND_MUL_L] = CH_MUL_L,            \
    [OP_SEND_ADD] = CH_ADD, [OP_SEND_SUB] = CH_SUB, [OP_SEND_MUL] = CH_MUL,                        \
    [OP_POP_LOCAL] = CH_STORE, [OP_PUSH_LIT] = CH_LIT,                                             \
    [OP_SEND_LT_L] = CH_LT_L, [OP_SEND_GT_L] = CH_GT_L, [OP_SEND_LE_L] = CH_LE_L,                  \
    [OP_SEND_GE_L] = CH_GE_L, [OP_SEND_EQ_L] = CH_EQ_L, [OP_SEND_NE_L] = CH_NE_L,                  \
    [OP_SEND_LT] = CH_LT, [OP_SEND_GT] = CH_GT, [OP_SEND_LE] = CH_LE, [OP_SEND_GE] = CH_GE,        \
    [OP_SEND_EQ] = CH_EQ, [OP_SEND_NE] = CH_NE,                                                    \
    [OP_SEND_ADD_LL] = CH_ADD_LL, [OP_SEND_SUB_LL] = CH_SUB_LL, [OP_SEND_MUL_LL] = CH_MUL_LL,     \
    [OP_SEND_FDIV] = CH_FDIV, [OP_SEND_SQRT] = CH_SQRT
static const uint8_t chainKind[256] = {CHAIN_KINDS};
static uint8_t chainStep[256] = {CHAIN_KINDS};
#undef CHAIN_KINDS

#if SQVM_COMPUTED_GOTO
static const void **dispatchTable;       /* run()'s table, once run() has started */
static const void *const *handlerLabels; /* run()'s handler labels, by Handler */
#endif

static void route_opcode(Opcode op, Handler h)
{
    route[op] = (uint8_t)h;
    chainStep[op] = h == (Handler)op ? chainKind[op] : CH_END;
#if SQVM_COMPUTED_GOTO
    if (dispatchTable) dispatchTable[op] = handlerLabels[h];
#endif
}

static void route_traced_returns(bool traced)
{
    route_opcode(OP_RETURN_SELF, traced ? H_traced_RETURN_SELF : H_op_RETURN_SELF);
    route_opcode(OP_RETURN_LOCAL, traced ? H_traced_RETURN_LOCAL : H_op_RETURN_LOCAL);
}

/* The special send op becomes a plain send, and so do its operand shapes. */
static void route_plain_send(Opcode op)
{
    route_opcode(op, H_op_SEND);
#define ROUTE_MISS(shape, plain, kind) \
    if (op == OP_##plain) route_opcode(OP_##shape, H_miss_##shape);
    SHAPE_LIST(ROUTE_MISS)
#undef ROUTE_MISS
}

/* Does class index ci answer sel with the VM's own primitive (if the class is loaded)? */
static bool answers_with_primitive(uint32_t ci, Value sel)
{
    ClassInfo *c = ci < VM.numClasses ? VM.classes[ci] : NULL;
    if (!c || !c->loaded) return true;
    Method *m = class_lookup(c, sel);
    return m && !m->code && m->prim == prims_find(m->holder, sel);
}

void interp_check_fast_paths(void)
{
    /* the classes whose receivers each special send computes without a send */
    static const struct { Opcode op; const char *sel; bool onInteger, onDouble; } special[] = {
        {OP_SEND_ADD, "+", true, true}, {OP_SEND_SUB, "-", true, true}, {OP_SEND_MUL, "*", true, true},
        {OP_SEND_LT, "<", true, true}, {OP_SEND_GT, ">", true, true}, {OP_SEND_LE, "<=", true, true},
        {OP_SEND_GE, ">=", true, true}, {OP_SEND_EQ, "=", true, true}, {OP_SEND_NE, "<>", true, true},
        {OP_SEND_MOD, "%", true, false}, {OP_SEND_DIV, "/", true, false}, {OP_SEND_BITAND, "&", true, false},
        {OP_SEND_FDIV, "//", false, true}, {OP_SEND_SQRT, "sqrt", false, true},
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        Value sel = sym_intern_cstr(special[i].sel);
        bool ok = (!special[i].onInteger || answers_with_primitive(CLS_INTEGER, sel)) &&
                  (!special[i].onDouble || answers_with_primitive(CLS_DOUBLE, sel));
        if (!ok) route_plain_send(special[i].op);
    }
    if (!answers_with_primitive(CLS_TRUE, SYM.logicalAnd) || !answers_with_primitive(CLS_FALSE, SYM.logicalAnd))
        route_plain_send(OP_SEND_AND);
    if (!answers_with_primitive(CLS_TRUE, SYM.logicalOr) || !answers_with_primitive(CLS_FALSE, SYM.logicalOr))
        route_plain_send(OP_SEND_OR);
    if (!answers_with_primitive(CLS_ARRAY, SYM.at)) route_plain_send(OP_SEND_AT);
    if (!answers_with_primitive(CLS_ARRAY, SYM.atPut)) route_plain_send(OP_SEND_ATPUT);
}

/* ---- Errors and backtraces ---- */

/* Where an error in a forked process resumes the interpreter, in the next process. */
static jmp_buf *runRestart;

static void print_frame(Frame *f)
{
    Method *m = f->method;
    const char *path = m->sourcePath ? m->sourcePath : "?";
    const char *base = strrchr(path, '/');
    fprintf(stderr, "    at %s (%s:%d)\n", method_print_name(m), base ? base + 1 : path,
            method_line_at(m, f->ip));
}

void interp_print_backtrace(void) { interp_print_backtrace_from(interp_current ? interp_current->fp : NULL); }

void interp_print_backtrace_from(Frame *top)
{
    size_t depth = walk_depth(top), i = 0;
    for (Frame *f = top; f && f->method; f = f->caller, i++) {
        if (depth > 40 && i == 20) fprintf(stderr, "    ... %zu more frames ...\n", depth - 40);
        if (depth > 40 && i >= 20 && i < depth - 20) continue;
        print_frame(f);
    }
    if (!sched_active_is_main())
        fprintf(stderr, "    in process %s (id %llu)\n", sched_process_name(interp_current),
                (unsigned long long)interp_current->id);
}

#ifdef SQVM_FUZZ
/* Between two fuzzed programs: the run loop the last one left by vm_exit is gone. */
void interp_fuzz_reset(void) { runRestart = NULL; }
#endif

void interp_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    interp_raise(NULL, NULL, msg);
}

void interp_raise(Value *args, const char *className, const char *msg)
{
    /* A Smalltalk Error the program can handle, when the interpreter runs */
    if (runRestart && unwind_signal(args, className, msg)) longjmp(*runRestart, 1);
    /* Unhandled, as Exception>>defaultAction reports one: the line on stdout, after what
     * the program printed, the backtrace on stderr */
    printf("ERROR: %s\n", msg);
    fflush(stdout);
    interp_print_backtrace();
    /* An error ends only the process it happened in; the main process ends the program. */
    if (!sched_active_is_main() && runRestart) {
        sched_terminate_active();
        longjmp(*runRestart, 1);
    }
    vm_exit(1);
}

#ifdef SQVM_OPCODE_STATS
/* ---- Dispatch statistics (make OPSTATS=1) ----
 * How often each opcode is dispatched after each other one: the pairs that
 * superinstructions are chosen from (tests/bench/pairs.sh). At exit the counts are
 * appended to the file named by $SQVM_OPCODE_STATS as "previous next count" lines. */
static uint64_t opPairs[OP__COUNT + 1][OP__COUNT + 1];
static unsigned opPrev = OP__COUNT; /* OP__COUNT: a frame was entered from outside run() */

static inline void opstats_count(unsigned op)
{
    opPairs[opPrev][op < OP__COUNT ? op : OP__COUNT]++;
    opPrev = op < OP__COUNT ? op : OP__COUNT;
}

static void opstats_dump(void)
{
    const char *path = getenv("SQVM_OPCODE_STATS");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    for (unsigned a = 0; a <= OP__COUNT; a++)
        for (unsigned b = 0; b <= OP__COUNT; b++)
            if (opPairs[a][b])
                fprintf(f, "%s %s %llu\n", a < OP__COUNT ? opcode_names[a] : "-", b < OP__COUNT ? opcode_names[b] : "-",
                        (unsigned long long)opPairs[a][b]);
    fclose(f);
}
#endif

/* ---- The dispatch loop ----
 *
 * run() keeps ip, sp, fp and method in locals (registers); SAVE() writes ip and sp
 * back into the frame wherever something outside the loop may look at the stack (a
 * send, a primitive, a safe point), LOAD() takes them up again from the process's
 * current frame (after an activation elsewhere, or a process switch).
 *
 * Operands follow their opcode in the code, little-endian. A send's site index (two
 * bytes) is its last operand: a handler that falls back to a real send leaves ip AT the
 * site and jumps to the shared tail `send:`, which reads the site and moves past it
 * (so every handler falls back the same way, whatever operands it had before the site).
 *
 * The shared tails, as wren_vm.c's completeCall: `send:` finds the method (the site's
 * monomorphic inline cache, else interp_lookup: the global cache and the class chain,
 * or doesNotUnderstand:) and goes to `invoke:`, which answers a primitive or a quick
 * method in place, or pushes the frame and passes the activation safe point;
 * `do_return:` pops a frame and continues in its caller (or leaves run() at the bottom
 * frame). Every macro below is #undef'd after run(), as lvm.c does.
 *
 * The tag arithmetic (common.h): a small integer v is 2n+1, so a + (b - 1) is the
 * tagged sum, a - (b - 1) the tagged difference, and (a - 1) * n the tagged product
 * less its tag (| 1 puts it back); comparing two tagged integers as intptr_t compares
 * their values. An immediate Double has tag 10: ((a ^ 2) | (b ^ 2)) & 3 == 0 tests
 * two at once. */

#define READ8() (*ip++)
/* A 16-bit operand in one load: gcc merges the two byte loads of the portable form only
 * in some handlers (PUSH_LIT and the send sites lost it when the loop grew). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint16_t read_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
#define READ16() (ip += 2, read_u16(ip - 2))
#else
#define READ16() (ip += 2, (uint16_t)(ip[-2] | (ip[-1] << 8)))
#endif

#define SAVE() (fp->ip = ip, fp->sp = sp)
#define LOAD() (fp = p->fp, ip = fp->ip, sp = fp->sp, method = fp->method)
/* Safe points (activations, backward jumps): collect if asked, and let the
 * scheduler wake expired Delays (which may switch to another process). */
#define SAFE_POINT()                                   \
    do {                                               \
        if (UNLIKELY(vm_attention.any)) {              \
            SAVE();                                    \
            if (gc_pending) gc_collect();              \
            if (sched_attention && sched_poll()) { p = interp_current; LOAD(); } \
        }                                              \
    } while (0)
/* After the dispatch loop's own activations: the safe point and the call probes
 * (method__entry for the new frame) with one test. */
#define ACTIVATION_SAFE_POINT() \
    SQ_IF_ATTENTION_OR_CALLS(vm_attention.any, if (sq_call_probes_enabled()) interp_trace_entry(fp); SAFE_POINT())
/* A backward jump also looks at the call probes' semaphores: a loop of quick
 * sends, which never activate anything, then enters traced mode too. */
#define LOOP_SAFE_POINT() \
    SQ_IF_ATTENTION_OR_CALLS(vm_attention.any, if (sq_call_probes_enabled() && !callsTraced) set_calls_traced(true); SAFE_POINT())

/* How a handler is entered and left: labels and a jump through the table (computed
 * goto), or the cases of a switch on the opcode's route. HANDLER names any handler,
 * CASE an opcode's own; TO_ROUTE(op) continues in whatever handler op is routed to. */
#ifdef SQVM_OPCODE_STATS
#define COUNT_DISPATCH() opstats_count(*ip)
#else
#define COUNT_DISPATCH() ((void)0)
#endif
#if SQVM_COMPUTED_GOTO
#define HANDLER(name) name:
#define DISPATCH() do { COUNT_DISPATCH(); goto *dt[*ip++]; } while (0)
#define LOOP_TOP() DISPATCH();
#define TO_ROUTE(op) goto *dt[op]
#define FALLS_INTO_NEXT_HANDLER
#else
#define HANDLER(name) case H_##name:
#define DISPATCH() do { COUNT_DISPATCH(); goto loop_top; } while (0)
#define LOOP_TOP() loop_top: handler = route[*ip++]; dispatch: switch ((Handler)handler)
#define TO_ROUTE(op) do { handler = route[op]; goto dispatch; } while (0)
#define FALLS_INTO_NEXT_HANDLER __attribute__((fallthrough));
#endif
#define CASE(name) HANDLER(op_##name)

/* ---- The special binary sends ----
 * The arithmetic and comparison opcodes also come in operand shapes (opcodes.h):
 * _L, the argument a frame slot (an argument or a local); _LL, both frame slots;
 * _I, the argument a small integer. A shape's handler answers two small integers or two immediate
 * Doubles inline; anything else it pushes onto the stack and continues in the
 * plain opcode's route (with ip at the site, as there): its handler has the rest,
 * the boxed and mixed cases and the send. */
/* A shape's operands: a from the stack or a local, b from a local or the code.
 * Its miss_ handler pushes them and continues in the plain opcode's route; a shape
 * whose selector a kernel class redefined is routed there (route_plain_send). */
#define SHAPE_L(shape, plain)                                                     \
    CASE(shape) {                                                                 \
        Value a = sp[-1], b = FRAME_SLOT(fp, ip[0]);                              \
        plain##_FAST(1, 1);                                                       \
    }                                                                             \
    FALLS_INTO_NEXT_HANDLER                                                       \
    HANDLER(miss_##shape) *sp++ = FRAME_SLOT(fp, ip[0]); ip += 1; TO_ROUTE(OP_##plain);
#define SHAPE_LL(shape, plain)                                                    \
    CASE(shape) {                                                                 \
        Value a = FRAME_SLOT(fp, ip[0]), b = FRAME_SLOT(fp, ip[1]);               \
        plain##_FAST(0, 2);                                                       \
    }                                                                             \
    FALLS_INTO_NEXT_HANDLER                                                       \
    HANDLER(miss_##shape) sp[0] = FRAME_SLOT(fp, ip[0]); sp[1] = FRAME_SLOT(fp, ip[1]); sp += 2; ip += 2; TO_ROUTE(OP_##plain);
#define SHAPE_I(shape, plain)                                                     \
    CASE(shape) {                                                                 \
        Value a = sp[-1], b = int_value((int8_t)ip[0]);                           \
        plain##_FAST(1, 1);                                                       \
    }                                                                             \
    FALLS_INTO_NEXT_HANDLER                                                       \
    HANDLER(miss_##shape) *sp++ = int_value((int8_t)ip[0]); ip += 1; TO_ROUTE(OP_##plain);
#define SHAPE_LI(shape, plain)                                                    \
    CASE(shape) {                                                                 \
        Value a = FRAME_SLOT(fp, ip[0]), b = int_value((int8_t)ip[1]);            \
        plain##_FAST(0, 2);                                                       \
    }                                                                             \
    FALLS_INTO_NEXT_HANDLER                                                       \
    HANDLER(miss_##shape) sp[0] = FRAME_SLOT(fp, ip[0]); sp[1] = int_value((int8_t)ip[1]); sp += 2; ip += 2; TO_ROUTE(OP_##plain);
#define SHAPE_HANDLERS(shape, plain, kind) SHAPE_##kind(shape, plain)

/* A comparison whose next instruction is a conditional jump branches directly
 * instead of pushing a Boolean for the jump to pop. */
#define BRANCH_ON(pops, bytes, cond)                                     \
    do {                                                                 \
        bool c_ = (cond);                                                \
        ip += (bytes) + 2;                                               \
        sp -= (pops);                                                    \
        if (*ip == OP_JUMP_BACK_IF_TRUE) { /* a whileTrue: loop's test */ \
            uint16_t off_ = (uint16_t)(ip[1] | (ip[2] << 8));            \
            ip += 3;                                                     \
            if (c_) { ip -= off_; goto back_edge; }                      \
            DISPATCH();                                                  \
        }                                                                \
        if (*ip == OP_JUMP_IF_FALSE) {                                   \
            uint16_t off_ = (uint16_t)(ip[1] | (ip[2] << 8));            \
            ip += 3;                                                     \
            if (!c_) ip += off_;                                         \
            DISPATCH();                                                  \
        }                                                                \
        if (*ip == OP_JUMP_IF_TRUE) {                                    \
            uint16_t off_ = (uint16_t)(ip[1] | (ip[2] << 8));            \
            ip += 3;                                                     \
            if (c_) ip += off_;                                          \
            DISPATCH();                                                  \
        }                                                                \
        *sp++ = c_ ? VM.trueObj : VM.falseObj;                             \
        DISPATCH();                                                      \
    } while (0)

/* The Double paths: two immediate Doubles inline (no memory traffic, no
 * allocation unless the result leaves the immediate range); the mixed and boxed
 * cases through double_operands. */
#define BOTH_FLOATS(a, b) (((((a) ^ FLOAT_TAG) | ((b) ^ FLOAT_TAG)) & VALUE_TAG_MASK) == 0)
/* Two immediate Doubles a and b, combined into the slot that replaces pops
 * operands. (Decoding and encoding in the SSE registers instead, loading and
 * storing them directly, measured 10% slower on Mandelbrot: the scalar path it is.) */
#define FLOAT_ARITH(pops, bytes, dop) \
    do { facc = float_val(a) dop float_val(b); ip += (bytes) + 2; sp -= (pops); goto float_chain; } while (0)
#define RESULT(v) do { sp[-2] = (v); sp--; ip += 2; DISPATCH(); } while (0)

/* The shapes' fast paths, inline: two small integers or two immediate Doubles,
 * with pops operands to replace on the stack and bytes of operands before the
 * site. Anything else goes through the plain opcode's route. */
/* A result that the next instruction stores into a frame local goes there
 * directly ("x := a + b" is one dispatch), as a comparison branches directly. */
#define SHAPE_RESULT(pops, bytes, v)                                             \
    do {                                                                         \
        Value r_ = (v);                                                          \
        ip += (bytes) + 2;                                                       \
        sp -= (pops);                                                            \
        if (*ip == OP_POP_LOCAL) { fp->locals[ip[1]] = r_; ip += 2; DISPATCH(); } \
        *sp++ = r_;                                                              \
        DISPATCH();                                                              \
    } while (0)

#define ARITH(opname, intcode, dop)                                      \
    CASE(opname) {                                                       \
        Value a = sp[-2], b = sp[-1];                                    \
        if (LIKELY(is_int(a) & is_int(b))) { intcode(2, 0) }             \
        else if (LIKELY(BOTH_FLOATS(a, b))) FLOAT_ARITH(2, 0, dop);      \
        else {                                                           \
            double x, y;                                                 \
            if (double_operands(a, b, &x, &y)) { facc = x dop y; sp -= 2; ip += 2; goto float_chain; } \
        }                                                                \
        goto send;                                                       \
    }

#define COMPARE(opname, op)                                              \
    CASE(opname) {                                                       \
        Value a = sp[-2], b = sp[-1];                                    \
        if (LIKELY(is_int(a) & is_int(b))) BRANCH_ON(2, 0, (intptr_t)a op (intptr_t)b); \
        else if (LIKELY(BOTH_FLOATS(a, b))) BRANCH_ON(2, 0, float_val(a) op float_val(b)); \
        else {                                                           \
            double x, y;                                                 \
            if (double_operands(a, b, &x, &y)) BRANCH_ON(2, 0, x op y);  \
        }                                                                \
        goto send;                                                       \
    }

#define INT_ADD(pops, bytes) { intptr_t r; if (!__builtin_add_overflow((intptr_t)a, (intptr_t)(b - 1), &r)) SHAPE_RESULT(pops, bytes, (Value)r); }
#define INT_SUB(pops, bytes) { intptr_t r; if (!__builtin_sub_overflow((intptr_t)a, (intptr_t)(b - 1), &r)) SHAPE_RESULT(pops, bytes, (Value)r); }
#define INT_MUL(pops, bytes) { intptr_t r; if (!__builtin_mul_overflow((intptr_t)(a - 1), int_val(b), &r)) SHAPE_RESULT(pops, bytes, (Value)(r | 1)); }

#define SEND_ADD_FAST(pops, bytes) \
    if (LIKELY(is_int(a) & is_int(b))) INT_ADD(pops, bytes) else if (BOTH_FLOATS(a, b)) FLOAT_ARITH(pops, bytes, +);
#define SEND_SUB_FAST(pops, bytes) \
    if (LIKELY(is_int(a) & is_int(b))) INT_SUB(pops, bytes) else if (BOTH_FLOATS(a, b)) FLOAT_ARITH(pops, bytes, -);
#define SEND_MUL_FAST(pops, bytes) \
    if (LIKELY(is_int(a) & is_int(b))) INT_MUL(pops, bytes) else if (BOTH_FLOATS(a, b)) FLOAT_ARITH(pops, bytes, *);
#define CMP_FAST(op, pops, bytes) \
    if (LIKELY(is_int(a) & is_int(b))) BRANCH_ON(pops, bytes, (intptr_t)a op (intptr_t)b); \
    else if (BOTH_FLOATS(a, b)) BRANCH_ON(pops, bytes, float_val(a) op float_val(b));
#define SEND_LT_FAST(pops, bytes) CMP_FAST(<, pops, bytes)
#define SEND_GT_FAST(pops, bytes) CMP_FAST(>, pops, bytes)
#define SEND_LE_FAST(pops, bytes) CMP_FAST(<=, pops, bytes)
#define SEND_GE_FAST(pops, bytes) CMP_FAST(>=, pops, bytes)
#define SEND_EQ_FAST(pops, bytes) CMP_FAST(==, pops, bytes)
#define SEND_NE_FAST(pops, bytes) CMP_FAST(!=, pops, bytes)

/* FOR_NEXT and FOR_PREV: local i := i + step (1 or -1); jump back while i <= limit (>=
 * for -1). Small integers inline; Doubles and large integers through the number
 * primitives, with the same step and test. */
#define FOR_STEP(opname, step, cmp, numStep, numTest, what)                                  \
    CASE(opname) {                                                                           \
        Value *v = &fp->locals[ip[0]];                                                       \
        Value limit = fp->locals[ip[1]];                                                     \
        uint16_t off = (uint16_t)(ip[2] | (ip[3] << 8));                                     \
        intptr_t r;                                                                          \
        if (LIKELY(is_int(*v) & is_int(limit)) && !__builtin_add_overflow((intptr_t)*v, (intptr_t)(2 * (step)), &r)) { \
            *v = (Value)r;                                                                   \
            if ((intptr_t)r cmp (intptr_t)limit) {                                           \
                ip += 4 - off;                                                               \
                LOOP_SAFE_POINT();                                                           \
            } else {                                                                         \
                ip += 4;                                                                     \
            }                                                                                \
            DISPATCH();                                                                      \
        }                                                                                    \
        SAVE();                                                                              \
        Value go;                                                                            \
        if (!num_binop(numStep, *v, int_value(1), v) || !num_binop(numTest, *v, limit, &go)) \
            interp_error(what " needs numbers (got a %s)", class_of(*v)->name);              \
        if (go == VM.trueObj) {                                                              \
            ip += 4 - off;                                                                   \
            LOOP_SAFE_POINT(); /* a loop over large integers or Doubles is a loop too */     \
        } else {                                                                             \
            ip += 4;                                                                         \
        }                                                                                    \
        DISPATCH();                                                                          \
    }

/* An Integer-only special send (%, /, &, <<, ...): no Double path. */
#define INT_FAST(opname, ...)                                        \
    CASE(opname) {                                                   \
        Value a = sp[-2], b = sp[-1];                                \
        if (LIKELY(is_int(a) & is_int(b))) { __VA_ARGS__ }           \
        goto send;                                                   \
    }


static Value run(Process *p)
{
    Frame *fp;
    const uint8_t *ip;
    Value *sp;
    Method *method;
    jmp_buf restart;
    jmp_buf *savedRestart = runRestart;
    if (setjmp(restart)) p = interp_current;
    runRestart = &restart;
    fp = p->fp;
    ip = fp->ip;
    sp = fp->sp;
    method = fp->method;
    Value *args;
    uint32_t nargs;
    Method *m;
    Value result;
    SendSite *site;
    double facc; /* a Double result on its way through float_chain */
    /* float_chain's two last stored frame locals (their slots, or NO_FRESH) and values */
    enum { NO_FRESH = 1000 };
    int fresh1, fresh2;
    double fresh1Val = 0, fresh2Val = 0;


#if SQVM_COMPUTED_GOTO
    /* Every handler's label, by Handler; the table's entries are the labels of the
     * opcodes' routes (route_opcode keeps them so). */
    static const void *const handler_labels[H__COUNT] = {
#define OPCODE(name, operands, effect, format) &&op_##name,
#include "opcodes.h"
#undef OPCODE
#define MISS_LABEL(shape, plain, kind) &&miss_##shape,
        SHAPE_LIST(MISS_LABEL)
#undef MISS_LABEL
        &&traced_RETURN_SELF, &&traced_RETURN_LOCAL, &&bad_opcode,
    };
    static const void *dispatch_table[256];
    if (UNLIKELY(!dispatchTable)) {
        for (int op = 0; op < 256; op++) dispatch_table[op] = handler_labels[route[op]];
        handlerLabels = handler_labels;
        dispatchTable = dispatch_table;
    }
    const void **dt = dispatch_table;
    __asm__("" : "+r"(dt)); /* the table in a register, not an lea per dispatch (PIE) */
#else
    unsigned handler;
#endif

    LOOP_TOP()
    {
    CASE(PUSH_SELF) *sp++ = fp->self; DISPATCH();
    CASE(PUSH_NIL) *sp++ = VM.nil; DISPATCH();
    CASE(PUSH_TRUE) *sp++ = VM.trueObj; DISPATCH();
    CASE(PUSH_FALSE) *sp++ = VM.falseObj; DISPATCH();
    CASE(PUSH_0) *sp++ = int_value(0); DISPATCH();
    CASE(PUSH_1) *sp++ = int_value(1); DISPATCH();
    CASE(PUSH_INT8) *sp++ = int_value((int8_t)READ8()); DISPATCH();
    CASE(PUSH_LIT) *sp++ = method->literals[READ16()]; DISPATCH();
    CASE(PUSH_ARG) *sp++ = fp->args[READ8()]; DISPATCH();
    CASE(POP_ARG) fp->args[READ8()] = *--sp; DISPATCH();
    CASE(PUSH_LOCAL) *sp++ = fp->locals[READ8()]; DISPATCH();
    CASE(POP_LOCAL) fp->locals[READ8()] = *--sp; DISPATCH();
    CASE(PUSH_FIELD) *sp++ = as_obj(fp->self)->slots[READ8()]; DISPATCH();
    CASE(POP_FIELD) {
        Obj *o = as_obj(fp->self);
        Value v = *--sp;
        o->slots[READ8()] = v;
        gc_write_barrier(o, v);
        DISPATCH();
    }
    CASE(PUSH_CTX) {
        uint8_t depth = READ8(), idx = READ8();
        Value c = fp->ctx;
        while (depth--) c = as_obj(c)->slots[CTX_OUTER];
        *sp++ = as_obj(c)->slots[idx];
        DISPATCH();
    }
    CASE(POP_CTX) {
        uint8_t depth = READ8(), idx = READ8();
        Value c = fp->ctx;
        while (depth--) c = as_obj(c)->slots[CTX_OUTER];
        Value v = *--sp;
        as_obj(c)->slots[idx] = v;
        gc_write_barrier(as_obj(c), v);
        DISPATCH();
    }
    CASE(PUSH_GLOBAL) {
        uint16_t gi = READ16();
        Global *g = &globals[gi];
        if (LIKELY(g->defined)) { *sp++ = g->value; DISPATCH(); }
        SAVE();
        /* unknownGlobal: answers the value to use (Object's loads the class, as in SOM) */
        args = sp;
        sp[0] = fp->self;
        sp[1] = globals[gi].name;
        nargs = 1;
        sp += 2;
        m = interp_lookup(class_of(args[0]), SYM.unknownGlobal);
        if (!m) interp_error("unknown global %s", sym_cstr(globals[gi].name));
        goto invoke;
    }
    CASE(PUSH_BLOCK) {
        Method *bm = method->blocks[READ8()];
        uint32_t cls = bm->nargs < 4 ? CLS_BLOCK1 + bm->nargs : CLS_BLOCK;
        Obj *b = obj_alloc(cls, FMT_FIXED, BLK_SIZE, false);
        b->slots[BLK_METHOD] = ptr_value(bm);
        b->slots[BLK_CTX] = fp->ctx;
        b->slots[BLK_SELF] = fp->self;
        if (fp->closure == VM.nil) {
            b->slots[BLK_HOME] = ptr_value(fp);
            b->slots[BLK_SERIAL] = int_value((int64_t)fp->serial);
        } else {
            b->slots[BLK_HOME] = as_obj(fp->closure)->slots[BLK_HOME];
            b->slots[BLK_SERIAL] = as_obj(fp->closure)->slots[BLK_SERIAL];
        }
        *sp++ = obj_value(b);
        DISPATCH();
    }
    CASE(POP) sp--; DISPATCH();
    CASE(DUP) sp[0] = sp[-1]; sp++; DISPATCH();

    CASE(SEND) {
    send:
        site = &method->sites[READ16()];
    send_site: /* site read, ip past it */
        nargs = site->nargs;
        args = sp - nargs - 1;
        uint32_t cls = class_index_of(args[0]);
        if (LIKELY(site->cachedClass == cls)) {
            /* a getter or a setter in place, from the site's copy of its quick form */
            if (site->quick) {
                Obj *o = as_obj(args[0]);
                if (site->quick == QUICK_FIELD) {
                    args[0] = o->slots[site->quickIndex];
                } else {
                    o->slots[site->quickIndex] = args[1];
                    gc_write_barrier(o, args[1]);
                    /* "b vx: v." answers b for a POP: neither is needed */
                    if (*ip == OP_POP) { sp = args; ip++; DISPATCH(); }
                }
                sp = args + 1;
                DISPATCH();
            }
            m = site->cachedMethod;
        } else if (site->cachedClass2 == cls) {
            m = site->cachedMethod2;
        } else {
            m = interp_lookup(VM.classes[cls], site->selector);
            if (UNLIKELY(!m)) { SAVE(); m = prepare_dnu(args, &nargs, site->selector); sp = args + nargs + 1; goto invoke; }
            site->cachedClass2 = site->cachedClass;
            site->cachedMethod2 = site->cachedMethod;
            site->cachedClass = cls;
            site->cachedMethod = m;
            site->quick = m->quick == QUICK_FIELD || m->quick == QUICK_SETTER ? m->quick : QUICK_NONE;
            site->quickIndex = m->quickIndex;
        }
        goto invoke;
    }
    /* A unary send to a frame slot is the shape of "body x": a getter cached at the site
     * answers without the slot's push and the send's frame arithmetic (a getter is
     * unary, so the slot is its receiver). Anything else is SEND's, from the site. */
    CASE(SEND_S) {
        Value r = FRAME_SLOT(fp, ip[0]);
        site = &method->sites[read_u16(ip + 1)];
        ip += 3;
        if (site->quick == QUICK_FIELD && is_ptr(r) && obj_class_index(as_obj(r)) == site->cachedClass) {
            *sp++ = as_obj(r)->slots[site->quickIndex];
            DISPATCH();
        }
        *sp++ = r;
        goto send_site;
    }
    CASE(SUPER_SEND) {
        site = &method->sites[READ16()];
        nargs = site->nargs;
        args = sp - nargs - 1;
        if (LIKELY(site->cachedClass != 0)) {
            m = site->cachedMethod;
        } else {
            ClassInfo *from = method->holder->super;
            m = from ? interp_lookup(from, site->selector) : NULL;
            if (!m) { SAVE(); m = prepare_dnu(args, &nargs, site->selector); sp = args + nargs + 1; goto invoke; }
            site->cachedClass = from->index;
            site->cachedMethod = m;
        }
        goto invoke;
    }

    invoke:
        if (m->prim) {
            if (m->quick) { /* zero in traced mode: quick methods then get frames */
                /* getters first, with no jump through quick_apply's switch */
                if (LIKELY(m->quick == QUICK_FIELD)) args[0] = as_obj(args[0])->slots[m->quickIndex];
                else args[0] = quick_apply(m, args);
                sp = args + 1;
                DISPATCH();
            }
            SAVE();
            interp_prim = m;
            PrimResult r = m->prim(args, nargs);
            if (LIKELY(r == PRIM_OK)) { sp = args + 1; DISPATCH(); }
            if (r == PRIM_ACTIVATED) { p = interp_current; LOAD(); SAFE_POINT(); DISPATCH(); }
            if (!m->code) { prim_fail(args, "no fallback"); }
        }
        SAVE();
        /* the new frame's state from the registers it was made from, not reloaded
         * through p->fp from the stores push_frame just made (LOAD) */
        fp = push_frame(p, m, args, nargs, VM.nil);
        method = m;
        ip = m->code;
        sp = fp->locals + m->nlocals;
        ACTIVATION_SAFE_POINT();
        DISPATCH();


    ARITH(SEND_ADD, INT_ADD, +)
    ARITH(SEND_SUB, INT_SUB, -)
    ARITH(SEND_MUL, INT_MUL, *)
    COMPARE(SEND_LT, <)
    COMPARE(SEND_GT, >)
    COMPARE(SEND_LE, <=)
    COMPARE(SEND_GE, >=)
    COMPARE(SEND_EQ, ==)
    COMPARE(SEND_NE, !=)
    /* SEND_ADD_L, SEND_ADD_LL, SEND_ADD_I, ... and their miss_ handlers */
    SHAPE_LIST(SHAPE_HANDLERS)

    /* A Double that +, - or * answered, in facc, with ip past its instruction and its
     * operands popped. While the next instruction is another of them that would take
     * this result as its receiver (an _L shape: result op local) or its argument (the
     * plain opcode: value below op result), and its other operand is an immediate
     * Double, that instruction is done here too, on the unencoded Double: in
     * "zr * zi * 2.0 + ci" only the last result is encoded and stored. An expression's
     * chain of Double operations is what bounds numeric loops (each result's encoding,
     * store, load and decoding lies on the path to the next), not the instructions.
     * The results are the same: the same IEEE operations in the same order. An
     * instruction routed elsewhere (its selector redefined) is left to its route.
     *
     * The chain also runs on from one statement into the next: a result stored into a
     * frame local (POP_LOCAL) is written through, and stays in a register as one of the
     * two last stored ("fresh") locals. When the next statement starts with +, - or * on
     * two frame slots (an _LL shape) or on a Double literal and a frame slot (PUSH_LIT,
     * then an _L shape), and reads a fresh local, its chain starts here, reading the
     * fresh locals from their registers: in Mandelbrot's "zr := zrzr - zizi + cr. zi :=
     * 2.0 * zr * zi + ci. zrzr := zr * zr. zizi := zi * zi. zrzr + zizi > 4.0" the four
     * stores are made, but no later statement waits for one to be loaded and decoded. */
#define CHAIN_OPERAND(slot, out, fail)                                            \
    do {                                                                          \
        int s_ = (int8_t)(slot);                                                  \
        if (s_ == fresh1) (out) = fresh1Val;                                      \
        else if (s_ == fresh2) (out) = fresh2Val;                                 \
        else {                                                                    \
            Value v_ = FRAME_SLOT(fp, s_);                                        \
            if (!is_float(v_)) goto fail;                                         \
            (out) = float_val(v_);                                                \
        }                                                                         \
    } while (0)
#define CHAIN_OP(k, x, y) ((k) == 0 ? (x) + (y) : (k) == 1 ? (x) - (y) : (x) * (y))
    float_chain:
        fresh1 = fresh2 = NO_FRESH;
    float_chain_on:
        for (;;) {
            unsigned k = (unsigned)chainStep[*ip] - CH_ADD_L; /* ADD_L, SUB_L, MUL_L, ADD, SUB, MUL */
            if (k < 3) {
                double y;
                CHAIN_OPERAND(ip[1], y, chain_end);
                facc = CHAIN_OP(k, facc, y);
                ip += 4;
                continue;
            }
            if (k < 6) {
                Value a = sp[-1];
                if (!is_float(a)) break;
                facc = CHAIN_OP(k - 3, float_val(a), facc);
                sp--;
                ip += 3;
                continue;
            }
            break;
        }
    chain_end: {
        unsigned e = chainStep[*ip];
        if (e != CH_STORE) {
            /* The chain's Double compared and branched on, unencoded: "zrzr + zizi > 4.0"
             * (a Double literal, then a plain comparison) or "d < limit" (an _L shape on
             * a frame slot holding an immediate Double), as the comparison handlers
             * would on the encoded result: the same IEEE comparison, and its branch. The
             * literal's push, the encoding and two decodings are saved. */
            double y;
            unsigned k;
            if (e == CH_LIT && (k = (unsigned)chainStep[ip[3]] - CH_LT) < 6 && /* ip[3]: after PUSH_LIT lit16 */
                is_float(method->literals[read_u16(ip + 1)])) {
                y = float_val(method->literals[read_u16(ip + 1)]);
                ip += 4;
            } else if ((k = e - CH_LT_L) < 6 && is_float(FRAME_SLOT(fp, ip[1]))) {
                y = float_val(FRAME_SLOT(fp, ip[1]));
                ip += 2;
            } else if (e == CH_SQRT) {
                /* "(dx * dx + (dy * dy)) sqrt": the root of the unencoded Double */
                facc = sqrt(facc);
                ip += 3;
                goto float_chain_on;
            } else if (e == CH_FDIV && is_float(sp[-1])) {
                /* "dt // (d * distance)": the chain's Double is the divisor */
                facc = float_val(sp[-1]) / facc;
                sp--;
                ip += 3;
                goto float_chain_on;
            } else {
                *sp++ = double_new(facc);
                DISPATCH();
            }
            switch (k) {
            case 0: BRANCH_ON(0, 0, facc < y);
            case 1: BRANCH_ON(0, 0, facc > y);
            case 2: BRANCH_ON(0, 0, facc <= y);
            case 3: BRANCH_ON(0, 0, facc >= y);
            case 4: BRANCH_ON(0, 0, facc == y);
            default: BRANCH_ON(0, 0, facc != y);
            }
        }
    }
        result = double_new(facc);
        fp->locals[ip[1]] = result;
        fresh2 = fresh1;
        fresh2Val = fresh1Val;
        fresh1 = FRAME_SLOT_OF_LOCAL(ip[1]);
        fresh1Val = facc;
        ip += 2;
        {
            /* the next statement: x op y on two slots, one of them fresh */
            unsigned e = chainStep[*ip], k = e - CH_ADD_LL; /* ADD_LL, SUB_LL, MUL_LL */
            if (k < 3) {
                int s0 = (int8_t)ip[1], s1 = (int8_t)ip[2];
                if (s0 == fresh1 || s0 == fresh2 || s1 == fresh1 || s1 == fresh2) {
                    double x, y;
                    CHAIN_OPERAND(s0, x, chain_left); /* not Doubles: the instruction's own handler */
                    CHAIN_OPERAND(s1, y, chain_left);
                    facc = CHAIN_OP(k, x, y);
                    ip += 5;
                    goto float_chain_on;
                }
            }
            /* or a Double literal op a fresh slot */
            if (e == CH_LIT) {
                k = (unsigned)chainStep[ip[3]] - CH_ADD_L; /* ADD_L, SUB_L, MUL_L */
                int s;
                if (k < 3 && ((s = (int8_t)ip[4]) == fresh1 || s == fresh2)) {
                    Value lit = method->literals[read_u16(ip + 1)];
                    if (is_float(lit)) {
                        facc = CHAIN_OP(k, float_val(lit), s == fresh1 ? fresh1Val : fresh2Val);
                        ip += 7;
                        goto float_chain_on;
                    }
                }
            }
        }
    chain_left:
        DISPATCH();
#undef CHAIN_OPERAND
#undef CHAIN_OP


    /* // and sqrt on immediate Doubles: the quotient is what the primitive's would be
     * (an immediate Double is never zero: 0.0 is boxed), and the root of a negative is
     * NaN, as Double>>sqrt answers. Anything else: the send. The result is pushed, not
     * taken on into float_chain: two more entries to the chain cost the other
     * benchmarks 1-2% of their instructions in run()'s register allocation, for nothing
     * on NBody (its // and sqrt follow a chain, which takes them as steps). */
    CASE(SEND_FDIV) {
        Value a = sp[-2], b = sp[-1];
        if (LIKELY(BOTH_FLOATS(a, b))) { sp[-2] = double_new(float_val(a) / float_val(b)); sp--; ip += 2; DISPATCH(); }
        goto send;
    }
    CASE(SEND_SQRT) {
        Value a = sp[-1];
        if (LIKELY(is_float(a))) { sp[-1] = double_new(sqrt(float_val(a))); ip += 2; DISPATCH(); }
        goto send;
    }
    INT_FAST(SEND_BITAND, { sp[-2] = a & b; sp--; ip += 2; DISPATCH(); })
    /* false && x is false; true && aBoolean is aBoolean (anything else: the send) */
    CASE(SEND_AND) {
        Value a = sp[-2], b = sp[-1];
        if (a == VM.falseObj || (a == VM.trueObj && (b == VM.trueObj || b == VM.falseObj))) {
            sp[-2] = a == VM.falseObj ? a : b; sp--; ip += 2; DISPATCH();
        }
        goto send;
    }
    CASE(SEND_OR) {
        Value a = sp[-2], b = sp[-1];
        if (a == VM.trueObj || (a == VM.falseObj && (b == VM.trueObj || b == VM.falseObj))) {
            sp[-2] = a == VM.trueObj ? a : b; sp--; ip += 2; DISPATCH();
        }
        goto send;
    }
    INT_FAST(SEND_MOD, {
        int64_t x = int_val(a), y = int_val(b);
        if (y != 0) { sp[-2] = int_value(int_floor_mod(x, y)); sp--; ip += 2; DISPATCH(); }
    })
    INT_FAST(SEND_DIV, {
        int64_t x = int_val(a), y = int_val(b);
        if (y != 0 && !(x == SMALLINT_MIN && y == -1)) {
            sp[-2] = int_value(x / y); sp--; ip += 2; DISPATCH(); /* truncated, as num_binop's */
        }
    })
    CASE(SEND_AT) {
        Value a = sp[-2], i = sp[-1];
        if (is_ptr(a) && obj_class_index(as_obj(a)) == CLS_ARRAY && is_int(i)) {
            uint64_t k = (uint64_t)int_val(i) - 1;
            if (k < obj_num_slots(as_obj(a))) { sp[-2] = as_obj(a)->slots[k]; sp--; ip += 2; DISPATCH(); }
        }
        goto send;
    }
    CASE(SEND_ATPUT) {
        Value a = sp[-3], i = sp[-2];
        if (is_ptr(a) && obj_is_plain_array(as_obj(a)) && is_int(i)) {
            uint64_t k = (uint64_t)int_val(i) - 1;
            if (k < obj_num_slots(as_obj(a))) {
                as_obj(a)->slots[k] = sp[-1];
                gc_write_barrier(as_obj(a), sp[-1]);
                ip += 2;
                /* "flags at: k put: false." drops the answer: no push for POP to pop */
                if (*ip == OP_POP) { sp -= 3; ip++; DISPATCH(); }
                sp -= 2; DISPATCH(); /* answers the receiver, as the primitive */
            }
        }
        goto send;
    }
    CASE(IDENTICAL) sp[-2] = values_identical(sp[-2], sp[-1]) ? VM.trueObj : VM.falseObj; sp--; DISPATCH();

    CASE(JUMP) { uint16_t off = READ16(); ip += off; DISPATCH(); }
    CASE(JUMP_BACK) {
        uint16_t off = READ16();
        ip -= off;
    back_edge: /* ip at the target of a backward jump */
        LOOP_SAFE_POINT();
        DISPATCH();
    }
    CASE(JUMP_BACK_IF_TRUE) {
        uint16_t off = READ16();
        Value c = *--sp;
        if (c == VM.trueObj) { ip -= off; goto back_edge; }
        if (UNLIKELY(c != VM.falseObj)) { SAVE(); interp_error("%s is not a Boolean (in an inlined conditional)", class_of(c)->name); }
        DISPATCH();
    }
    CASE(JUMP_BACK_IF_FALSE) {
        uint16_t off = READ16();
        Value c = *--sp;
        if (c == VM.falseObj) { ip -= off; goto back_edge; }
        if (UNLIKELY(c != VM.trueObj)) { SAVE(); interp_error("%s is not a Boolean (in an inlined conditional)", class_of(c)->name); }
        DISPATCH();
    }
    CASE(JUMP_IF_TRUE) {
        uint16_t off = READ16();
        Value c = *--sp;
        if (c == VM.trueObj) ip += off;
        else if (UNLIKELY(c != VM.falseObj)) { SAVE(); interp_error("%s is not a Boolean (in an inlined conditional)", class_of(c)->name); }
        DISPATCH();
    }
    CASE(JUMP_IF_FALSE) {
        uint16_t off = READ16();
        Value c = *--sp;
        if (c == VM.falseObj) ip += off;
        else if (UNLIKELY(c != VM.trueObj)) { SAVE(); interp_error("%s is not a Boolean (in an inlined conditional)", class_of(c)->name); }
        DISPATCH();
    }
    CASE(JUMP_IF_NIL) { uint16_t off = READ16(); if (*--sp == VM.nil) ip += off; DISPATCH(); }
    CASE(JUMP_IF_NOT_NIL) { uint16_t off = READ16(); if (*--sp != VM.nil) ip += off; DISPATCH(); }
    FOR_STEP(FOR_NEXT, 1, <=, NUM_ADD, NUM_LE, "to:do:")
    FOR_STEP(FOR_PREV, -1, >=, NUM_SUB, NUM_GE, "downTo:do:")

    /* Returns. In traced mode the return opcodes are routed to their traced_
     * handlers, which enter at do_return_traced: it fires the return probe of the
     * frame that returns. */
    HANDLER(traced_RETURN_SELF) result = fp->self; goto do_return_traced;
    HANDLER(traced_RETURN_LOCAL) result = sp[-1]; goto do_return_traced;
    CASE(RETURN_SELF) result = fp->self; goto do_return;
    CASE(RETURN_LOCAL) result = sp[-1]; goto do_return;
    do_return_traced:
        SAVE();
        trace_return(fp);
    do_return: {
        Frame *caller = fp->caller;
        sp = fp->args;
        fp = caller;
        p->fp = fp;
        if (UNLIKELY(!fp->method)) {
            sp[0] = result;
            fp->sp = sp + 1;
            if (p->isMain) { runRestart = savedRestart; return result; }
            /* a forked process's block returned: the process ends */
            sched_process_finished();
            p = interp_current;
            LOAD();
            DISPATCH();
        }
        *sp++ = result;
        ip = fp->ip;
        method = fp->method;
        DISPATCH();
    }
    CASE(RETURN_NONLOCAL) {
        result = sp[-1];
        Value blk = fp->closure;
        Frame *home = value_ptr(as_obj(blk)->slots[BLK_HOME]);
        uint64_t serial = (uint64_t)int_val(as_obj(blk)->slots[BLK_SERIAL]);
        Frame *f = fp->caller;
        uint32_t crossed = 0; /* the method flags of the frames in between */
        while (f && f->method && !(f == home && f->serial == serial)) { crossed |= f->method->flags; f = f->caller; }
        if (LIKELY(f && f->method)) {
            /* through an ensure: or ifCurtailed: activation: unwind.c runs its block first */
            if (UNLIKELY(crossed & MF_ENSURE)) { SAVE(); unwind_nonlocal_return(home, result); LOAD(); DISPATCH(); }
            /* unwind every frame between here and the home method */
            while (fp != home) {
                if (UNLIKELY(callsTraced)) { SAVE(); trace_return(fp); }
                fp = fp->caller;
            }
            if (UNLIKELY(callsTraced)) goto do_return_traced;
            goto do_return;
        }
        /* The home method has returned: the block's receiver gets escapedBlock:. */
        static const uint8_t afterEscape[] = {OP_RETURN_LOCAL};
        sp[-1] = fp->self;
        sp[0] = blk;
        args = sp - 1;
        sp++;
        nargs = 1;
        ip = afterEscape;
        m = interp_lookup(class_of(args[0]), SYM.escapedBlock);
        if (!m) { SAVE(); interp_error("block escaped its home method"); }
        goto invoke;
    }
    HANDLER(bad_opcode)
#if !SQVM_COMPUTED_GOTO
    default:
#endif
        SAVE();
        vm_fatal("bad opcode %u in %s", ip[-1], method_print_name(method));
    }
}

#undef ACTIVATION_SAFE_POINT
#undef ARITH
#undef BOTH_FLOATS
#undef BRANCH_ON
#undef CASE
#undef CMP_FAST
#undef COUNT_DISPATCH
#undef COMPARE
#undef DISPATCH
#undef FLOAT_ARITH
#undef FOR_STEP
#undef FALLS_INTO_NEXT_HANDLER
#undef HANDLER
#undef INT_ADD
#undef INT_FAST
#undef INT_MUL
#undef INT_SUB
#undef LOAD
#undef LOOP_SAFE_POINT
#undef LOOP_TOP
#undef READ16
#undef READ8
#undef RESULT
#undef SAFE_POINT
#undef SAVE
#undef SEND_ADD_FAST
#undef SEND_EQ_FAST
#undef SEND_GE_FAST
#undef SEND_GT_FAST
#undef SEND_LE_FAST
#undef SEND_LT_FAST
#undef SEND_MUL_FAST
#undef SEND_NE_FAST
#undef SEND_SUB_FAST
#undef SHAPE_HANDLERS
#undef SHAPE_I
#undef SHAPE_L
#undef SHAPE_LI
#undef SHAPE_LL
#undef SHAPE_RESULT
#undef TO_ROUTE

/* The bottom frame of p's stack (method NULL) with args[0..nargs] above it. */
static Value *start_stack(Process *p, Value *args, uint32_t nargs)
{
    Frame *base = (Frame *)p->stackBase;
    memset(base, 0, sizeof(Frame));
    base->self = base->ctx = base->closure = VM.nil;
    for (uint32_t i = 0; i <= nargs; i++) base->locals[i] = args[i];
    base->sp = base->locals + nargs + 1;
    p->fp = base;
    return base->locals;
}

Value interp_run_send(Process *p, Value selector, Value *args, uint32_t nargs)
{
    Process *saved = interp_current;
    interp_current = p;
    Value *slots = start_stack(p, args, nargs);
    PrimResult r = interp_send(slots, nargs, selector, NULL);
    Value result = r == PRIM_OK ? slots[0] : run(p);
    interp_current = saved;
    return result;
}

Value interp_run_method(Process *p, Method *m, Value *args)
{
    Process *saved = interp_current;
    interp_current = p;
    activate(p, m, start_stack(p, args, m->nargs), m->nargs, VM.nil);
    Value result = run(p);
    interp_current = saved;
    return result;
}
