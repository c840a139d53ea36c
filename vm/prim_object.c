// SPDX-License-Identifier: BSD-2-Clause
/* prim_object.c - primitives of Object, Class, Array, blocks, methods and Symbol. */
#include "gc.h"
#include "interp.h"
#include "methodarray.h"
#include "prims.h"
#include "symbol.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- Object ---- */

static PrimResult p_class(Value *a, uint32_t n) { (void)n; a[0] = class_of(a[0])->classObj; return PRIM_OK; }
static PrimResult p_identical(Value *a, uint32_t n) { (void)n; a[0] = bool_value(a[0] == a[1]); return PRIM_OK; }

static PrimResult p_identity_hash(Value *a, uint32_t n)
{
    (void)n;
    /* an immediate is its own identity: its hash comes from its bits */
    a[0] = is_int(a[0]) ? a[0] : is_float(a[0]) ? int_value((int64_t)(a[0] >> 2)) : int_value(obj_hash(as_obj(a[0])));
    return PRIM_OK;
}

static PrimResult p_object_size(Value *a, uint32_t n)
{
    (void)n;
    a[0] = int_value(!is_ptr(a[0]) ? 0 : (int64_t)(8 * (1 + obj_num_slots(as_obj(a[0])))));
    return PRIM_OK;
}

static PrimResult p_copy(Value *a, uint32_t n) { (void)n; a[0] = obj_shallow_copy(a[0]); return PRIM_OK; }

static PrimResult p_halt(Value *a, uint32_t n)
{
    (void)n;
    fflush(stdout);
    fprintf(stderr, "halt: %s\n", class_of(a[0])->name);
    interp_print_backtrace();
    return PRIM_OK;
}

/* The slot of a class object (or metaclass object) that holds its class index: a
 * field that Class>>fields does not list and the reflective accessors do not reach
 * (writing it would turn one class into another). -1 for other objects. */
static int hidden_slot(ClassInfo *c)
{
    if (c->fieldNames == VM.nil) return -1;
    Value hidden = sym_intern_cstr("(class index)");
    for (uint32_t i = 0; i < c->numFields && i < array_len(c->fieldNames); i++)
        if (as_obj(c->fieldNames)->slots[i] == hidden) return (int)i;
    return -1;
}

static PrimResult p_inspect(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = class_of(a[0]);
    printf("instance of %s\n", c->name); /* SOM's Object>>asString */
    if (is_ptr(a[0]) && c->instFormat == FMT_FIXED && c->fieldNames != VM.nil)
        for (uint32_t i = 0; i < c->numFields; i++)
            if ((int)i != hidden_slot(c)) printf("  %s: %s\n", sym_cstr(as_obj(c->fieldNames)->slots[i]),
                   class_of(as_obj(a[0])->slots[i])->name);
    return PRIM_OK;
}

static bool is_symbol(Value v) { return is_ptr(v) && obj_class_index(as_obj(v)) == CLS_SYMBOL; }

/* The perform: family checks what a compiled send cannot get wrong: that the
 * selector takes as many arguments as are given, and, when the lookup starts
 * in a given class, that the receiver is an instance of it (a primitive of
 * that class may rely on its receiver's layout). */
static PrimResult check_send(Value *a, Value sel, uint32_t count, ClassInfo *from)
{
    if (!is_symbol(sel)) return prim_fail(a, "the selector must be a Symbol");
    if ((uint32_t)sym_num_args(sel) != count) {
        char msg[160];
        snprintf(msg, sizeof msg, "#%.100s takes %d argument%s, but %u %s given", sym_cstr(sel), sym_num_args(sel),
                 sym_num_args(sel) == 1 ? "" : "s", count, count == 1 ? "was" : "were");
        return prim_fail(a, msg);
    }
    if (from && !class_is_subclass(class_of(a[0]), from)) return prim_fail(a, "the receiver is not an instance of that class");
    return PRIM_OK;
}

/* perform: family: shift the arguments down over the selector and send. */
static PrimResult perform(Value *a, uint32_t n, ClassInfo *from)
{
    Value sel = a[1];
    check_send(a, sel, n - 1, from);
    for (uint32_t i = 1; i < n; i++) a[i] = a[i + 1];
    return interp_send(a, n - 1, sel, from);
}

static PrimResult p_perform(Value *a, uint32_t n) { return perform(a, n, NULL); }

