// SPDX-License-Identifier: BSD-2-Clause
/* compiler.c - resolves names, places variables (frame or captured context) and emits bytecode. */
#include "compiler.h"
#include "globals.h"
#include "interp.h"
#include "prims.h"
#include "symbol.h"
#include "vm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The code being generated for one method or one non-inlined block. */
typedef struct Fn {
    struct Fn *outer;
    Scope *scope;
    uint8_t *code;
    uint16_t *lines;
    uint32_t len, cap;
    Value *lits;
    uint32_t nlits, capLits;
    SendSite *sites;
    uint32_t nsites, capSites;
    Method **blocks;
    uint32_t nblocks, capBlocks;
    int depth, maxDepth;
    int numLocals;
    int line;
} Fn;

typedef struct Compiler {
    ClassInfo *holder;
    const char *path;
    jmp_buf fail;
    Method *home;   /* the method being compiled (blocks point at it for names) */
    int line;       /* the method's definition, for an error that has no node */
} Compiler;

NORETURN static void cfail(Compiler *c, Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cfail(Compiler *c, Node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d:%d: error: ", c->path, n ? n->line : c->line, n ? n->col : 1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    longjmp(c->fail, 1);
}

/* ---- Name resolution ---- */

static Var *find_var(Scope *s, const char *name)
{
    for (; s; s = s->outer)
        for (int i = 0; i < s->nvars; i++)
            if (!strcmp(s->vars[i]->name, name)) return s->vars[i];
    return NULL;
}

static int find_field(ClassInfo *holder, const char *name)
{
    Value names = holder->fieldNames;
    if (names == VM.nil) return -1;
    for (size_t i = array_len(names); i-- > 0;)
        if (!strcmp(sym_cstr(as_obj(names)->slots[i]), name)) return (int)i;
    return -1;
}

static void resolve_node(Compiler *c, Node *n, Scope *s);

static void resolve_scope(Compiler *c, Scope *s)
{
    s->real = s->inlined ? s->outer->real : s;
    for (int i = 0; i < s->nbody; i++) resolve_node(c, s->body[i], s);
}

static void resolve_var(Compiler *c, Node *n, Scope *s)
{
    Var *v = find_var(s, n->name);
    if (v) {
        n->ref = REF_VAR;
        n->var = v;
        if (v->scope->real != s->real) v->captured = true;
        return;
    }
    int f = find_field(c->holder, n->name);
    if (f >= 0) {
        n->ref = REF_FIELD;
        n->field = f;
        return;
    }
    n->ref = REF_GLOBAL;
    n->lit = sym_intern_cstr(n->name);
}

static bool declares_captured(Node *blk)
{
    if (!blk || blk->kind != N_BLOCK || !blk->scope->inlined) return false;
    for (int i = 0; i < blk->scope->nvars; i++)
        if (blk->scope->vars[i]->captured) return true;
    return false;
}

/* An inlined block shares its variables' storage across runs (one per loop
 * iteration, say). When a closure captures one of them, each run needs its own
 * binding, as a real block activation has: compile a real send instead. */
static void uninline_if_captured(Compiler *c, Node *n, Scope *s)
{
    bool any = declares_captured(n->recv);
    for (int i = 0; i < n->nargs; i++) any |= declares_captured(n->args[i]);
    if (!any) return;
    n->inlined = INLINE_NONE;
    Node *blocks[3] = {n->recv, n->nargs > 0 ? n->args[0] : NULL, n->nargs > 1 ? n->args[1] : NULL};
    for (int i = 0; i < 3; i++)
        if (blocks[i] && blocks[i]->kind == N_BLOCK && blocks[i]->scope->inlined) {
            blocks[i]->scope->inlined = false;
            resolve_scope(c, blocks[i]->scope);
        }
    (void)s;
}

static void resolve_node(Compiler *c, Node *n, Scope *s)
{
    if (!n) return;
    switch (n->kind) {
    case N_VAR: resolve_var(c, n, s); break;
    case N_ASSIGN:
        resolve_var(c, n->target, s);
        if (n->target->ref == REF_GLOBAL)
            cfail(c, n->target, "cannot assign to '%s': not a variable or field", n->target->name);
        resolve_node(c, n->recv, s);
        break;
    case N_RETURN: resolve_node(c, n->recv, s); break;
    case N_SEND: case N_CASCADE:
        resolve_node(c, n->recv, s);
        for (int i = 0; i < n->nargs; i++) resolve_node(c, n->args[i], s);
        if (n->kind == N_SEND && n->inlined) uninline_if_captured(c, n, s);
        break;
    case N_BLOCK: resolve_scope(c, n->scope); break;
    default: break;
    }
}

/* ---- Placing variables ---- */

static void place_vars_of(Fn *fn, Scope *s)
{
    Scope *real = fn->scope;
    for (int i = 0; i < s->nvars; i++) {
        Var *v = s->vars[i];
        if (v->captured) {
            v->slot = 1 + real->ctxSize++;
            real->hasCtx = true;
        } else if (v->isArg && s == real) {
            v->slot = v->argIndex;
        } else {
            v->slot = fn->numLocals++;
        }
    }
}

/* Variables of inlined blocks live in the frame of the block or method that contains them. */
static void place_inlined(Fn *fn, Node *n)
{
    if (!n) return;
    if (n->kind == N_BLOCK) {
        if (!n->scope->inlined) return;
        place_vars_of(fn, n->scope);
        for (int i = 0; i < n->scope->nbody; i++) place_inlined(fn, n->scope->body[i]);
        return;
    }
    if (n->kind == N_ASSIGN || n->kind == N_RETURN) place_inlined(fn, n->recv);
    if (n->kind == N_SEND || n->kind == N_CASCADE) {
        place_inlined(fn, n->recv);
        for (int i = 0; i < n->nargs; i++) place_inlined(fn, n->args[i]);
    }
}

/* ---- Emitting ---- */

static void emit_byte(Fn *fn, uint8_t b)
{
    if (fn->len == fn->cap) {
        fn->cap = fn->cap ? fn->cap * 2 : 64;
        fn->code = vm_xrealloc(fn->code, fn->cap);
        fn->lines = vm_xrealloc(fn->lines, fn->cap * sizeof(uint16_t));
    }
    fn->lines[fn->len] = (uint16_t)(fn->line > 65535 ? 65535 : fn->line);
    fn->code[fn->len++] = b;
}

static void adjust(Fn *fn, int effect)
{
    fn->depth += effect;
    if (fn->depth > fn->maxDepth) fn->maxDepth = fn->depth;
}

static void emit_op(Fn *fn, Opcode op, int effect)
{
    emit_byte(fn, (uint8_t)op);
    adjust(fn, effect);
}

static void emit_u16(Fn *fn, uint32_t v)
{
    emit_byte(fn, (uint8_t)(v & 0xff));
    emit_byte(fn, (uint8_t)(v >> 8));
}

static uint32_t add_literal(Compiler *c, Fn *fn, Value v)
{
    for (uint32_t i = 0; i < fn->nlits; i++)
        if (fn->lits[i] == v) return i;
    if (fn->nlits == 65535) cfail(c, NULL, "too many literals in one method");
    if (fn->nlits == fn->capLits) {
        fn->capLits = fn->capLits ? fn->capLits * 2 : 8;
        fn->lits = vm_xrealloc(fn->lits, fn->capLits * sizeof(Value));
    }
    fn->lits[fn->nlits] = v;
    return fn->nlits++;
}

static uint32_t add_site(Compiler *c, Fn *fn, Value sel, int nargs)
{
    if (fn->nsites == 65535) cfail(c, NULL, "too many sends in one method");
    if (fn->nsites == fn->capSites) {
        fn->capSites = fn->capSites ? fn->capSites * 2 : 8;
        fn->sites = vm_xrealloc(fn->sites, fn->capSites * sizeof(SendSite));
    }
    SendSite *s = &fn->sites[fn->nsites];
    memset(s, 0, sizeof *s);
    s->selector = sel;
    s->nargs = (uint32_t)nargs;
    return fn->nsites++;
}

static uint32_t emit_jump(Fn *fn, Opcode op, int effect)
{
    emit_op(fn, op, effect);
    uint32_t at = fn->len;
    emit_u16(fn, 0);
    return at;
}

static void patch_jump(Compiler *c, Fn *fn, uint32_t at)
{
    uint32_t off = fn->len - (at + 2);
    if (off > 65535) cfail(c, NULL, "method too large (a jump exceeds 64 KiB)");
    fn->code[at] = (uint8_t)(off & 0xff);
    fn->code[at + 1] = (uint8_t)(off >> 8);
}

static void emit_jump_back(Compiler *c, Fn *fn, uint32_t target)
{
    emit_op(fn, OP_JUMP_BACK, 0);
    uint32_t off = fn->len + 2 - target;
    if (off > 65535) cfail(c, NULL, "method too large (a loop exceeds 64 KiB)");
    emit_u16(fn, off);
}

static void gen(Compiler *c, Fn *fn, Node *n);
static void gen_effect(Compiler *c, Fn *fn, Node *n);
static Method *compile_fn(Compiler *c, Fn *outer, Scope *s, Value selector, int line);

static int ctx_depth(Scope *from, Scope *to)
{
    int d = 0;
    for (Scope *r = from; r != to; r = r->outer->real)
        if (r->hasCtx) d++;
    return d;
}

/* FOR_NEXT (FOR_PREV) i limit back-to-body: the loop's step, test and backward jump. */
static void emit_for_step(Compiler *c, Fn *fn, Opcode op, int local, int limit, uint32_t body)
{
    emit_op(fn, op, 0);
    emit_byte(fn, (uint8_t)local);
    emit_byte(fn, (uint8_t)limit);
    uint32_t off = fn->len + 2 - body;
    if (off > 65535) cfail(c, NULL, "method too large (a loop exceeds 64 KiB)");
    emit_u16(fn, off);
}

static void gen_var_access(Compiler *c, Fn *fn, Node *n, bool store)
{
    switch (n->ref) {
    case REF_VAR: {
        Var *v = n->var;
        if (v->captured) {
            emit_op(fn, store ? OP_POP_CTX : OP_PUSH_CTX, store ? -1 : 1);
            emit_byte(fn, (uint8_t)ctx_depth(fn->scope, v->scope->real));
            if (v->slot > 255) cfail(c, n, "too many captured variables");
            emit_byte(fn, (uint8_t)v->slot);
        } else if (v->isArg && v->scope == v->scope->real) {
            emit_op(fn, store ? OP_POP_ARG : OP_PUSH_ARG, store ? -1 : 1);
            emit_byte(fn, (uint8_t)v->slot);
        } else {
            if (v->slot > 255) cfail(c, n, "too many local variables");
            emit_op(fn, store ? OP_POP_LOCAL : OP_PUSH_LOCAL, store ? -1 : 1);
            emit_byte(fn, (uint8_t)v->slot);
        }
        break;
    }
    case REF_FIELD:
        if (n->field > 255) cfail(c, n, "too many fields");
        emit_op(fn, store ? OP_POP_FIELD : OP_PUSH_FIELD, store ? -1 : 1);
        emit_byte(fn, (uint8_t)n->field);
        break;
    case REF_GLOBAL:
        emit_op(fn, OP_PUSH_GLOBAL, 1);
        emit_u16(fn, globals_index(n->lit));
        break;
    default:
        cfail(c, n, "internal: unresolved name");
    }
}

/* A hidden frame local (loop limits). */
static int new_temp(Fn *fn) { return fn->numLocals++; }

/* ---- Inlined control structures ----
 * ifTrue: and friends, and:/or: (and &&/|| with a literal block), the ifNil:
 * family, whileTrue:/whileFalse:, to:do:, downTo:do: and timesRepeat: with literal blocks
 * become jumps. Each is compiled for its context: for its value, or as a
 * statement (its value dropped: no nil pushed for a missing branch, no copy
 * of an assignment's value). A condition is compiled in test context
 * (gen_jump_if): "a and: [b]" jumps straight to the exit when a is false, and
 * a comparison right before the jump is fused with it by the interpreter. */

/* A list of forward jumps to be patched to the same place. */
typedef struct Jumps {
    uint32_t at[64];
    int n;
} Jumps;

static void add_jump(Compiler *c, Node *n, Jumps *j, uint32_t at)
{
    if (j->n == 64) cfail(c, n, "condition too complex (more than 64 and:/or: branches)");
    j->at[j->n++] = at;
}

static void patch_jumps(Compiler *c, Fn *fn, Jumps *j)
{
    for (int i = 0; i < j->n; i++) patch_jump(c, fn, j->at[i]);
    j->n = 0;
}

/* Whether the statements stmts[0..n) certainly assign v before anything reads
 * it: the first statement that mentions v is "v := expr" at the top level of
 * the block, and expr does not mention v. */
static bool mentions(Node *n, Var *v)
{
    if (!n) return false;
    switch (n->kind) {
    case N_VAR: return n->ref == REF_VAR && n->var == v;
    case N_ASSIGN: return mentions(n->target, v) || mentions(n->recv, v);
    case N_RETURN: return mentions(n->recv, v);
    case N_SEND: case N_CASCADE:
        if (mentions(n->recv, v)) return true;
        for (int i = 0; i < n->nargs; i++)
            if (mentions(n->args[i], v)) return true;
        return false;
    case N_BLOCK:
        for (int i = 0; i < n->scope->nbody; i++)
            if (mentions(n->scope->body[i], v)) return true;
        return false;
    default: return false;
    }
}

static bool assigned_first(Node **stmts, int n, Var *v)
{
    for (int i = 0; i < n; i++) {
        Node *st = stmts[i];
        if (st->kind == N_ASSIGN && st->target->ref == REF_VAR && st->target->var == v)
            return !mentions(st->recv, v);
        if (mentions(st, v)) return false;
    }
    return false;
}

/* Temporaries of an inlined block start as nil each time it runs (as in a
 * real activation), unless the block certainly assigns them first. */
static void nil_inline_temps(Compiler *c, Fn *fn, Node *blk)
{
    Scope *s = blk->scope;
    for (int i = 0; i < s->nvars; i++) {
        Var *v = s->vars[i];
        if (v->isArg || assigned_first(s->body, s->nbody, v)) continue;
        Node tmp = {.kind = N_VAR, .ref = REF_VAR, .var = v, .line = blk->line, .col = blk->col};
        emit_op(fn, OP_PUSH_NIL, 1);
        gen_var_access(c, fn, &tmp, true);
    }
}

/* An inlined block: its statements, the last for its value when value is set
 * (nil for an empty block). */
static void gen_inline_block(Compiler *c, Fn *fn, Node *blk, bool value)
{
    Scope *s = blk->scope;
    nil_inline_temps(c, fn, blk);
    for (int i = 0; i < s->nbody; i++) {
        if (value && i + 1 == s->nbody) gen(c, fn, s->body[i]);
        else gen_effect(c, fn, s->body[i]);
    }
    if (value && s->nbody == 0) emit_op(fn, OP_PUSH_NIL, 1);
}

static bool is_and(Node *n) { return n->kind == N_SEND && n->inlined == INLINE_AND; }
static bool is_or(Node *n) { return n->kind == N_SEND && n->inlined == INLINE_OR; }

static void gen_jump_if(Compiler *c, Fn *fn, Node *n, bool when, Jumps *out);

/* The last statement of an inlined block in test context (the others for effect). */
static void gen_jump_if_block(Compiler *c, Fn *fn, Node *blk, bool when, Jumps *out)
{
    Scope *s = blk->scope;
    if (s->nbody == 0) { /* the block answers nil: not a Boolean, as the jump will say */
        gen_inline_block(c, fn, blk, true);
        add_jump(c, blk, out, emit_jump(fn, when ? OP_JUMP_IF_TRUE : OP_JUMP_IF_FALSE, -1));
        return;
    }
    nil_inline_temps(c, fn, blk);
    for (int i = 0; i + 1 < s->nbody; i++) gen_effect(c, fn, s->body[i]);
    gen_jump_if(c, fn, s->body[s->nbody - 1], when, out);
}

/* Code that evaluates n as a condition and jumps (to the targets in out) when
 * it is `when`, falling through otherwise. */
static void gen_jump_if(Compiler *c, Fn *fn, Node *n, bool when, Jumps *out)
{
    if (is_and(n) || is_or(n)) {
        bool isAnd = is_and(n);
        if (isAnd != when) {
            /* "a and: [b]" is false when either is; "a or: [b]" true when either is */
            gen_jump_if(c, fn, n->recv, when, out);
            gen_jump_if_block(c, fn, n->args[0], when, out);
        } else {
            Jumps skip = {.n = 0};
            gen_jump_if(c, fn, n->recv, !when, &skip);
            gen_jump_if_block(c, fn, n->args[0], when, out);
            patch_jumps(c, fn, &skip);
        }
        return;
    }
    if (n->kind == N_TRUE || n->kind == N_FALSE) { /* [true] whileTrue: ... */
        if ((n->kind == N_TRUE) == when) add_jump(c, n, out, emit_jump(fn, OP_JUMP, 0));
        return;
    }
    gen(c, fn, n);
    add_jump(c, n, out, emit_jump(fn, when ? OP_JUMP_IF_TRUE : OP_JUMP_IF_FALSE, -1));
}

/* ifTrue:, ifFalse:, ifTrue:ifFalse:, ifFalse:ifTrue:, and:, or:, &&, || */
static void gen_if(Compiler *c, Fn *fn, Node *n, bool onTrue, bool value)
{
    Jumps other = {.n = 0};
    gen_jump_if(c, fn, n->recv, !onTrue, &other);
    gen_inline_block(c, fn, n->args[0], value);
    if (n->nargs == 2 || value) {
        uint32_t end = emit_jump(fn, OP_JUMP, 0);
        if (value) adjust(fn, -1); /* the other branch pushes its own value */
        patch_jumps(c, fn, &other);
        if (n->nargs == 2) gen_inline_block(c, fn, n->args[1], value);
        else emit_op(fn, OP_PUSH_NIL, 1);
        patch_jump(c, fn, end);
    } else {
        patch_jumps(c, fn, &other);
    }
}

/* "a and: [b]" for its value: b's value when a is true, else false. */
static void gen_and_or(Compiler *c, Fn *fn, Node *n, bool isAnd, bool value)
{
    if (!value) { gen_if(c, fn, n, isAnd, false); return; }
    Jumps shortcut = {.n = 0};
    gen_jump_if(c, fn, n->recv, !isAnd, &shortcut);
    gen_inline_block(c, fn, n->args[0], true);
    uint32_t end = emit_jump(fn, OP_JUMP, 0);
    adjust(fn, -1);
    patch_jumps(c, fn, &shortcut);
    emit_op(fn, isAnd ? OP_PUSH_FALSE : OP_PUSH_TRUE, 1);
    patch_jump(c, fn, end);
}

/* ifNil:, ifNotNil:, ifNil:ifNotNil:, ifNotNil:ifNil: with blocks of no
 * argument: the receiver tested with ==. For its value, "x ifNil: [b]" is x
 * when x is not nil, and "x ifNotNil: [b]" is nil when x is nil. */
static void gen_if_nil(Compiler *c, Fn *fn, Node *n, bool onNil, bool value)
{
    gen(c, fn, n->recv);
    if (n->nargs == 1 && value) emit_op(fn, OP_DUP, 1);
    uint32_t skip = emit_jump(fn, onNil ? OP_JUMP_IF_NOT_NIL : OP_JUMP_IF_NIL, -1);
    if (n->nargs == 1 && value) emit_op(fn, OP_POP, -1);
    gen_inline_block(c, fn, n->args[0], value);
    if (n->nargs == 2) {
        uint32_t end = emit_jump(fn, OP_JUMP, 0);
        if (value) adjust(fn, -1);
        patch_jump(c, fn, skip);
        gen_inline_block(c, fn, n->args[1], value);
        patch_jump(c, fn, end);
    } else {
        patch_jump(c, fn, skip);
    }
}

/* The jumps in j, emitted forward (JUMP, JUMP_IF_TRUE, JUMP_IF_FALSE), made backward
 * jumps to target. */
static void patch_jumps_back(Compiler *c, Fn *fn, Jumps *j, uint32_t target)
{
    for (int i = 0; i < j->n; i++) {
        uint32_t at = j->at[i];
        uint8_t *op = &fn->code[at - 1];
        *op = *op == OP_JUMP ? OP_JUMP_BACK : *op == OP_JUMP_IF_TRUE ? OP_JUMP_BACK_IF_TRUE : OP_JUMP_BACK_IF_FALSE;
        uint32_t off = at + 2 - target;
        if (off > 65535) cfail(c, NULL, "method too large (a loop exceeds 64 KiB)");
        fn->code[at] = (uint8_t)(off & 0xff);
        fn->code[at + 1] = (uint8_t)(off >> 8);
    }
    j->n = 0;
}

/* "[c] whileTrue: [b]" with its test at the bottom: JUMP to the test; the body; the
 * test, which jumps back to the body while c holds (JUMP_BACK_IF_TRUE, fused with a
 * comparison before it). One dispatch an iteration fewer than a test at the top and
 * a JUMP_BACK. */
static void gen_while(Compiler *c, Fn *fn, Node *n, bool whileTrue, bool value)
{
    uint32_t entry = emit_jump(fn, OP_JUMP, 0);
    uint32_t body = fn->len;
    if (n->nargs == 1) gen_inline_block(c, fn, n->args[0], false);
    patch_jump(c, fn, entry);
    Jumps again = {.n = 0};
    gen_jump_if_block(c, fn, n->recv, whileTrue, &again);
    patch_jumps_back(c, fn, &again, body);
    if (value) emit_op(fn, OP_PUSH_NIL, 1);
}

/* A loop's first test, "local <= local" (or >= for a loop down), as one SEND_LE_LL
 * (SEND_GE_LL), or a plain SEND_LE (SEND_GE) when the locals are too far for slots. */
static void emit_cmp_locals(Compiler *c, Fn *fn, bool down, int a, int b)
{
    uint32_t site = add_site(c, fn, down ? SYM.ge : SYM.le, 1);
    int sa = FRAME_SLOT_OF_LOCAL(a), sb = FRAME_SLOT_OF_LOCAL(b);
    if (sa > 127 || sb > 127) {
        emit_op(fn, OP_PUSH_LOCAL, 1);
        emit_byte(fn, (uint8_t)a);
        emit_op(fn, OP_PUSH_LOCAL, 1);
        emit_byte(fn, (uint8_t)b);
        emit_op(fn, down ? OP_SEND_GE : OP_SEND_LE, -1);
        emit_u16(fn, site);
        return;
    }
    emit_op(fn, down ? OP_SEND_GE_LL : OP_SEND_LE_LL, 2);
    adjust(fn, -1);
    emit_byte(fn, (uint8_t)sa);
    emit_byte(fn, (uint8_t)sb);
    emit_u16(fn, site);
}

/* "a to: b do: [:i | ...]": i counts up from a while i <= b; the value is a.
 * "a downTo: b do: [:i | ...]" (down): i counts down from a while i >= b. */
static void gen_to_do(Compiler *c, Fn *fn, Node *n, bool value, bool down)
{
    Node *blk = n->args[1];
    Var *iv = blk->scope->vars[0];
    Node ivar = {.kind = N_VAR, .ref = REF_VAR, .var = iv, .line = blk->line, .col = blk->col};
    int limit = new_temp(fn);
    gen(c, fn, n->recv);
    if (value) emit_op(fn, OP_DUP, 1);
    gen_var_access(c, fn, &ivar, true);
    gen(c, fn, n->args[0]);
    emit_op(fn, OP_POP_LOCAL, -1);
    emit_byte(fn, (uint8_t)limit);
    uint32_t top = fn->len;
    if (!iv->captured) {
        emit_cmp_locals(c, fn, down, iv->slot, limit);
    } else {
        gen_var_access(c, fn, &ivar, false);
        emit_op(fn, OP_PUSH_LOCAL, 1);
        emit_byte(fn, (uint8_t)limit);
        emit_op(fn, down ? OP_SEND_GE : OP_SEND_LE, -1);
        emit_u16(fn, add_site(c, fn, down ? SYM.ge : SYM.le, 1));
    }
    uint32_t exit = emit_jump(fn, OP_JUMP_IF_FALSE, -1);
    uint32_t body = fn->len;
    gen_inline_block(c, fn, blk, false);
    if (!iv->captured) {
        emit_for_step(c, fn, down ? OP_FOR_PREV : OP_FOR_NEXT, iv->slot, limit, body);
    } else {
        gen_var_access(c, fn, &ivar, false);
        emit_op(fn, OP_PUSH_1, 1);
        emit_op(fn, down ? OP_SEND_SUB : OP_SEND_ADD, -1);
        emit_u16(fn, add_site(c, fn, down ? SYM.minus : SYM.plus, 1));
        gen_var_access(c, fn, &ivar, true);
        emit_jump_back(c, fn, top);
    }
    patch_jump(c, fn, exit);
}

/* "n timesRepeat: [...]": the value is n. */
static void gen_times_repeat(Compiler *c, Fn *fn, Node *n, bool value)
{
    int count = new_temp(fn), limit = new_temp(fn);
    gen(c, fn, n->recv);
    if (value) emit_op(fn, OP_DUP, 1);
    emit_op(fn, OP_POP_LOCAL, -1);
    emit_byte(fn, (uint8_t)limit);
    emit_op(fn, OP_PUSH_1, 1);
    emit_op(fn, OP_POP_LOCAL, -1);
    emit_byte(fn, (uint8_t)count);
    emit_cmp_locals(c, fn, false, count, limit);
    uint32_t exit = emit_jump(fn, OP_JUMP_IF_FALSE, -1);
    uint32_t body = fn->len;
    gen_inline_block(c, fn, n->args[0], false);
    emit_for_step(c, fn, OP_FOR_NEXT, count, limit, body);
    patch_jump(c, fn, exit);
}

static void gen_inlined_send(Compiler *c, Fn *fn, Node *n, bool value)
{
    switch (n->inlined) {
    case INLINE_IF_TRUE: gen_if(c, fn, n, true, value); break;
    case INLINE_IF_FALSE: gen_if(c, fn, n, false, value); break;
    case INLINE_AND: gen_and_or(c, fn, n, true, value); break;
    case INLINE_OR: gen_and_or(c, fn, n, false, value); break;
    case INLINE_IF_NIL: gen_if_nil(c, fn, n, true, value); break;
    case INLINE_IF_NOT_NIL: gen_if_nil(c, fn, n, false, value); break;
    case INLINE_WHILE_TRUE: gen_while(c, fn, n, true, value); break;
    case INLINE_WHILE_FALSE: gen_while(c, fn, n, false, value); break;
    case INLINE_TO_DO: gen_to_do(c, fn, n, value, false); break;
    case INLINE_DOWN_TO_DO: gen_to_do(c, fn, n, value, true); break;
    case INLINE_TIMES_REPEAT: gen_times_repeat(c, fn, n, value); break;
    case INLINE_NONE: cfail(c, n, "internal: unknown inlined selector");
    }
}

/* Binary sends with a fast path in the interpreter (unary sqrt: gen_send). */
static Opcode special_op(Value sel)
{
    if (sel == SYM.plus) return OP_SEND_ADD;
    if (sel == SYM.minus) return OP_SEND_SUB;
    if (sel == SYM.times) return OP_SEND_MUL;
    if (sel == SYM.lt) return OP_SEND_LT;
    if (sel == SYM.gt) return OP_SEND_GT;
    if (sel == SYM.le) return OP_SEND_LE;
    if (sel == SYM.ge) return OP_SEND_GE;
    if (sel == SYM.eq) return OP_SEND_EQ;
    if (sel == SYM.ne) return OP_SEND_NE;
    if (sel == SYM.mod) return OP_SEND_MOD;
    if (sel == SYM.div) return OP_SEND_DIV;
    if (sel == SYM.fdiv) return OP_SEND_FDIV;
    if (sel == SYM.bitAnd) return OP_SEND_BITAND;
    if (sel == SYM.logicalAnd) return OP_SEND_AND;
    if (sel == SYM.logicalOr) return OP_SEND_OR;
    if (sel == SYM.at) return OP_SEND_AT;
    return OP_SEND;
}

/* The frame slot (interp.h) a variable reference reads, an argument or a frame local
 * of the code being compiled, or NO_SLOT (a field, a captured variable, a local too far
 * for a signed byte...). */
#define NO_SLOT 1000
static int frame_slot(Fn *fn, Node *n)
{
    if (!n || n->kind != N_VAR || n->ref != REF_VAR) return NO_SLOT;
    Var *v = n->var;
    if (v->captured) return NO_SLOT;
    int slot = v->isArg && v->scope == v->scope->real ? FRAME_SLOT_OF_ARG(v->slot, fn->scope->nargs)
                                                       : FRAME_SLOT_OF_LOCAL(v->slot);
    return slot >= -128 && slot <= 127 ? slot : NO_SLOT;
}

static bool small_int(Node *n)
{
    return n->kind == N_LIT && is_int(n->lit) && int_val(n->lit) >= -128 && int_val(n->lit) <= 127;
}

/* An arithmetic or comparison send in the operand shape (opcodes.h) that takes
 * its operands from where they are: frame locals or a small integer argument. */
static bool gen_special_variant(Compiler *c, Fn *fn, Node *n, Opcode op)
{
    if (op < OP_SEND_ADD || op > OP_SEND_NE) return false;
    Opcode base = (Opcode)(OP_SEND_ADD_L + 4 * (op - OP_SEND_ADD)); /* _L, _LL, _I, _LI */
    Node *arg = n->args[0];
    int ra = frame_slot(fn, n->recv), rb = frame_slot(fn, arg);
    uint32_t site;
    if (ra != NO_SLOT && (rb != NO_SLOT || small_int(arg))) { /* (n->recv is not NULL, so not in a cascade) */
        site = add_site(c, fn, n->lit, 1);
        fn->line = n->line;
        emit_op(fn, (Opcode)(base + (rb != NO_SLOT ? 1 : 3)), 2); /* a miss pushes both operands */
        adjust(fn, -1);
        emit_byte(fn, (uint8_t)(int8_t)ra);
        emit_byte(fn, rb != NO_SLOT ? (uint8_t)(int8_t)rb : (uint8_t)(int8_t)int_val(arg->lit));
    } else if (rb != NO_SLOT || small_int(arg)) {
        if (n->recv) gen(c, fn, n->recv); /* a cascade's message: the receiver is on the stack */
        site = add_site(c, fn, n->lit, 1);
        fn->line = n->line;
        emit_op(fn, rb != NO_SLOT ? base : (Opcode)(base + 2), 1); /* a miss pushes the argument */
        adjust(fn, -1);
        emit_byte(fn, rb != NO_SLOT ? (uint8_t)(int8_t)rb : (uint8_t)(int8_t)int_val(arg->lit));
    } else {
        return false;
    }
    emit_u16(fn, site);
    return true;
}

static void gen_send(Compiler *c, Fn *fn, Node *n)
{
    if (n->inlined) { gen_inlined_send(c, fn, n, true); return; }
    Opcode op = n->isSuper ? OP_SUPER_SEND : OP_SEND;
    if (!n->isSuper && n->nargs == 1) op = special_op(n->lit);
    if (!n->isSuper && n->nargs == 2 && n->lit == SYM.atPut) op = OP_SEND_ATPUT;
    if (!n->isSuper && n->nargs == 0 && n->lit == SYM.sqrt) op = OP_SEND_SQRT;
    if (gen_special_variant(c, fn, n, op)) return;
    bool identical = !n->isSuper && n->nargs == 1 && !strcmp(sym_cstr(n->lit), "==");
    /* A plain send whose last operand (its last argument, or the receiver of a unary
     * send) is a frame slot pushes it itself: SEND_S. */
    Node *last = n->nargs ? n->args[n->nargs - 1] : n->isSuper ? NULL : n->recv;
    int slot = op == OP_SEND && !identical ? frame_slot(fn, last) : NO_SLOT;
    int pushed = n->nargs - (slot != NO_SLOT && n->nargs > 0);
    if (n->recv && !(slot != NO_SLOT && n->nargs == 0)) {
        if (n->isSuper) emit_op(fn, OP_PUSH_SELF, 1);
        else gen(c, fn, n->recv);
    }
    for (int i = 0; i < pushed; i++) gen(c, fn, n->args[i]);
    fn->line = n->line;
    if (identical) {
        emit_op(fn, OP_IDENTICAL, -1);
        return;
    }
    if (slot != NO_SLOT) {
        emit_op(fn, OP_SEND_S, 1 - n->nargs);
        emit_byte(fn, (uint8_t)(int8_t)slot);
    } else {
        emit_op(fn, op, -n->nargs);
    }
    emit_u16(fn, add_site(c, fn, n->lit, n->nargs));
}

static void gen_cascade(Compiler *c, Fn *fn, Node *n)
{
    gen(c, fn, n->recv);
    for (int i = 0; i < n->nargs; i++) {
        bool last = i + 1 == n->nargs;
        if (!last) emit_op(fn, OP_DUP, 1);
        gen(c, fn, n->args[i]);
        if (!last) emit_op(fn, OP_POP, -1);
    }
}

static void gen_literal(Compiler *c, Fn *fn, Value v)
{
    if (is_int(v) && int_val(v) == 0) emit_op(fn, OP_PUSH_0, 1);
    else if (is_int(v) && int_val(v) == 1) emit_op(fn, OP_PUSH_1, 1);
    else if (is_int(v) && int_val(v) >= -128 && int_val(v) <= 127) {
        emit_op(fn, OP_PUSH_INT8, 1);
        emit_byte(fn, (uint8_t)(int8_t)int_val(v));
    } else {
        emit_op(fn, OP_PUSH_LIT, 1);
        emit_u16(fn, add_literal(c, fn, v));
    }
}

static void gen_return(Compiler *c, Fn *fn, Node *n)
{
    if (!fn->scope->isBlock && n->recv->kind == N_SELF) {
        emit_op(fn, OP_RETURN_SELF, 0);
        return;
    }
    gen(c, fn, n->recv);
    fn->line = n->line;
    emit_op(fn, fn->scope->isBlock ? OP_RETURN_NONLOCAL : OP_RETURN_LOCAL, -1);
}

static void gen(Compiler *c, Fn *fn, Node *n)
{
    fn->line = n->line;
    switch (n->kind) {
    case N_LIT: gen_literal(c, fn, n->lit); break;
    case N_SELF: case N_SUPER: emit_op(fn, OP_PUSH_SELF, 1); break;
    case N_NIL: emit_op(fn, OP_PUSH_NIL, 1); break;
    case N_TRUE: emit_op(fn, OP_PUSH_TRUE, 1); break;
    case N_FALSE: emit_op(fn, OP_PUSH_FALSE, 1); break;
    case N_VAR: gen_var_access(c, fn, n, false); break;
    case N_ASSIGN:
        gen(c, fn, n->recv);
        emit_op(fn, OP_DUP, 1);
        gen_var_access(c, fn, n->target, true);
        break;
    case N_SEND: gen_send(c, fn, n); break;
    case N_CASCADE: gen_cascade(c, fn, n); break;
    case N_RETURN: gen_return(c, fn, n); break;
    case N_BLOCK: {
        if (n->scope->inlined) { gen_inline_block(c, fn, n, true); break; }
        Method *bm = compile_fn(c, fn, n->scope, c->home->selector, n->line);
        if (fn->nblocks == 255) cfail(c, n, "too many blocks in one method");
        if (fn->nblocks == fn->capBlocks) {
            fn->capBlocks = fn->capBlocks ? fn->capBlocks * 2 : 4;
            fn->blocks = vm_xrealloc(fn->blocks, fn->capBlocks * sizeof(Method *));
        }
        fn->blocks[fn->nblocks] = bm;
        fn->line = n->line;
        emit_op(fn, OP_PUSH_BLOCK, 1);
        emit_byte(fn, (uint8_t)fn->nblocks++);
        break;
    }
    }
}

/* A statement: its value is dropped, so an assignment stores without a copy,
 * an inlined control structure pushes no value, and a variable or literal
 * alone compiles to nothing (a global is still read: that may load a class). */
static void gen_effect(Compiler *c, Fn *fn, Node *n)
{
    fn->line = n->line;
    switch (n->kind) {
    case N_ASSIGN:
        gen(c, fn, n->recv);
        gen_var_access(c, fn, n->target, true);
        return;
    case N_RETURN: gen_return(c, fn, n); return;
    case N_SEND:
        if (n->inlined) { gen_inlined_send(c, fn, n, false); return; }
        break;
    case N_LIT: case N_SELF: case N_SUPER: case N_NIL: case N_TRUE: case N_FALSE: return;
    case N_VAR: if (n->ref != REF_GLOBAL) return; break;
    case N_BLOCK: if (n->scope->inlined) { gen_inline_block(c, fn, n, false); return; } break;
    default: break;
    }
    gen(c, fn, n);
    emit_op(fn, OP_POP, -1);
}

static char *make_print_name(Compiler *c, Value selector, bool isBlock)
{
    const char *cls = c->holder->name;
    size_t n = strlen(cls) + str_len(selector) + 16;
    char *s = vm_xmalloc(n);
    snprintf(s, n, "%s%s>>%s", isBlock ? "[] in " : "", cls, sym_cstr(selector));
    return s;
}

/* Recognises the bodies a send can answer without an activation. */
static void detect_quick(Method *m)
{
    const uint8_t *k = m->code;
    uint32_t n = m->codeLen;
    if (m->flags & MF_HAS_CTX) return;
    if (n == 1 && k[0] == OP_RETURN_SELF) m->quickKind = QUICK_SELF;
    else if (n == 3 && k[0] == OP_PUSH_FIELD && k[2] == OP_RETURN_LOCAL) { m->quickKind = QUICK_FIELD; m->quickIndex = k[1]; }
    else if (n == 5 && m->nargs == 1 && k[0] == OP_PUSH_ARG && k[1] == 1 && k[2] == OP_POP_FIELD && k[4] == OP_RETURN_SELF) {
        m->quickKind = QUICK_SETTER;
        m->quickIndex = k[3];
    } else if (n == 2 && k[1] == OP_RETURN_LOCAL && (k[0] == OP_PUSH_TRUE || k[0] == OP_PUSH_FALSE || k[0] == OP_PUSH_NIL ||
                                                     k[0] == OP_PUSH_0 || k[0] == OP_PUSH_1)) {
        m->quickKind = QUICK_CONST;
        m->quickValue = k[0] == OP_PUSH_TRUE ? VM.trueObj : k[0] == OP_PUSH_FALSE ? VM.falseObj
                      : k[0] == OP_PUSH_NIL ? VM.nil : int_value(k[0] == OP_PUSH_1);
    } else if (n == 3 && k[0] == OP_PUSH_INT8 && k[2] == OP_RETURN_LOCAL) {
        m->quickKind = QUICK_CONST;
        m->quickValue = int_value((int8_t)k[1]);
    } else if (n == 4 && k[0] == OP_PUSH_LIT && k[3] == OP_RETURN_LOCAL) {
        m->quickKind = QUICK_CONST;
        m->quickValue = m->literals[k[1] | k[2] << 8]; /* literals are permanent objects */
    }
    method_install_quick(m);
}

static Method *finish_fn(Compiler *c, Fn *fn, Value selector, int line)
{
    Scope *s = fn->scope;
    Method *m = method_new();
    m->selector = selector;
    m->holder = c->holder;
    m->code = fn->code;
    m->lines = fn->lines;
    m->codeLen = fn->len;
    m->nargs = (uint16_t)s->nargs;
    m->nlocals = (uint16_t)fn->numLocals;
    m->ctxSize = (uint16_t)s->ctxSize;
    m->maxStack = (uint16_t)(fn->maxDepth + 1);
    m->flags = (s->isBlock ? MF_BLOCK : 0) | (s->hasCtx ? MF_HAS_CTX : 0);
    m->literals = fn->lits;
    m->numLiterals = (uint16_t)fn->nlits;
    m->sites = fn->sites;
    m->numSites = (uint16_t)fn->nsites;
    m->blocks = fn->blocks;
    m->numBlocks = (uint16_t)fn->nblocks;
    m->line = (uint32_t)line;
    m->printName = make_print_name(c, selector, s->isBlock);
    m->sourcePath = c->path;
    if (s->hasCtx) {
        m->argCopy = vm_xcalloc(s->nargs + 1, 1);
        for (int i = 0; i < s->nvars; i++)
            if (s->vars[i]->isArg && s->vars[i]->captured) m->argCopy[s->vars[i]->argIndex] = (uint8_t)s->vars[i]->slot;
    }
    for (uint32_t i = 0; i < fn->nblocks; i++) fn->blocks[i]->outer = m;
    if (!s->isBlock) detect_quick(m);
    return m;
}

static Method *compile_fn(Compiler *c, Fn *outer, Scope *s, Value selector, int line)
{
    Fn fn = {0};
    fn.outer = outer;
    fn.scope = s;
    fn.line = line;
    place_vars_of(&fn, s);
    for (int i = 0; i < s->nbody; i++) place_inlined(&fn, s->body[i]);
    if (s->nargs + fn.numLocals > 255 || s->ctxSize > 254)
        cfail(c, NULL, "too many variables in one method");
    for (int i = 0; i < s->nbody; i++) {
        Node *st = s->body[i];
        bool last = i + 1 == s->nbody;
        if (s->isBlock && last && st->kind != N_RETURN) {
            gen(c, &fn, st);
            emit_op(&fn, OP_RETURN_LOCAL, -1);
        } else {
            gen_effect(c, &fn, st);
        }
    }
    if (s->isBlock) {
        if (s->nbody == 0) {
            emit_op(&fn, OP_PUSH_NIL, 1);
            emit_op(&fn, OP_RETURN_LOCAL, -1);
        }
    } else if (s->nbody == 0 || s->body[s->nbody - 1]->kind != N_RETURN) {
        emit_op(&fn, OP_RETURN_SELF, 0);
    }
    return finish_fn(c, &fn, selector, line);
}

Method *compile_method(MethodDef *md, ClassInfo *holder, const char *path)
{
    Compiler c = {.holder = holder, .path = path, .line = md->line};
    if (setjmp(c.fail)) return NULL;
    if (md->isPrimitive) {
        Method *m = method_new();
        m->selector = md->selector;
        m->holder = holder;
        m->nargs = (uint16_t)md->scope->nargs;
        m->line = (uint32_t)md->line;
        m->prim = prims_find(holder, md->selector);
        if (!m->prim) m->prim = prim_missing;
        c.home = m;
        m->printName = make_print_name(&c, md->selector, false);
        m->sourcePath = path;
        return m;
    }
    resolve_scope(&c, md->scope);
    Method home = {.selector = md->selector};
    c.home = &home;
    return compile_fn(&c, NULL, md->scope, md->selector, md->line);
}
