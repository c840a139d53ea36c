// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_compile.c - libFuzzer target: the lexer, parser and compiler on class-file text.
 * Each input is parsed as a class definition; when it parses, every method (instance
 * and class side) is compiled against a holder with the input's fields, and the
 * result disassembled. Syntax and compile errors are expected (they print and answer
 * NULL); a crash, a sanitizer report or a hang is a finding. */
#include "ast.h"
#include "compiler.h"
#include "fuzz_vm.h"
#include "fuzz_watchdog.h"
#include "method.h"
#include "object.h"
#include "symbol.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The class the methods are compiled in, with the input's fields. Its field-name array
 * is permanent (never freed), so there is one per field count, made once: a new array
 * per input would grow permanent space without end. */
static ClassInfo *holder_for(ClassDef *cd, bool meta)
{
    static ClassInfo *inst, *cls;
    static Value arrays[2][257];
    ClassInfo **h = meta ? &cls : &inst;
    if (!*h) *h = class_create(meta ? "FuzzHolderClass" : "FuzzHolder", 0);
    int n = meta ? cd->nclassFields : cd->nfields;
    char **names = meta ? cd->classFields : cd->fields;
    Value a = n <= 256 ? arrays[meta][n] : 0;
    if (!a) a = array_new_perm((size_t)n);
    if (n <= 256) arrays[meta][n] = a;
    for (int i = 0; i < n; i++) as_obj(a)->slots[i] = sym_intern_cstr(names[i]);
    (*h)->fieldNames = a;
    (*h)->numFields = (uint32_t)n;
    return *h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_vm_boot();
    fuzz_watchdog_arm(5000);
    size_t mark = method_fuzz_mark();
    ClassDef *cd = parse_class("fuzz.som", (const char *)data, size);
    if (!cd) { fuzz_watchdog_disarm(); return 0; }
    for (int side = 0; side < 2; side++) {
        ClassInfo *h = holder_for(cd, side == 1);
        MethodDef **defs = side ? cd->classMethods : cd->methods;
        int n = side ? cd->nclassMethods : cd->nmethods;
        for (int i = 0; i < n; i++) {
            Method *m = compile_method(defs[i], h, "fuzz.som");
            if (m) disasm_method(m, 0);
        }
    }
    ast_free(cd->arena);
    method_fuzz_release(mark);
    fuzz_watchdog_disarm();
    return 0;
}