static PrimResult spread_args(Value *a, Value arr, uint32_t *count)
{
    if (!is_ptr(arr) || obj_class_index(as_obj(arr)) != CLS_ARRAY) return PRIM_FAIL;
    size_t len = array_len(arr);
    if (a + len + 2 >= interp_current->stackLimit) interp_error("Stack overflow (perform:withArguments:)");
    for (size_t i = 0; i < len; i++) a[1 + i] = as_obj(arr)->slots[i];
    *count = (uint32_t)len;
    return PRIM_OK;
}

static PrimResult p_perform_args(Value *a, uint32_t n)
{
    (void)n;
    Value sel = a[1], arr = a[2];
    uint32_t count;
    if (!is_symbol(sel) || spread_args(a, arr, &count) != PRIM_OK)
        return prim_fail(a, "perform:withArguments: needs a Symbol and an Array");
    check_send(a, sel, count, NULL);
    return interp_send(a, count, sel, NULL);
}

static PrimResult p_perform_in_super(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = class_from_object(a[2]);
    if (!c || !is_symbol(a[1])) return prim_fail(a, "perform:inSuperclass: needs a Symbol and a class");
    check_send(a, a[1], 0, c);
    return interp_send(a, 0, a[1], c);
}

static PrimResult p_perform_args_super(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = class_from_object(a[3]);
    Value sel = a[1];
    uint32_t count;
    if (!c || !is_symbol(sel) || spread_args(a, a[2], &count) != PRIM_OK)
        return prim_fail(a, "perform:withArguments:inSuperclass: needs a Symbol, an Array and a class");
    check_send(a, sel, count, c);
    return interp_send(a, count, sel, c);
}

/* instVarAt: idx's slot: the idx-th field, counting from 1, the hidden one left out. */
static bool field_index(Value obj, Value idx, size_t *out)
{
    if (!is_ptr(obj) || !is_int(idx)) return false;
    Obj *o = as_obj(obj);
    unsigned f = obj_format(o);
    if (f != FMT_FIXED && f != FMT_INDEXABLE) return false;
    int hidden = f == FMT_FIXED ? hidden_slot(class_of(obj)) : -1;
    size_t count = f == FMT_FIXED ? class_of(obj)->numFields - (hidden >= 0) : obj_num_slots(o);
    int64_t i = int_val(idx);
    if (i < 1 || (uint64_t)i > count) return false;
    *out = (size_t)(i - 1) + (hidden >= 0 && i - 1 >= hidden);
    return true;
}

static PrimResult p_instVarAt(Value *a, uint32_t n)
{
    (void)n;
    size_t i;
    if (!field_index(a[0], a[1], &i)) return prim_fail(a, "instVarAt: index out of bounds");
    a[0] = as_obj(a[0])->slots[i];
    return PRIM_OK;
}

static PrimResult p_instVarAtPut(Value *a, uint32_t n)
{
    (void)n;
    size_t i;
    if (!field_index(a[0], a[1], &i)) return prim_fail(a, "instVarAt:put: index out of bounds");
    /* (the bit means a method Array on the objects field_index accepts: Strings are not) */
    if (as_obj(a[0])->hdr & HDR_METHOD_ARRAY) {
        const char *why = methodarray_store(as_obj(a[0]), i, a[2]);
        return why ? prim_fail(a, why) : PRIM_OK;
    }
    as_obj(a[0])->slots[i] = a[2];
    gc_write_barrier(as_obj(a[0]), a[2]);
    return PRIM_OK; /* answers the receiver, as SOM-java, TruffleSOM and SOM++ do */
}

static int field_named(Value obj, Value name)
{
    ClassInfo *c = class_of(obj);
    if (!is_ptr(obj) || c->fieldNames == VM.nil || !is_string_like(name)) return -1;
    int hidden = hidden_slot(c);
    for (uint32_t i = 0; i < c->numFields; i++)
        if ((int)i != hidden && !strcmp(sym_cstr(as_obj(c->fieldNames)->slots[i]), str_bytes(name))) return (int)i;
    return -1;
}

static PrimResult p_instVarNamed(Value *a, uint32_t n)
{
    (void)n;
    int i = field_named(a[0], a[1]);
    if (i < 0) return prim_fail(a, "instVarNamed: no such field");
    a[0] = as_obj(a[0])->slots[i];
    return PRIM_OK;
}

static PrimResult p_instVarNamedPut(Value *a, uint32_t n)
{
    (void)n;
    int i = field_named(a[0], a[1]);
    if (i < 0) return prim_fail(a, "instVarNamed:put: no such field");
    as_obj(a[0])->slots[i] = a[2];
    gc_write_barrier(as_obj(a[0]), a[2]);
    return PRIM_OK; /* the receiver, as instVarAt:put: */
}

