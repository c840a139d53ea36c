// SPDX-License-Identifier: BSD-2-Clause
/* methodarray.c - a class's method Array and the stores into it; see methodarray.h. */
#include "methodarray.h"
#include "gc.h"
#include "interp.h"
#include "method.h"
#include "vm.h"

#include <stdlib.h>

/* c's methods by their line in the class file (the table's order is its hash order). */
static size_t methods_in_file_order(ClassInfo *c, Method **out)
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

Value methodarray_of(ClassInfo *c)
{
    if (c->methodsArray != VM.nil) return c->methodsArray;
    Method **ms = vm_xmalloc((c->methods.count + 1) * sizeof(Method *));
    size_t k = methods_in_file_order(c, ms);
    for (size_t i = 0; i < k; i++) method_mirror(ms[i]); /* permanent: no collection between */
    Value r = array_new(k);
    for (size_t i = 0; i < k; i++) as_obj(r)->slots[i] = ms[i]->mirror;
    free(ms);
    as_obj(r)->hdr |= HDR_METHOD_ARRAY;
    c->methodsArray = r;
    return r;
}

/* The class whose method Array this is: a store into one is rare (reflection), so a
 * scan of the class table finds it. */
static ClassInfo *owner_of(Obj *array)
{
    for (uint32_t i = 1; i < VM.numClasses; i++)
        if (VM.classes[i] && VM.classes[i]->methodsArray == obj_value(array)) return VM.classes[i];
    return NULL;
}

const char *methodarray_store(Obj *array, size_t k, Value v)
{
    ClassInfo *c = owner_of(array);
    Method *m = method_from_mirror(v);
    if (c && m && (m->flags & MF_BLOCK)) return "a block's method is no method of a class";
    if (c && m && !class_is_subclass(c, m->holder)) return "a method goes only into its own class or a subclass";
    array->slots[k] = v;
    gc_write_barrier(array, v);
    if (!c) return NULL;
    size_t n = obj_num_slots(array), count = 0;
    Method **ms = vm_xmalloc((n + 1) * sizeof(Method *));
    for (size_t i = 0; i < n; i++)
        if ((m = method_from_mirror(array->slots[i]))) ms[count++] = m;
    class_set_methods(c, ms, count);
    free(ms);
    interp_methods_changed();
    return NULL;
}
