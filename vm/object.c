// SPDX-License-Identifier: BSD-2-Clause
/* object.c - object allocation, the class table and method dictionaries. */
#include "object.h"
#include "alloc.h"
#include "gc.h"
#include "method.h"
#include "probes.h"
#include "symbol.h"
#include "vm.h"

#include <math.h>
#include <stdlib.h>

VMState VM;

/* ---- Allocation ---- */

/* The header of an object at mem, with the overflow word before it when numSlots
 * does not fit the header's count. */
static Obj *init_obj(char *mem, uint32_t classIndex, unsigned format, size_t numSlots, uint64_t flags)
{
    if (numSlots < HDR_SLOTS_OVERFLOW) {
        Obj *o = (Obj *)mem;
        o->hdr = obj_header(classIndex, format, numSlots) | flags;
        return o;
    }
    *(uint64_t *)mem = ((uint64_t)HDR_SLOTS_OVERFLOW << HDR_SLOTS_SHIFT) | numSlots;
    Obj *o = (Obj *)(mem + 8);
    o->hdr = obj_header(classIndex, format, HDR_SLOTS_OVERFLOW) | flags;
    return o;
}

Obj *obj_alloc_slow(uint32_t classIndex, unsigned format, size_t numSlots)
{
    size_t bytes = obj_alloc_bytes(numSlots);
    Obj *o = init_obj(gc_alloc(bytes), classIndex, format, numSlots, 0);
    /* Born old (large, or eden overflowed before a safe point): C code may fill
     * it with young objects without a barrier, so remember it at once. */
    if (UNLIKELY(!gc_is_young((Value)o)) && format <= FMT_INDEXABLE) gc_remember(o);
    PROBE_ALLOC_SAMPLE(o, bytes);
    return o;
}

Obj *obj_new(uint32_t classIndex, unsigned format, size_t numSlots)
{
    /* Far beyond any heap, and its size in bytes may not even fit a size_t. */
    if (numSlots > ((size_t)1 << 40))
        vm_object_too_large(numSlots > SIZE_MAX / 8 - 1 ? SIZE_MAX : (numSlots + 1) * 8, gc_heap_limit());
    return obj_alloc(classIndex, format, numSlots, true);
}

Obj *obj_new_perm(uint32_t classIndex, unsigned format, size_t numSlots)
{
    Obj *o = init_obj(gc_alloc_perm(obj_alloc_bytes(numSlots)), classIndex, format, numSlots, GCF_PERM);
    obj_fill_body(o, format, numSlots);
    return o;
}

Value obj_instantiate(ClassInfo *c, size_t indexedSlots)
{
    size_t n = c->instFormat == FMT_FIXED ? c->numFields : indexedSlots;
    if (c->instFormat == FMT_BYTES) {
        Obj *o = obj_new(c->index, FMT_BYTES, 1 + (indexedSlots + 8) / 8);
        o->slots[0] = indexedSlots;
        return obj_value(o);
    }
    return obj_value(obj_new(c->index, c->instFormat, n));
}

static Value str_make(Obj *o, const char *bytes, size_t len)
{
    o->slots[0] = len;
    if (len) memcpy(&o->slots[1], bytes, len);
    ((char *)&o->slots[1])[len] = 0;
    return obj_value(o);
}

/* A string of len bytes needs one length word plus len+1 bytes (the NUL). */
static size_t str_slots(size_t len) { return 1 + (len + 8) / 8; }

Value str_new(const char *bytes, size_t len)
{
    return str_make(obj_new(CLS_STRING, FMT_BYTES, str_slots(len)), bytes, len);
}

Value str_new_perm(const char *bytes, size_t len)
{
    return str_make(obj_new_perm(CLS_STRING, FMT_BYTES, str_slots(len)), bytes, len);
}

Value str_alloc(size_t len)
{
    Obj *o = obj_new(CLS_STRING, FMT_BYTES, str_slots(len));
    o->slots[0] = len;
    return obj_value(o);
}

Value str_from_cstr(const char *s) { return str_new(s, strlen(s)); }

bool str_scan_ascii(Obj *o)
{
    const unsigned char *p = (const unsigned char *)&o->slots[1];
    size_t n = (size_t)o->slots[0];
    bool ascii = true;
    for (size_t i = 0; i < n && ascii; i++) ascii = p[i] < 0x80;
    o->hdr |= HDR_STR_CHECKED | (ascii ? 0 : HDR_STR_NONASCII);
    return ascii;
}

size_t str_char_size(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!n || p[0] < 0x80) return 1;
    /* the lead byte gives the length and the range of the second byte (Table 3-7) */
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        if (p[0] == 0xe0) lo = 0xa0;   /* no overlong form */
        if (p[0] == 0xed) hi = 0x9f;   /* no surrogate */
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        if (p[0] == 0xf0) lo = 0x90;   /* no overlong form */
        if (p[0] == 0xf4) hi = 0x8f;   /* nothing past U+10FFFF */
    } else return 1;
    if (len > n || p[1] < lo || p[1] > hi) return 1;
    for (size_t k = 2; k < len; k++)
        if ((p[k] & 0xc0) != 0x80) return 1;
    return len;
}

size_t str_char_len(Value s)
{
    if (str_is_ascii(s)) return str_len(s);
    const char *p = str_bytes(s);
    size_t n = str_len(s), count = 0;
    for (size_t i = 0; i < n; count++) i += str_char_size(p + i, n - i);
    return count;
}

size_t str_char_offset(Value s, size_t index)
{
    if (str_is_ascii(s)) return index;
    const char *p = str_bytes(s);
    size_t n = str_len(s), i = 0;
    for (size_t c = 0; c < index && i < n; c++) i += str_char_size(p + i, n - i);
    return i;
}