/* ---- Boolean ---- */

/* && and || as SOM defines them (self and: arg, self or: arg): the argument is
 * sent value when it decides the result; a Boolean answers itself. */
static PrimResult logical(Value *a, Value decides)
{
    if (a[0] != decides) return PRIM_OK; /* false && x, true || x */
    if (a[1] == VM.trueObj || a[1] == VM.falseObj) { a[0] = a[1]; return PRIM_OK; }
    a[0] = a[1];
    return interp_send(a, 0, sym_intern_cstr("value"), NULL);
}

static PrimResult p_bool_and(Value *a, uint32_t n) { (void)n; return logical(a, VM.trueObj); }
static PrimResult p_bool_or(Value *a, uint32_t n) { (void)n; return logical(a, VM.falseObj); }

/* ---- Class ---- */

static ClassInfo *rcvr_class(Value *a) { return class_from_object(a[0]); }

/* Instances of these classes (and of their subclasses) are made only by the
 * VM, which relies on their layout: numbers, symbols, nil/true/false,
 * blocks, methods, classes and contexts. */
static bool instantiable(ClassInfo *c)
{
    if (c->isMeta) return false;
    for (ClassInfo *k = c; k; k = k->super)
        switch (k->index) {
        case CLS_INTEGER: case CLS_DOUBLE: case CLS_SYMBOL: case CLS_NIL: case CLS_TRUE: case CLS_FALSE:
        case CLS_BLOCK: case CLS_BLOCK1: case CLS_BLOCK2: case CLS_BLOCK3: case CLS_BLOCK4:
        case CLS_METHOD: case CLS_PRIMITIVE: case CLS_CLASS: case CLS_METACLASS: case CLS_CONTEXT:
            return false;
        default: break;
        }
    return true;
}

static PrimResult p_new(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c || !instantiable(c)) return prim_fail(a, "new: cannot make instances of this class");
    a[0] = obj_instantiate(c, 0);
    return PRIM_OK;
}

static PrimResult p_new_size(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c || (c->instFormat != FMT_INDEXABLE && c->instFormat != FMT_BYTES) || !instantiable(c))
        return prim_fail(a, "new: needs an indexable class");
    if (!is_int(a[1]) || int_val(a[1]) < 0) return prim_fail(a, "new: needs a non-negative Integer");
    a[0] = obj_instantiate(c, (size_t)int_val(a[1]));
    return PRIM_OK;
}

static PrimResult p_class_name(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    a[0] = c->nameSym;
    return PRIM_OK;
}

static PrimResult p_superclass(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    a[0] = c->super ? c->super->classObj : VM.nil;
    return PRIM_OK;
}

static PrimResult p_fields(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    /* The hidden class-index field of class objects is not a source-level field. */
    size_t skip = (c->isMeta || c->index == CLS_CLASS || c->index == CLS_METACLASS) ? 1 : 0;
    size_t total = c->fieldNames == VM.nil ? 0 : array_len(c->fieldNames);
    if (total < skip) skip = total;
    Value r = array_new(total - skip);
    for (size_t i = skip; i < total; i++) as_obj(r)->slots[i - skip] = as_obj(c->fieldNames)->slots[i];
    a[0] = r;
    return PRIM_OK;
}

/* The class's own method Array, the same object every time (methodarray.h). */
static PrimResult p_methods(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    a[0] = methodarray_of(c);
    return PRIM_OK;
}

/* The signatures of the Methods in the method Array, in its order. */
static PrimResult p_selectors(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    Obj *ms = as_obj(methodarray_of(c));
    size_t len = obj_num_slots(ms), k = 0;
    for (size_t i = 0; i < len; i++) k += method_from_mirror(ms->slots[i]) != NULL;
    Value r = array_new(k); /* allocation never collects: ms stays where it is */
    k = 0;
    for (size_t i = 0; i < len; i++) {
        Method *m = method_from_mirror(ms->slots[i]);
        if (m) as_obj(r)->slots[k++] = m->selector;
    }
    a[0] = r;
    return PRIM_OK;
}

static PrimResult p_hasMethod(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c || !is_symbol(a[1])) return prim_fail(a, "hasMethod: needs a Symbol");
    a[0] = bool_value(class_local_method(c, a[1]) != NULL);
    return PRIM_OK;
}

