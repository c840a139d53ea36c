/* prim_object.c - primitives of Object, Class, Array, blocks, methods and Symbol. */
#include "gc.h"
#include "interp.h"
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
    a[0] = is_int(a[0]) ? a[0] : int_value(obj_hash(as_obj(a[0])));
    return PRIM_OK;
}

static PrimResult p_object_size(Value *a, uint32_t n)
{
    (void)n;
    a[0] = int_value(is_int(a[0]) ? 0 : (int64_t)(8 * (1 + obj_num_slots(as_obj(a[0])))));
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

static PrimResult p_inspect(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = class_of(a[0]);
    printf("a%s %s\n", strchr("AEIOU", c->name[0]) ? "n" : "", c->name);
    if (!is_int(a[0]) && c->instFormat == FMT_FIXED && c->fieldNames != G.nil)
        for (uint32_t i = 0; i < c->numFields; i++)
            printf("  %s: %s\n", sym_cstr(as_obj(c->fieldNames)->slots[i]),
                   class_of(as_obj(a[0])->slots[i])->name);
    return PRIM_OK;
}

static bool is_symbol(Value v) { return !is_int(v) && obj_class_index(as_obj(v)) == CLS_SYMBOL; }

/* perform: family: shift the arguments down over the selector and send. */
static PrimResult perform(Value *a, uint32_t n, ClassInfo *from)
{
    Value sel = a[1];
    if (!is_symbol(sel)) return prim_fail(a, "perform: needs a Symbol");
    for (uint32_t i = 1; i < n; i++) a[i] = a[i + 1];
    return interp_send(a, n - 1, sel, from);
}

static PrimResult p_perform(Value *a, uint32_t n) { return perform(a, n, NULL); }

static PrimResult spread_args(Value *a, Value arr, uint32_t *count)
{
    if (is_int(arr) || obj_class_index(as_obj(arr)) != CLS_ARRAY) return PRIM_FAIL;
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
    return interp_send(a, count, sel, NULL);
}

static PrimResult p_perform_in_super(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = class_from_object(a[2]);
    if (!c || !is_symbol(a[1])) return prim_fail(a, "perform:inSuperclass: needs a Symbol and a class");
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
    return interp_send(a, count, sel, c);
}

static bool field_index(Value obj, Value idx, size_t *out)
{
    if (is_int(obj) || !is_int(idx)) return false;
    Obj *o = as_obj(obj);
    unsigned f = obj_format(o);
    if (f != FMT_FIXED && f != FMT_INDEXABLE) return false;
    size_t count = f == FMT_FIXED ? class_of(obj)->numFields : obj_num_slots(o);
    int64_t i = int_val(idx);
    if (i < 1 || (uint64_t)i > count) return false;
    *out = (size_t)(i - 1);
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
    as_obj(a[0])->slots[i] = a[2];
    gc_write_barrier(as_obj(a[0]), a[2]);
    a[0] = a[2];
    return PRIM_OK;
}

static int field_named(Value obj, Value name)
{
    ClassInfo *c = class_of(obj);
    if (is_int(obj) || c->fieldNames == G.nil || !is_string_like(name)) return -1;
    for (uint32_t i = 0; i < c->numFields; i++)
        if (!strcmp(sym_cstr(as_obj(c->fieldNames)->slots[i]), str_bytes(name))) return (int)i;
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
    a[0] = a[2];
    return PRIM_OK;
}

/* ---- Class ---- */

static ClassInfo *rcvr_class(Value *a) { return class_from_object(a[0]); }

static PrimResult p_new(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c || c->isMeta) return prim_fail(a, "new: receiver is not an instantiable class");
    if (c->index == CLS_INTEGER || c->index == CLS_DOUBLE || c->index == CLS_NIL || c->index == CLS_TRUE ||
        c->index == CLS_FALSE || c->index == CLS_SYMBOL || c->index < CLS_INTEGER)
        if (c->index != CLS_OBJECT) return prim_fail(a, "new: cannot make instances of this class");
    a[0] = obj_instantiate(c, 0);
    return PRIM_OK;
}

static PrimResult p_new_size(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c || (c->instFormat != FMT_INDEXABLE && c->instFormat != FMT_BYTES) || c->index == CLS_SYMBOL)
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
    a[0] = c->super ? c->super->classObj : G.nil;
    return PRIM_OK;
}