Value double_new_perm(double d)
{
    Value v;
    if (float_encode(d, &v)) return v;
    if (d == 0) return signbit(d) ? VM.negativeZero : VM.zero;
    Obj *o = obj_new_perm(CLS_DOUBLE, FMT_WORDS, 1);
    memcpy(&o->slots[0], &d, 8);
    return obj_value(o);
}

Value double_new_boxed(double d)
{
    if (d == 0) return signbit(d) ? VM.negativeZero : VM.zero;
    Obj *o = obj_new(CLS_DOUBLE, FMT_WORDS, 1);
    memcpy(&o->slots[0], &d, 8);
    return obj_value(o);
}

Value array_new(size_t n) { return obj_value(obj_new(CLS_ARRAY, FMT_INDEXABLE, n)); }
Value array_new_perm(size_t n) { return obj_value(obj_new_perm(CLS_ARRAY, FMT_INDEXABLE, n)); }

Value obj_shallow_copy(Value v)
{
    if (!is_ptr(v)) return v;
    Obj *o = as_obj(v);
    size_t n = obj_num_slots(o);
    Obj *c = obj_new(obj_class_index(o), obj_format(o), n);
    memcpy(c->slots, o->slots, (n ? n : 1) * 8);
    return obj_value(c);
}

/* ---- The class table ---- */

ClassInfo *class_create(const char *name, uint32_t fixedIndex)
{
    uint32_t idx = fixedIndex ? fixedIndex : (VM.numClasses < CLS_FIRST_USER ? CLS_FIRST_USER : VM.numClasses);
    if (idx >= VM.capClasses) {
        uint32_t ncap = VM.capClasses ? VM.capClasses * 2 : 256;
        while (ncap <= idx) ncap *= 2;
        VM.classes = vm_xrealloc(VM.classes, ncap * sizeof(ClassInfo *));
        memset(VM.classes + VM.capClasses, 0, (ncap - VM.capClasses) * sizeof(ClassInfo *));
        VM.capClasses = ncap;
    }
    if (idx > HDR_CLASS_MASK) vm_fatal("too many classes");
    ClassInfo *c = vm_xcalloc(1, sizeof(ClassInfo));
    c->index = idx;
    c->nameSym = sym_intern_cstr(name);
    c->name = sym_cstr(c->nameSym);
    c->base = c;
    c->instFormat = FMT_FIXED;
    c->fieldNames = VM.nil;
    c->methodsArray = VM.nil;
    c->classObj = VM.nil;
    VM.classes[idx] = c;
    if (idx >= VM.numClasses) VM.numClasses = idx + 1;
    return c;
}

void class_set_super(ClassInfo *c, ClassInfo *super)
{
    c->super = super;
    if (super) c->instFormat = super->instFormat;
}

static uint32_t sel_hash(Value sel) { return (uint32_t)((sel >> 3) * 2654435761u); }

static void table_put(MethodTable *t, Method *m)
{
    if ((t->count + 1) * 2 > t->cap) {
        uint32_t ncap = t->cap ? t->cap * 2 : 16;
        Value *nk = vm_xcalloc(ncap, sizeof(Value));
        Method **nv = vm_xcalloc(ncap, sizeof(Method *));
        for (uint32_t i = 0; i < t->cap; i++) {
            if (!t->keys[i]) continue;
            uint32_t j = sel_hash(t->keys[i]) & (ncap - 1);
            while (nk[j]) j = (j + 1) & (ncap - 1);
            nk[j] = t->keys[i];
            nv[j] = t->values[i];
        }
        free(t->keys);
        free(t->values);
        t->keys = nk;
        t->values = nv;
        t->cap = ncap;
    }
    uint32_t j = sel_hash(m->selector) & (t->cap - 1);
    while (t->keys[j] && t->keys[j] != m->selector) j = (j + 1) & (t->cap - 1);
    if (!t->keys[j]) t->count++;
    t->keys[j] = m->selector;
    t->values[j] = m;
}

/* While a class is compiled: no method Array has been asked for yet. */
void class_add_method(ClassInfo *c, Method *m) { table_put(&c->methods, m); }

void class_set_methods(ClassInfo *c, Method **ms, size_t n)
{
    MethodTable *t = &c->methods;
    if (t->cap) {
        memset(t->keys, 0, t->cap * sizeof(Value));
        memset(t->values, 0, t->cap * sizeof(Method *));
    }
    t->count = 0;
    while (n > 0) table_put(t, ms[--n]); /* the last put wins: put the first last */
}

Method *class_local_method(ClassInfo *c, Value selector)
{
    MethodTable *t = &c->methods;
    if (!t->cap) return NULL;
    for (uint32_t j = sel_hash(selector) & (t->cap - 1); t->keys[j]; j = (j + 1) & (t->cap - 1))
        if (t->keys[j] == selector) return t->values[j];
    return NULL;
}

Method *class_lookup(ClassInfo *c, Value selector)
{
    for (; c; c = c->super) {
        Method *m = class_local_method(c, selector);
        if (m) return m;
    }
    return NULL;
}

ClassInfo *class_from_object(Value v)
{
    if (!is_ptr(v)) return NULL;
    uint32_t ci = obj_class_index(as_obj(v));
    ClassInfo *k = VM.classes[ci];
    if (!(ci == CLS_METACLASS || (k && k->isMeta))) return NULL;
    Value idx = as_obj(v)->slots[0];
    if (!is_int(idx) || (uint64_t)int_val(idx) >= VM.numClasses) return NULL;
    return VM.classes[int_val(idx)];
}

bool class_is_subclass(ClassInfo *c, ClassInfo *ancestor)
{
    for (; c; c = c->super)
        if (c == ancestor) return true;
    return false;
}
