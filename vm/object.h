// SPDX-License-Identifier: BSD-2-Clause
/* object.h - the object header, object formats, the class table and the object constructors. */
#ifndef SQVM_OBJECT_H
#define SQVM_OBJECT_H

#include "common.h"
#include "gc.h"

/* ---- The header word ----
 *   bits  0-21  class index (into the class table)
 *   bits 22-23  format (how the collector walks the body)
 *   bits 24-25  strings only: whether the text is known to be ASCII (below);
 *               bit 24 of an Array: it is a class's method Array (below)
 *   bits 26-31  GC flags
 *   bits 32-53  identity hash (assigned at allocation, survives moves)
 *   bits 54-63  number of body slots; 1023 means "see the overflow word", a
 *               word just before the header holding the count in its low 54
 *               bits and 0xFF in its top byte.
 * Every object has at least one body word, so a forwarding pointer fits. */
typedef struct Obj {
    uint64_t hdr;
    Value slots[];
} Obj;

#define HDR_CLASS_BITS 22
#define HDR_CLASS_MASK ((1u << HDR_CLASS_BITS) - 1)
#define HDR_FMT_SHIFT 22
#define HDR_FLAGS_SHIFT 26
#define HDR_HASH_SHIFT 32
#define HDR_HASH_MASK ((1u << 22) - 1)
#define HDR_SLOTS_SHIFT 54
#define HDR_SLOTS_OVERFLOW 1023u

/* Formats: what the body holds. */
enum {
    FMT_FIXED = 0,     /* named pointer fields (ordinary objects, classes, blocks, contexts) */
    FMT_INDEXABLE = 1, /* indexed pointer slots (Array) */
    FMT_BYTES = 2,     /* slots[0] = byte length, bytes from slots[1], NUL-terminated */
    FMT_WORDS = 3,     /* raw 64-bit words (Double, large Integer) */
};

/* Bits 26-31 are the collector's flags (GCF_*, gc.h). */

static inline uint32_t obj_class_index(const Obj *o) { return (uint32_t)(o->hdr & HDR_CLASS_MASK); }
static inline unsigned obj_format(const Obj *o) { return (unsigned)(o->hdr >> HDR_FMT_SHIFT) & 3u; }
/* The identity hash is assigned on first use (0 means "not yet"), so allocation skips it. */
static inline uint32_t obj_hash(Obj *o)
{
    uint32_t h = (uint32_t)(o->hdr >> HDR_HASH_SHIFT) & HDR_HASH_MASK;
    if (UNLIKELY(h == 0)) {
        h = gc_next_hash();
        o->hdr |= (uint64_t)h << HDR_HASH_SHIFT;
    }
    return h;
}
static inline size_t obj_num_slots(const Obj *o)
{
    size_t n = (size_t)(o->hdr >> HDR_SLOTS_SHIFT);
    if (UNLIKELY(n == HDR_SLOTS_OVERFLOW))
        n = (size_t)(((const uint64_t *)o)[-1] & ((1ull << 54) - 1));
    return n;
}
static inline Obj *as_obj(Value v) { return (Obj *)v; }
static inline Value obj_value(const Obj *o) { return (Value)o; }

/* ---- The class table ---- */
typedef struct Method Method;
typedef struct MethodTable {
    Value *keys;      /* selector symbols */
    Method **values;
    uint32_t count, cap;
} MethodTable;

typedef struct ClassInfo {
    uint32_t index;
    const char *name;          /* NUL-terminated, owned by the name symbol (stable) */
    Value nameSym;
    struct ClassInfo *super;   /* NULL for Object and for nil superclasses */
    struct ClassInfo *meta;    /* the metaclass (for a metaclass: NULL) */
    struct ClassInfo *base;    /* for a metaclass: its class; else itself */
    Value classObj;            /* the heap object standing for this class */
    Value fieldNames;          /* Array of Symbols, inherited fields first */
    uint32_t numFields;        /* instance fields (incl. inherited) */
    uint8_t instFormat;        /* format of instances */
    bool isMeta, loaded;
    MethodTable methods;
    Value methodsArray;        /* Class>>methods' Array (methodarray.h), nil until asked */
    const char *sourcePath;
} ClassInfo;

/* Well-known class indices: fixed so the interpreter can test them cheaply. */
enum {
    CLS_NONE = 0,
    CLS_OBJECT, CLS_CLASS, CLS_METACLASS, CLS_NIL, CLS_BOOLEAN, CLS_TRUE, CLS_FALSE,
    CLS_INTEGER, CLS_DOUBLE, CLS_STRING, CLS_SYMBOL, CLS_ARRAY,
    CLS_BLOCK, CLS_BLOCK1, CLS_BLOCK2, CLS_BLOCK3, CLS_BLOCK4,
    CLS_METHOD, CLS_PRIMITIVE, CLS_SYSTEM, CLS_CONTEXT,
    CLS_FIRST_USER
};

/* A class's method Array (Class>>methods, methodarray.h) has this header bit: a store
 * into it changes what the class answers to, so the interpreter's own at:put: leaves
 * such an Array to the primitive. One test of the header word serves both conditions. */
#define HDR_METHOD_ARRAY (1ull << 24)
static inline bool obj_is_plain_array(const Obj *o)
{
    return (o->hdr & (HDR_CLASS_MASK | HDR_METHOD_ARRAY)) == CLS_ARRAY;
}

/* Block objects: slots of a closure. */
enum { BLK_METHOD, BLK_CTX, BLK_SELF, BLK_HOME, BLK_SERIAL, BLK_SIZE };
/* Context objects (captured variables): slot 0 is the enclosing context. */
enum { CTX_OUTER = 0 };
/* Method mirror objects: slot 0 is the Method* (as a fake small integer). */


