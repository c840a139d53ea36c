// SPDX-License-Identifier: BSD-2-Clause
/* loader.c - finds class files, defines classes and metaclasses, and bootstraps the core library. */
#include "loader.h"
#include "ast.h"
#include "compiler.h"
#include "gc.h"
#include "globals.h"
#include "interp.h"
#include "probes.h"
#include "symbol.h"
#include "unwind.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>

/* The core library, embedded at build time (build/corelib.c). */
typedef struct CoreFile { const char *name; const char *src; size_t len; } CoreFile;
extern const CoreFile corelib_files[];

static char **paths;
static int numPaths;

void loader_add_path(const char *dir, bool first)
{
    paths = vm_xrealloc(paths, (size_t)(numPaths + 1) * sizeof(char *));
    if (first) {
        memmove(paths + 1, paths, (size_t)numPaths * sizeof(char *));
        paths[0] = vm_xstrdup(dir);
    } else {
        paths[numPaths] = vm_xstrdup(dir);
    }
    numPaths++;
}

const char *loader_core_source(const char *name, size_t *len)
{
    for (const CoreFile *f = corelib_files; f->name; f++)
        if (!strcmp(f->name, name)) { *len = f->len; return f->src; }
    return NULL;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = vm_xmalloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = vm_xrealloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ---- Defining a class from its parse tree ---- */

static ClassInfo *find_class_named(const char *name)
{
    for (uint32_t i = 1; i < VM.numClasses; i++)
        if (VM.classes[i] && !VM.classes[i]->isMeta && !strcmp(VM.classes[i]->name, name)) return VM.classes[i];
    return NULL;
}

static ClassInfo *meta_of(ClassInfo *c)
{
    if (!c->meta) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s class", c->name);
        ClassInfo *m = class_create(buf, 0);
        m->isMeta = true;
        m->base = c;
        c->meta = m;
    }
    return c->meta;
}

static Value field_names(ClassInfo *super, char **names, int n, bool hiddenIndex)
{
    size_t inherited = super && super->fieldNames != VM.nil ? array_len(super->fieldNames) : 0;
    size_t total = inherited + (size_t)n + (hiddenIndex ? 1 : 0);
    Value a = array_new_perm(total);
    size_t k = 0;
    for (; k < inherited; k++) as_obj(a)->slots[k] = as_obj(super->fieldNames)->slots[k];
    /* Class objects keep their class index in a field no source can name. */
    if (hiddenIndex) as_obj(a)->slots[k++] = sym_intern_cstr("(class index)");
    for (int i = 0; i < n; i++) as_obj(a)->slots[k++] = sym_intern_cstr(names[i]);
    return a;
}

static uint8_t core_format(uint32_t index, uint8_t inherited)
{
    switch (index) {
    case CLS_ARRAY: return FMT_INDEXABLE;
    case CLS_STRING: case CLS_SYMBOL: return FMT_BYTES;
    case CLS_INTEGER: case CLS_DOUBLE: return FMT_WORDS;
    default: return inherited;
    }
}

static void compile_into(ClassInfo *holder, MethodDef **defs, int n, const char *path)
{
    for (int i = 0; i < n; i++) {
        Method *m = compile_method(defs[i], holder, path);
        if (!m) vm_exit(1);
        class_add_method(holder, m);
    }
}

