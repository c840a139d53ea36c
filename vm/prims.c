// SPDX-License-Identifier: BSD-2-Clause
/* prims.c - finding primitives by class and selector, primitive failure, and shared arithmetic. */
#include "prims.h"
#include "interp.h"
#include "largeint.h"
#include "probes.h"
#include "symbol.h"
#include "vm.h"

#include <math.h>
#include <stdio.h>

/* Fuzz builds leave out the I/O primitives: a fuzzed program must not create, delete
 * or connect to anything. */
static const PrimDef *const tables[] = {prims_object, prims_number, prims_string, prims_system, prims_process,
                                        prims_exception,
#ifndef SQVM_FUZZ
                                        prims_io,
#endif
};

/* The primitives by class and selector, hashed once: every "= primitive" method the
 * core library compiles at start-up looks its function up (a scan of every table was
 * a sixth of start-up's instructions). A power of two above twice their number. */
#define PRIM_SLOTS 1024
static const PrimDef *primSlots[PRIM_SLOTS];

static uint32_t prim_hash(const char *cls, const char *sel)
{
    uint32_t h = 2166136261u;
    for (; *cls; cls++) h = (h ^ (uint8_t)*cls) * 16777619u;
    h = (h ^ '>') * 16777619u;
    for (; *sel; sel++) h = (h ^ (uint8_t)*sel) * 16777619u;
    return h;
}

static void prims_index(void)
{
    size_t n = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const PrimDef *d = tables[t]; d->className; d++) {
            uint32_t i = prim_hash(d->className, d->selector) & (PRIM_SLOTS - 1);
            while (primSlots[i]) i = (i + 1) & (PRIM_SLOTS - 1);
            primSlots[i] = d;
            if (++n > PRIM_SLOTS / 2) vm_fatal("more primitives than prims.c's table holds (PRIM_SLOTS)");
        }
}

PrimFn prims_find(ClassInfo *holder, Value selector)
{
    const char *sel = sym_cstr(selector);
    static bool indexed;
    if (!indexed) {
        prims_index();
        indexed = true;
    }
    for (uint32_t i = prim_hash(holder->name, sel) & (PRIM_SLOTS - 1); primSlots[i]; i = (i + 1) & (PRIM_SLOTS - 1)) {
        const PrimDef *d = primSlots[i];
        if (!strcmp(d->className, holder->name) && !strcmp(d->selector, sel)) return d->fn;
    }
    return NULL;
}

/* A method declared "= primitive" that this VM has no C function for: a class
 * file from the class path may declare one. Calling it is a Smalltalk error. */
PrimResult prim_missing(Value *args, uint32_t nargs)
{
    (void)nargs;
    return prim_fail(args, "this primitive is not implemented by sqvm");
}

PrimResult prim_quick(Value *args, uint32_t nargs)
{
    (void)nargs;
    args[0] = quick_apply(interp_prim, args);
    return PRIM_OK;
}

/* Short, safe description of a value for error messages (no sends): what its
 * asString would be for the kernel's values, and SOM's 'instance of Foo' otherwise. */
static void describe(Value v, char *buf, size_t n)
{
    if (is_int(v)) snprintf(buf, n, "%lld", (long long)int_val(v));
    else if (is_double(v)) snprintf(buf, n, "%g", double_val(v));
    else if (obj_class_index(as_obj(v)) == CLS_STRING) snprintf(buf, n, "'%.40s'", str_bytes(v));
    else if (obj_class_index(as_obj(v)) == CLS_SYMBOL) snprintf(buf, n, "#%.40s", str_bytes(v));
    else if (v == VM.nil) snprintf(buf, n, "nil");
    else if (class_from_object(v)) snprintf(buf, n, "%s", class_from_object(v)->name);
    else snprintf(buf, n, "instance of %s", class_of(v)->name);
}

