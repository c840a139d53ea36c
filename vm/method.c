// SPDX-License-Identifier: BSD-2-Clause
/* method.c - method objects: creation, Smalltalk mirrors, line lookup and GC roots. */
#include "method.h"
#include "gc.h"
#include "prims.h"
#include "vm.h"

#include <stdlib.h>

const char *const opcode_names[] = {
#define OPCODE(name, operands, effect, format) #name,
#include "opcodes.h"
#undef OPCODE
};

const int8_t opcode_operand_bytes[] = {
#define OPCODE(name, operands, effect, format) operands,
#include "opcodes.h"
#undef OPCODE
};

const uint8_t opcode_formats[] = {
#define OPCODE(name, operands, effect, format) OPF_##format,
#include "opcodes.h"
#undef OPCODE
};

/* Every method is kept in one list so the collector can update their literals. */
static Method **all;
static size_t numAll, capAll;

static void scan_roots(GCVisitFn visit)
{
    for (size_t i = 0; i < numAll; i++) {
        Method *m = all[i];
        for (uint32_t j = 0; j < m->numLiterals; j++) visit(&m->literals[j]);
        visit(&m->mirror);
    }
}

/* Every send site's inline cache emptied: a class's methods changed (interp_methods_changed). */
void method_flush_send_caches(void)
{
    for (size_t i = 0; i < numAll; i++)
        for (uint32_t j = 0; j < all[i]->numSites; j++) {
            all[i]->sites[j].cachedClass = all[i]->sites[j].cachedClass2 = 0;
            all[i]->sites[j].cachedMethod = all[i]->sites[j].cachedMethod2 = NULL;
            all[i]->sites[j].quick = QUICK_NONE;
        }
}

static bool quickEnabled = true;

/* A method whose quickKind is set runs without a frame, unless call probes are
 * traced (then it must fire its entry and return like any other). */
void method_install_quick(Method *m)
{
    if (!m->quickKind) return;
    m->quick = quickEnabled ? m->quickKind : QUICK_NONE;
    m->prim = quickEnabled ? prim_quick : NULL;
}

void method_set_quick_enabled(bool on)
{
    quickEnabled = on;
    for (size_t i = 0; i < numAll; i++) method_install_quick(all[i]);
    /* the sites' copies of the quick forms (SendSite.quick) follow the methods' */
    method_flush_send_caches();
}

Method *method_new(void)
{
    static bool registered;
    if (!registered) { gc_add_root_scanner(scan_roots, true); registered = true; }
    Method *m = vm_xcalloc(1, sizeof(Method));
    m->mirror = VM.nil;
    if (numAll == capAll) {
        capAll = capAll ? capAll * 2 : 1024;
        all = vm_xrealloc(all, capAll * sizeof(Method *));
    }
    all[numAll++] = m;
    return m;
}

#ifdef SQVM_FUZZ
/* fuzz_compile compiles millions of inputs in one process and runs none of them: the
 * methods of one input are dropped before the next, so memory stays flat. */
size_t method_fuzz_mark(void) { return numAll; }

void method_fuzz_release(size_t mark)
{
    while (numAll > mark) {
        Method *m = all[--numAll];
        free(m->code);
        free(m->lines);
        free(m->literals);
        free(m->sites);
        free(m->blocks);
        free(m->argCopy);
        free(m->printName);
        free(m);
    }
}
#endif

/* The Smalltalk-side Method (or Primitive) object: one slot holding the Method*. */
Value method_mirror(Method *m)
{
    if (m->mirror == VM.nil) {
        bool isPrim = (m->prim && !m->quickKind) || (!m->code && !(m->flags & MF_BLOCK));
        Obj *o = obj_new_perm(isPrim ? CLS_PRIMITIVE : CLS_METHOD,
                              FMT_FIXED, 1);
        o->slots[0] = ptr_value(m);
        m->mirror = obj_value(o);
    }
    return m->mirror;
}

Method *method_from_mirror(Value v)
{
    if (!is_ptr(v)) return NULL;
    uint32_t c = obj_class_index(as_obj(v));
    if (c != CLS_METHOD && c != CLS_PRIMITIVE) return NULL;
    return value_ptr(as_obj(v)->slots[0]);
}

const char *method_print_name(Method *m) { return m->printName ? m->printName : "?"; }

int method_line_at(const Method *m, const uint8_t *ip)
{
    if (!m->code || ip <= m->code || ip > m->code + m->codeLen) return (int)m->line;
    return m->lines[ip - 1 - m->code];
}