static PrimResult p_true(Value *a, uint32_t n) { (void)n; a[0] = VM.trueObj; return PRIM_OK; }

/* ---- Array ---- */

static PrimResult p_at(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1])) return prim_fail(a, "at: needs an Integer index");
    uint64_t k = (uint64_t)int_val(a[1]) - 1;
    if (k >= array_len(a[0])) {
        char msg[96];
        snprintf(msg, sizeof msg, "index %lld out of bounds 1..%zu", (long long)int_val(a[1]), array_len(a[0]));
        return prim_fail(a, msg);
    }
    a[0] = as_obj(a[0])->slots[k];
    return PRIM_OK;
}

static PrimResult p_atPut(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1])) return prim_fail(a, "at:put: needs an Integer index");
    uint64_t k = (uint64_t)int_val(a[1]) - 1;
    if (k >= array_len(a[0])) {
        char msg[96];
        snprintf(msg, sizeof msg, "index %lld out of bounds 1..%zu", (long long)int_val(a[1]), array_len(a[0]));
        return prim_fail(a, msg);
    }
    if (UNLIKELY(as_obj(a[0])->hdr & HDR_METHOD_ARRAY)) {
        const char *why = methodarray_store(as_obj(a[0]), k, a[2]);
        if (why) return prim_fail(a, why);
        return PRIM_OK;
    }
    as_obj(a[0])->slots[k] = a[2];
    gc_write_barrier(as_obj(a[0]), a[2]);
    return PRIM_OK; /* answers the receiver, as SOM++ and SOM-java do */
}

/* Array>>storeAll: v (putAll:'s fast path): when v value is v itself, answered by a
 * quick ^self (Object's value, untraced), v goes into every element without a send per
 * element, and the answer is true; for anything else (a block, a class that redefines
 * value, traced mode, a class's method Array) it stores nothing and answers false, and
 * putAll: sends value and at:put:. */
static PrimResult p_storeAll(Value *a, uint32_t n)
{
    (void)n;
    static Value valueSel;
    if (!valueSel) valueSel = sym_intern_cstr("value");
    Method *m = class_lookup(class_of(a[1]), valueSel);
    Obj *o = as_obj(a[0]);
    /* a method Array's stores go one by one through at:put: */
    if (!m || m->quick != QUICK_SELF || (o->hdr & HDR_METHOD_ARRAY)) { a[0] = VM.falseObj; return PRIM_OK; }
    size_t len = obj_num_slots(o);
    for (size_t i = 0; i < len; i++) o->slots[i] = a[1];
    if (len) gc_write_barrier(o, a[1]);
    a[0] = VM.trueObj;
    return PRIM_OK;
}

static PrimResult p_length(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)array_len(a[0])); return PRIM_OK; }

/* ---- Blocks ---- */

static PrimResult wrong_block_arity(Value *a, Method *bm, uint32_t n)
{
    char msg[96];
    snprintf(msg, sizeof msg, "the block takes %u argument%s, but %u %s given", bm->nargs, bm->nargs == 1 ? "" : "s",
             n, n == 1 ? "was" : "were");
    return prim_fail(a, msg);
}

static PrimResult p_block_value(Value *a, uint32_t n)
{
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    if (bm->nargs != n) return wrong_block_arity(a, bm, n);
    return interp_activate(bm, a, a[0]);
}

static PrimResult p_block_value_args(Value *a, uint32_t n)
{
    (void)n;
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    uint32_t count;
    if (spread_args(a, a[1], &count) != PRIM_OK) return prim_fail(a, "valueWithArguments: needs an Array");
    if (bm->nargs != count) return wrong_block_arity(a, bm, count);
    return interp_activate(bm, a, a[0]);
}

/* Block>>restart (SOM's Block>>whileTrue: ends with "self restart"): the
 * activation that sent it starts over from its first bytecode. */
static PrimResult p_block_restart(Value *a, uint32_t n)
{
    (void)a; (void)n;
    Frame *f = interp_current->fp;
    f->ip = f->method->code;
    f->sp = f->locals + f->method->nlocals;
    return PRIM_ACTIVATED;
}

static PrimResult p_block_numArgs(Value *a, uint32_t n)
{
    (void)n;
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    a[0] = int_value(bm->nargs);
    return PRIM_OK;
}

/* ---- Method / Primitive ---- */