static ClassInfo *define_class(ClassDef *cd)
{
    ClassInfo *super = NULL;
    if (!cd->superName) super = class_at(CLS_OBJECT);
    else if (strcmp(cd->superName, "nil") != 0) {
        super = loader_load_class(cd->superName);
        if (!super) {
            fprintf(stderr, "%s: error: superclass %s of %s not found on the class path\n", cd->path,
                    cd->superName, cd->name);
            vm_exit(1);
        }
    }
    if (!strcmp(cd->name, "Object")) super = NULL;
    ClassInfo *c = find_class_named(cd->name);
    if (!c) c = class_create(cd->name, 0);
    ClassInfo *meta = meta_of(c);
    class_set_super(c, super);
    c->instFormat = core_format(c->index, super ? super->instFormat : FMT_FIXED);
    meta->super = super ? meta_of(super) : class_at(CLS_CLASS);
    c->fieldNames = field_names(super, cd->fields, cd->nfields, c->index == CLS_CLASS);
    c->numFields = (uint32_t)array_len(c->fieldNames);
    meta->fieldNames = field_names(meta->super, cd->classFields, cd->nclassFields, false);
    meta->numFields = (uint32_t)array_len(meta->fieldNames);
    if (meta->numFields < 1) meta->numFields = 1;
    c->sourcePath = vm_xstrdup(cd->path);
    meta->sourcePath = c->sourcePath;
    /* The class object (an instance of the metaclass) and the metaclass object. */
    Obj *co = obj_new_perm(meta->index, FMT_FIXED, meta->numFields);
    co->slots[0] = int_value(c->index);
    c->classObj = obj_value(co);
    Obj *mo = obj_new_perm(CLS_METACLASS, FMT_FIXED, 1);
    mo->slots[0] = int_value(meta->index);
    meta->classObj = obj_value(mo);
    c->loaded = meta->loaded = true;
    globals_define(c->nameSym, c->classObj);
    vm_counters.class_loads++;
    if (SQ_ENABLED(CLASS_LOAD)) probe_class_load(c->name, c->sourcePath);
    compile_into(c, cd->methods, cd->nmethods, c->sourcePath);
    compile_into(meta, cd->classMethods, cd->nclassMethods, c->sourcePath);
    interp_flush_caches();
    if (c->index < CLS_FIRST_USER) interp_check_fast_paths();
    unwind_mark_methods(c);
    return c;
}

/* Time spent parsing and compiling class files (System>>totalCompilationTime);
 * a superclass loaded while its subclass compiles counts once. */
uint64_t loader_compile_ns;
static int loadDepth;

static ClassInfo *load_from_source(const char *name, const char *path, const char *src, size_t len)
{
    uint64_t start = loadDepth++ == 0 ? vm_now_ns() : 0;
    ClassDef *cd = parse_class(path, src, len);
    if (!cd) vm_exit(1);
    if (strcmp(cd->name, name) != 0) {
        fprintf(stderr, "%s:1:1: error: file defines class %s, expected %s\n", path, cd->name, name);
        vm_exit(1);
    }
    ClassInfo *c = define_class(cd);
    ast_free(cd->arena);
    if (--loadDepth == 0) loader_compile_ns += vm_now_ns() - start;
    return c;
}

/* Loading state guards against a class that (indirectly) inherits from itself. */
static const char *loading[64];
static int numLoading;

ClassInfo *loader_load_class(const char *name)
{
    ClassInfo *c = find_class_named(name);
    if (c && c->loaded) return c;
    for (int i = 0; i < numLoading; i++)
        if (!strcmp(loading[i], name)) {
            fprintf(stderr, "error: class %s inherits from itself\n", name);
            vm_exit(1);
        }
    if (numLoading == 64) vm_fatal("class hierarchy too deep while loading %s", name);
    loading[numLoading++] = name;
    /* As in SOM, the class path is searched in order and the embedded core
     * library is its last entry: a program's own Vector.som (or Object.som)
     * replaces the embedded one. */
    size_t len;
    c = NULL;
    for (int i = 0; i < numPaths && !c; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.som", paths[i], name);
        char *text = read_file(path, &len);
        if (!text) continue;
        c = load_from_source(name, path, text, len);
        free(text);
    }
    const char *src = c ? NULL : loader_core_source(name, &len);
    if (src) {
        char path[512];
        snprintf(path, sizeof path, "%s.som", name);
        c = load_from_source(name, path, src, len);
    }
    numLoading--;
    return c;
}

/* ---- Bootstrap ---- */