PrimResult prim_fail_as(Value *args, const char *className, const char *why)
{
    const char *prim = interp_prim ? method_print_name(interp_prim) : "?";
    vm_counters.primitive_failures++;
    if (SQ_ENABLED(PRIMITIVE_FAIL)) probe_primitive_fail(args[0], prim, why);
    char rcvr[96], msg[1024];
    describe(args[0], rcvr, sizeof rcvr);
    snprintf(msg, sizeof msg, "primitive %s failed: %s (receiver %s)", prim, why, rcvr);
    interp_raise(args, className, msg);
}

PrimResult prim_fail(Value *args, const char *why) { return prim_fail_as(args, NULL, why); }

/* ---- Arithmetic over small, large and floating-point numbers ---- */

static bool to_double(Value v, double *d)
{
    if (is_int(v)) { *d = (double)int_val(v); return true; }
    if (is_double(v)) { *d = double_val(v); return true; }
    if (is_largeint(v)) {
        BigInt b;
        uint32_t small[2];
        largeint_view(v, &b, small);
        *d = big_to_double(&b);
        return true;
    }
    return false;
}

/* The Integer nearest to q towards zero; false when q is not finite. */
static bool truncated_integer(double q, Value *out)
{
    if (!isfinite(q)) return false;
    if (q > -9.0e18 && q < 9.0e18) { *out = largeint_from_i64((int64_t)q); return true; }
    BigInt b;
    big_init(&b);
    big_from_double(&b, q);
    *out = largeint_from_big(&b);
    big_free(&b);
    return true;
}

/* x op y where either is a Double. Integer>>/ answers an Integer even then (the
 * quotient truncated, as SOM-java, TruffleSOM and SOM++ do); % and rem: are C's fmod
 * (the sign of the receiver), as Double>>% is and as the Java SOMs compute it. */
static bool double_op(int op, double x, double y, Value *out)
{
    switch (op) {
    case NUM_ADD: *out = double_new(x + y); return true;
    case NUM_SUB: *out = double_new(x - y); return true;
    case NUM_MUL: *out = double_new(x * y); return true;
    case NUM_DIV: return truncated_integer(x / y, out);
    case NUM_FDIV: *out = double_new(x / y); return true;
    case NUM_MOD: case NUM_REM: *out = double_new(fmod(x, y)); return true;
    case NUM_LT: *out = bool_value(x < y); return true;
    case NUM_GT: *out = bool_value(x > y); return true;
    case NUM_LE: *out = bool_value(x <= y); return true;
    case NUM_GE: *out = bool_value(x >= y); return true;
    case NUM_EQ: *out = bool_value(x == y); return true;
    case NUM_NE: *out = bool_value(x != y); return true;
    default: return false;
    }
}

/* What an interrupted operation was, for its error message. */
static const char *const big_op_names[] = {
    [NUM_ADD] = "Integer>>+", [NUM_SUB] = "Integer>>-", [NUM_MUL] = "Integer>>*", [NUM_DIV] = "Integer>>/",
    [NUM_MOD] = "Integer>>%", [NUM_LT] = "Integer>><", [NUM_GT] = "Integer>>>", [NUM_LE] = "Integer>><=",
    [NUM_GE] = "Integer>>>=", [NUM_EQ] = "Integer>>=", [NUM_NE] = "Integer>><>", [NUM_AND] = "Integer>>&",
    [NUM_FDIV] = "Integer>>//", [NUM_REM] = "Integer>>rem:", [NUM_OR] = "Integer>>bitOr:",
    [NUM_XOR] = "Integer>>bitXor:",
};

/* The most digits the result of x op y can have, known before it is computed. */
static size_t big_result_digits(int op, const BigInt *x, const BigInt *y)
{
    size_t longer = x->len > y->len ? x->len : y->len;
    if (op == NUM_MUL) return x->len + y->len;
    if (op == NUM_DIV || op == NUM_MOD || op == NUM_REM) return longer;
    return longer + 1;
}

/* a op b where one is a large integer. The operands are read where they are (views of
 * the heap objects); a result that could not fit the heap is the out-of-memory error
 * before anything is computed; an interrupt ends the long loops (bigint.c). */