static PrimResult p_signature(Value *a, uint32_t n) { (void)n; a[0] = method_from_mirror(a[0])->selector; return PRIM_OK; }
static PrimResult p_holder(Value *a, uint32_t n) { (void)n; a[0] = method_from_mirror(a[0])->holder->classObj; return PRIM_OK; }
static PrimResult p_method_numArgs(Value *a, uint32_t n) { (void)n; a[0] = int_value(method_from_mirror(a[0])->nargs); return PRIM_OK; }

/* invokeOn: rcvr with: argsArray runs the method on rcvr without a lookup. */
static PrimResult p_invoke(Value *a, uint32_t n)
{
    (void)n;
    Method *m = method_from_mirror(a[0]);
    Value arr = a[2];
    uint32_t count;
    if (!is_ptr(arr) || obj_class_index(as_obj(arr)) != CLS_ARRAY) return prim_fail(a, "invokeOn:with: needs an Array");
    if (array_len(arr) != m->nargs) {
        char msg[200];
        snprintf(msg, sizeof msg, "%.80s takes %u argument%s, but %zu %s given", method_print_name(m), m->nargs,
                 m->nargs == 1 ? "" : "s", array_len(arr), array_len(arr) == 1 ? "was" : "were");
        return prim_fail(a, msg);
    }
    if (!class_is_subclass(class_of(a[1]), m->holder))
        return prim_fail(a, "invokeOn:with: the receiver is not an instance of the method's class");
    a[0] = a[1];
    spread_args(a, arr, &count);
    if (m->prim) {
        interp_current->fp->sp = a + count + 1;
        PrimResult r = m->prim(a, count);
        if (r != PRIM_FAIL || !m->code) return r;
    }
    return interp_activate(m, a, VM.nil);
}

/* ---- Symbol ---- */

static PrimResult p_sym_numArgs(Value *a, uint32_t n) { (void)n; a[0] = int_value(sym_num_args(a[0])); return PRIM_OK; }

const PrimDef prims_object[] = {
    {"Object", "class", p_class}, {"Object", "==", p_identical}, {"Object", "hashcode", p_identity_hash},
    {"Object", "identityHash", p_identity_hash}, {"Object", "objectSize", p_object_size},
    {"Object", "copy", p_copy}, {"Object", "halt", p_halt}, {"Object", "inspect", p_inspect},
    {"Object", "perform:", p_perform}, {"Object", "perform:with:", p_perform},
    {"Object", "perform:with:with:", p_perform}, {"Object", "perform:with:with:with:", p_perform},
    {"Object", "perform:withArguments:", p_perform_args}, {"Object", "perform:inSuperclass:", p_perform_in_super},
    {"Object", "perform:withArguments:inSuperclass:", p_perform_args_super},
    {"Object", "instVarAt:", p_instVarAt}, {"Object", "instVarAt:put:", p_instVarAtPut},
    {"Object", "instVarNamed:", p_instVarNamed}, {"Object", "instVarNamed:put:", p_instVarNamedPut},
    {"Boolean", "&&", p_bool_and}, {"Boolean", "||", p_bool_or},
    {"Class", "new", p_new}, {"Class", "new:", p_new_size}, {"Class", "name", p_class_name},
    {"Class", "superclass", p_superclass}, {"Class", "fields", p_fields}, {"Class", "methods", p_methods},
    {"Class", "selectors", p_selectors}, {"Class", "hasMethod:", p_hasMethod}, {"Class", "isClass", p_true},
    {"Array", "at:", p_at}, {"Array", "at:put:", p_atPut}, {"Array", "length", p_length},
    {"Array", "storeAll:", p_storeAll},
    {"Array", "copy", p_copy}, {"Array class", "new:", p_new_size},
    {"Block1", "value", p_block_value}, {"Block1", "numArgs", p_block_numArgs},
    {"Block", "numArgs", p_block_numArgs}, {"Block", "restart", p_block_restart},
    {"Block", "value", p_block_value}, {"Block", "valueWithArguments:", p_block_value_args},
    {"Block2", "value:", p_block_value}, {"Block3", "value:with:", p_block_value},
    {"Block4", "value:with:with:", p_block_value},
    {"Method", "signature", p_signature}, {"Method", "holder", p_holder}, {"Method", "numArgs", p_method_numArgs},
    {"Method", "invokeOn:with:", p_invoke},
    {"Primitive", "signature", p_signature}, {"Primitive", "holder", p_holder},
    {"Primitive", "numArgs", p_method_numArgs}, {"Primitive", "invokeOn:with:", p_invoke},
    {"Symbol", "numArgs", p_sym_numArgs},
    {NULL, NULL, NULL},
};