static const struct { uint32_t index; const char *name; } coreClasses[] = {
    {CLS_OBJECT, "Object"}, {CLS_CLASS, "Class"}, {CLS_METACLASS, "Metaclass"}, {CLS_NIL, "Nil"},
    {CLS_BOOLEAN, "Boolean"}, {CLS_TRUE, "True"}, {CLS_FALSE, "False"}, {CLS_INTEGER, "Integer"},
    {CLS_DOUBLE, "Double"}, {CLS_STRING, "String"}, {CLS_SYMBOL, "Symbol"}, {CLS_ARRAY, "Array"},
    {CLS_BLOCK, "Block"}, {CLS_BLOCK1, "Block1"}, {CLS_BLOCK2, "Block2"}, {CLS_BLOCK3, "Block3"},
    {CLS_BLOCK4, "Block4"}, {CLS_METHOD, "Method"}, {CLS_PRIMITIVE, "Primitive"}, {CLS_SYSTEM, "System"},
};

static void scan_class_roots(GCVisitFn visit)
{
    for (uint32_t i = 1; i < VM.numClasses; i++) {
        ClassInfo *c = VM.classes[i];
        if (!c) continue;
        visit(&c->methodsArray);
        visit(&c->fieldNames);
        visit(&c->classObj);
    }
    visit(&VM.nil);
    visit(&VM.trueObj);
    visit(&VM.falseObj);
    visit(&VM.systemObj);
    visit(&VM.zero);
    visit(&VM.negativeZero);
}

void loader_bootstrap(void)
{
    VM.nil = obj_value(obj_new_perm(CLS_NIL, FMT_FIXED, 0));
    globals_init();
    sym_init();
    for (size_t i = 0; i < sizeof coreClasses / sizeof coreClasses[0]; i++)
        class_create(coreClasses[i].name, coreClasses[i].index);
    ClassInfo *ctx = class_create("Context", CLS_CONTEXT);
    /* Metaclasses inherit the hidden class-index field from Class before Class.som loads. */
    class_at(CLS_CLASS)->fieldNames = field_names(NULL, NULL, 0, true);
    class_at(CLS_CLASS)->numFields = 1;
    VM.trueObj = obj_value(obj_new_perm(CLS_TRUE, FMT_FIXED, 0));
    VM.falseObj = obj_value(obj_new_perm(CLS_FALSE, FMT_FIXED, 0));
    VM.systemObj = obj_value(obj_new_perm(CLS_SYSTEM, FMT_FIXED, 0));
    const double zeros[2] = {0.0, -0.0};
    Obj *z = obj_new_perm(CLS_DOUBLE, FMT_WORDS, 1), *nz = obj_new_perm(CLS_DOUBLE, FMT_WORDS, 1);
    memcpy(&z->slots[0], &zeros[0], 8);
    memcpy(&nz->slots[0], &zeros[1], 8);
    VM.zero = obj_value(z);
    VM.negativeZero = obj_value(nz);
    gc_add_root_scanner(scan_class_roots, false);
    for (size_t i = 0; i < sizeof coreClasses / sizeof coreClasses[0]; i++)
        if (!loader_load_class(coreClasses[i].name)) vm_fatal("core class %s missing", coreClasses[i].name);
    class_set_super(ctx, class_at(CLS_OBJECT));
    meta_of(ctx)->super = class_at(CLS_OBJECT)->meta;
    ctx->loaded = true;
    globals_define(sym_intern_cstr("nil"), VM.nil);
    globals_define(sym_intern_cstr("true"), VM.trueObj);
    globals_define(sym_intern_cstr("false"), VM.falseObj);
    globals_define(sym_intern_cstr("system"), VM.systemObj);
    /* Processor: the one ProcessorScheduler */
    ClassInfo *ps = loader_load_class("ProcessorScheduler");
    if (!ps) vm_fatal("core class ProcessorScheduler missing");
    Obj *processor = obj_new_perm(ps->index, FMT_FIXED, ps->numFields);
    globals_define(sym_intern_cstr("Processor"), obj_value(processor));
}