static PrimResult p_fields(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    /* The hidden class-index field of class objects is not a source-level field. */
    size_t skip = (c->isMeta || c->index == CLS_CLASS || c->index == CLS_METACLASS) ? 1 : 0;
    size_t total = c->fieldNames == G.nil ? 0 : array_len(c->fieldNames);
    if (total < skip) skip = total;
    Value r = array_new(total - skip);
    for (size_t i = skip; i < total; i++) as_obj(r)->slots[i - skip] = as_obj(c->fieldNames)->slots[i];
    a[0] = r;
    return PRIM_OK;
}

/* Methods in a stable order: by source order of definition (table order is hash order). */
static size_t collect_methods(ClassInfo *c, Method **out)
{
    size_t k = 0;
    for (uint32_t i = 0; i < c->methods.cap; i++)
        if (c->methods.keys[i]) out[k++] = c->methods.values[i];
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && out[j - 1]->line > out[j]->line; j--) {
            Method *t = out[j]; out[j] = out[j - 1]; out[j - 1] = t;
        }
    return k;
}

static PrimResult p_methods(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    Method **ms = vm_xmalloc((c->methods.count + 1) * sizeof(Method *));
    size_t k = collect_methods(c, ms);
    for (size_t i = 0; i < k; i++) method_mirror(ms[i]);
    Value r = array_new(k);
    for (size_t i = 0; i < k; i++) as_obj(r)->slots[i] = ms[i]->mirror;
    free(ms);
    a[0] = r;
    return PRIM_OK;
}

static PrimResult p_selectors(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = rcvr_class(a);
    if (!c) return prim_fail(a, "not a class");
    Method **ms = vm_xmalloc((c->methods.count + 1) * sizeof(Method *));
    size_t k = collect_methods(c, ms);
    Value r = array_new(k);
    for (size_t i = 0; i < k; i++) as_obj(r)->slots[i] = ms[i]->selector;
    free(ms);
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

static PrimResult p_true(Value *a, uint32_t n) { (void)n; a[0] = G.trueObj; return PRIM_OK; }

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
    as_obj(a[0])->slots[k] = a[2];
    gc_write_barrier(as_obj(a[0]), a[2]);
    a[0] = a[2];
    return PRIM_OK;
}

static PrimResult p_length(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)array_len(a[0])); return PRIM_OK; }

/* ---- Blocks ---- */

static PrimResult p_block_value(Value *a, uint32_t n)
{
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    if (bm->nargs != n) return prim_fail(a, "wrong number of block arguments");
    return interp_activate(bm, a, a[0]);
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
    a[0] = a[1];
    uint32_t count;
    if (spread_args(a, arr, &count) != PRIM_OK || count != m->nargs)
        return prim_fail(a, "invokeOn:with: needs an Array of the right size");
    if (m->prim) {
        interp_current->fp->sp = a + count + 1;
        PrimResult r = m->prim(a, count);
        if (r != PRIM_FAIL || !m->code) return r;
    }
    return interp_activate(m, a, G.nil);
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
    {"Class", "new", p_new}, {"Class", "new:", p_new_size}, {"Class", "name", p_class_name},
    {"Class", "superclass", p_superclass}, {"Class", "fields", p_fields}, {"Class", "methods", p_methods},
    {"Class", "selectors", p_selectors}, {"Class", "hasMethod:", p_hasMethod}, {"Class", "isClass", p_true},
    {"Array", "at:", p_at}, {"Array", "at:put:", p_atPut}, {"Array", "length", p_length},
    {"Array", "copy", p_copy}, {"Array class", "new:", p_new_size},
    {"Block1", "value", p_block_value}, {"Block1", "numArgs", p_block_numArgs},
    {"Block", "numArgs", p_block_numArgs},
    {"Block2", "value:", p_block_value}, {"Block3", "value:with:", p_block_value},
    {"Block4", "value:with:with:", p_block_value},
    {"Method", "signature", p_signature}, {"Method", "holder", p_holder}, {"Method", "numArgs", p_method_numArgs},
    {"Method", "invokeOn:with:", p_invoke},
    {"Primitive", "signature", p_signature}, {"Primitive", "holder", p_holder},
    {"Primitive", "numArgs", p_method_numArgs}, {"Primitive", "invokeOn:with:", p_invoke},
    {"Symbol", "numArgs", p_sym_numArgs},
    {NULL, NULL, NULL},
};
