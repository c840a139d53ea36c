// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_compile.c - libFuzzer target: the lexer, parser and compiler on class-file text.
 * Each input is parsed as a class definition; when it parses, every method (instance
 * and class side) is compiled against a holder with the input's fields, and the
 * result disassembled. Syntax and compile errors are expected (they print and answer
 * NULL); a crash, a sanitizer report or a hang is a finding. */
#include "ast.h"
#include "compiler.h"
#include "fuzz_vm.h"
#include "method.h"
#include "object.h"
#include "symbol.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static ClassInfo *holder_for(ClassDef *cd, bool meta)
{
    static ClassInfo *inst, *cls;
    ClassInfo **h = meta ? &cls : &inst;
    if (!*h) *h = class_create(meta ? "FuzzHolderClass" : "FuzzHolder", 0);
    int n = meta ? cd->nclassFields : cd->nfields;
    char **names = meta ? cd->classFields : cd->fields;
    Value a = array_new_perm((size_t)n);
    for (int i = 0; i < n; i++) as_obj(a)->slots[i] = sym_intern_cstr(names[i]);
    (*h)->fieldNames = a;
    (*h)->numFields = (uint32_t)n;
    return *h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_vm_boot();
    ClassDef *cd = parse_class("fuzz.som", (const char *)data, size);
    if (!cd) return 0;
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
    return 0;
}