static bool big_op(int op, Value a, Value b, Value *out)
{
    BigInt x, y, r;
    uint32_t xs[2], ys[2];
    largeint_view(a, &x, xs);
    largeint_view(b, &y, ys);
    big_init(&r);
    if (op >= NUM_LT && op <= NUM_NE) {
        int cmp = big_cmp(&x, &y);
        largeint_check_interrupt(&r, big_op_names[op]);
        *out = bool_value(op == NUM_LT ? cmp < 0 : op == NUM_GT ? cmp > 0 : op == NUM_LE ? cmp <= 0
                          : op == NUM_GE ? cmp >= 0 : op == NUM_EQ ? cmp == 0 : cmp != 0);
        return true;
    }
    if ((op == NUM_DIV || op == NUM_MOD || op == NUM_REM) && y.sign == 0) return false;
    largeint_check_digits(big_result_digits(op, &x, &y));
    switch (op) {
    case NUM_ADD: big_add(&r, &x, &y); break;
    case NUM_SUB: big_sub(&r, &x, &y); break;
    case NUM_MUL: big_mul(&r, &x, &y); break;
    case NUM_DIV: big_divmod_trunc(&r, NULL, &x, &y); break;
    case NUM_MOD: big_divmod_floor(NULL, &r, &x, &y); break;
    case NUM_REM: big_divmod_trunc(NULL, &r, &x, &y); break;
    case NUM_AND: big_and(&r, &x, &y); break;
    case NUM_OR: big_or(&r, &x, &y); break;
    case NUM_XOR: big_xor(&r, &x, &y); break;
    default: return false;
    }
    largeint_check_interrupt(&r, big_op_names[op]);
    *out = largeint_from_big(&r);
    big_free(&r);
    return true;
}

/* a op b for numbers; answers false when the operands are not numbers or on division by zero. */
bool num_binop(int op, Value a, Value b, Value *out)
{
    bool aInt = is_integer(a), bInt = is_integer(b);
    if (aInt && bInt && op != NUM_FDIV) {
        if (is_int(a) && is_int(b)) {
            int64_t x = int_val(a), y = int_val(b), r;
            switch (op) {
            case NUM_ADD: *out = largeint_from_i64(x + y); return true;  /* 63-bit: cannot overflow */
            case NUM_SUB: *out = largeint_from_i64(x - y); return true;
            case NUM_MUL:
                if (!__builtin_mul_overflow(x, y, &r)) { *out = largeint_from_i64(r); return true; }
                break;
            case NUM_DIV:
                if (y == 0) return false;
                if (x == SMALLINT_MIN && y == -1) { *out = largeint_from_i64(-x); return true; }
                *out = int_value(x / y); /* truncated, as in SOM's VMs (C's and Java's /) */
                return true;
            case NUM_MOD:
                if (y == 0) return false;
                *out = int_value(int_floor_mod(x, y));
                return true;
            case NUM_REM:
                if (y == 0) return false;
                *out = int_value(x % y);
                return true;
            case NUM_AND: *out = int_value(x & y); return true;
            case NUM_OR: *out = int_value(x | y); return true;
            case NUM_XOR: *out = int_value(x ^ y); return true;
            case NUM_LT: *out = bool_value(x < y); return true;
            case NUM_GT: *out = bool_value(x > y); return true;
            case NUM_LE: *out = bool_value(x <= y); return true;
            case NUM_GE: *out = bool_value(x >= y); return true;
            case NUM_EQ: *out = bool_value(x == y); return true;
            case NUM_NE: *out = bool_value(x != y); return true;
            default: return false;
            }
        }
        return big_op(op, a, b, out);
    }
    double x, y;
    if (!to_double(a, &x) || !to_double(b, &y)) {
        if (op == NUM_EQ) { *out = VM.falseObj; return is_integer(a) || is_double(a); }
        if (op == NUM_NE) { *out = VM.trueObj; return is_integer(a) || is_double(a); }
        return false;
    }
    if (op == NUM_AND || op == NUM_OR || op == NUM_XOR) return false;
    return double_op(op, x, y, out);
}