/* The VM-wide state that is not per-process: the class table and the permanent
 * objects. Not to be confused with globals (globals.h, the Smalltalk namespace) or
 * SYM (symbol.h, the interned selectors the VM sends). */
typedef struct VMState {
    ClassInfo **classes;
    uint32_t numClasses, capClasses;
    Value nil, trueObj, falseObj, systemObj;
    Value zero, negativeZero; /* the Doubles +0.0 and -0.0: permanent boxes */
} VMState;

extern VMState VM;

static inline ClassInfo *class_at(uint32_t i) { return VM.classes[i]; }
/* An immediate's class without a branch: tag 01 or 11 is Integer, 10 is Double. */
_Static_assert(CLS_DOUBLE == CLS_INTEGER + 1, "class_index_of relies on Double following Integer");
static inline uint32_t class_index_of(Value v)
{
    return (v & VALUE_TAG_MASK) ? CLS_DOUBLE - (uint32_t)(v & 1) : obj_class_index(as_obj(v));
}
static inline ClassInfo *class_of(Value v) { return VM.classes[class_index_of(v)]; }
static inline Value bool_value(bool b) { return b ? VM.trueObj : VM.falseObj; }

/* ---- Constructors (all allocate in the collected heap unless "perm") ---- */
Obj *obj_new(uint32_t classIndex, unsigned format, size_t numSlots);
Obj *obj_new_perm(uint32_t classIndex, unsigned format, size_t numSlots);
Value obj_instantiate(ClassInfo *c, size_t indexedSlots);
Value str_new(const char *bytes, size_t len);
Value str_new_perm(const char *bytes, size_t len);
Value str_from_cstr(const char *s);
Value str_alloc(size_t len); /* zero-filled, NUL-terminated */

Value array_new(size_t n);
Value array_new_perm(size_t n);
Value obj_shallow_copy(Value v);

static inline size_t str_len(Value s) { return (size_t)as_obj(s)->slots[0]; }
static inline char *str_bytes(Value s) { return (char *)&as_obj(s)->slots[1]; }

/* Strings are UTF-8, and SOM counts and indexes them by character. Almost
 * every string is ASCII, where a character is a byte: the first character
 * operation on a string scans it once and records the answer in two header
 * bits, so that ASCII strings index in constant time afterwards. (Strings
 * are immutable, so the answer stays true.) */
#define HDR_STR_CHECKED (1ull << 24)
#define HDR_STR_NONASCII (1ull << 25)
bool str_scan_ascii(Obj *o);
static inline bool str_is_ascii(Value s)
{
    uint64_t h = as_obj(s)->hdr;
    if (LIKELY(h & HDR_STR_CHECKED)) return !(h & HDR_STR_NONASCII);
    return str_scan_ascii(as_obj(s));
}
/* The one way characters are counted: the byte length of the character at s (at
 * most n bytes): a well-formed UTF-8 sequence (Unicode's Table 3-7: no overlong
 * form, no surrogate, nothing past U+10FFFF), or 1 for a byte that starts none.
 * Every primitive that counts, indexes or searches by character steps with it, so
 * that a position one of them answers is the position the others take (an HTTP
 * reader that cuts where indexOf: points must cut where it points). */
size_t str_char_size(const char *s, size_t n);
/* Length in characters (code points; a byte that starts no valid sequence
 * counts as one character). */
size_t str_char_len(Value s);
/* Byte offset of the character at 0-based index i (i <= str_char_len(s)). */
size_t str_char_offset(Value s, size_t i);
/* A Double: immediate when it fits (common.h), else a box of one raw word. */
Value double_new_boxed(double d);
/* For literals: immediate, or a permanent box (the collector never moves it). */
Value double_new_perm(double d);
static inline Value double_new(double d)
{
    Value v;
    if (LIKELY(float_encode(d, &v))) return v;
    return double_new_boxed(d);
}

static inline double double_val(Value v)
{
    if (LIKELY(is_float(v))) return float_val(v);
    double d;
    memcpy(&d, &as_obj(v)->slots[0], 8);
    return d;
}
static inline bool is_double(Value v) { return is_float(v) || (is_ptr(v) && obj_class_index(as_obj(v)) == CLS_DOUBLE); }
static inline bool is_largeint(Value v) { return is_ptr(v) && obj_class_index(as_obj(v)) == CLS_INTEGER; }
static inline bool is_string_like(Value v)
{
    if (!is_ptr(v)) return false;
    uint32_t c = obj_class_index(as_obj(v));
    return c == CLS_STRING || c == CLS_SYMBOL || (obj_format(as_obj(v)) == FMT_BYTES);
}
static inline size_t array_len(Value a) { return obj_num_slots(as_obj(a)); }

/* == : identity, except that equal integers are identical (SOM's Integer>>==
 * compares values), large ones included. Large integers are normalised
 * (a value that fits is small), so equal ones have equal words. */
bool largeint_words_equal(Value a, Value b);
static inline bool values_identical(Value a, Value b)
{
    return a == b || (is_largeint(a) && is_largeint(b) && largeint_words_equal(a, b));
}

/* ---- Class table ---- */
ClassInfo *class_create(const char *name, uint32_t fixedIndex);
void class_set_super(ClassInfo *c, ClassInfo *super);
void class_add_method(ClassInfo *c, Method *m);
/* The table becomes ms[0..n) (for a selector twice, the first): what the class answers to. */
void class_set_methods(ClassInfo *c, Method **ms, size_t n);
Method *class_lookup(ClassInfo *c, Value selector);       /* walks superclasses */
Method *class_local_method(ClassInfo *c, Value selector);
ClassInfo *class_from_object(Value classObj);            /* NULL if not a class */
bool class_is_subclass(ClassInfo *c, ClassInfo *ancestor);

#endif
