// SPDX-License-Identifier: BSD-2-Clause
/* disasm.c - prints bytecode: for `sqvm --disassemble Class` and the compiler tests. */
#include "globals.h"
#include "interp.h"
#include "method.h"
#include "symbol.h"

#include <stdio.h>
#include <stdlib.h>

static void print_literal(Value v)
{
    if (is_int(v)) printf("%lld", (long long)int_val(v));
    else if (is_double(v)) printf("%.17g", double_val(v));
    else if (obj_class_index(as_obj(v)) == CLS_SYMBOL) printf("#%s", str_bytes(v));
    else if (obj_class_index(as_obj(v)) == CLS_STRING) printf("'%s'", str_bytes(v));
    else printf("<%s>", class_of(v)->name);
}

/* A frame slot: "a2" (argument 2) or "l0" (local 0). */
static void print_slot(const Method *m, uint8_t s)
{
    int slot = (int8_t)s;
    if (slot < 0) printf(" a%d", slot + m->nargs + 1);
    else printf(" l%d", slot - (int)FRAME_HEADER_WORDS);
}

static void print_site(const Method *m, const uint8_t *o)
{
    printf(" #%s", sym_cstr(m->sites[o[0] | o[1] << 8].selector));
}

static void print_operands(const Method *m, uint32_t pc, const uint8_t *o)
{
    switch ((OperandFormat)opcode_formats[m->code[pc]]) {
    case OPF_NONE: break;
    case OPF_INT8: printf(" %d", (int8_t)o[0]); break;
    case OPF_LIT: printf(" "); print_literal(m->literals[o[0] | o[1] << 8]); break;
    case OPF_INDEX: printf(" %u", o[0]); break;
    case OPF_CTX: printf(" %u %u", o[0], o[1]); break;
    case OPF_GLOBAL: printf(" %s", sym_cstr(globals[o[0] | o[1] << 8].name)); break;
    case OPF_SITE: print_site(m, o); break;
    case OPF_JUMP: printf(" -> %u", pc + 3 + (o[0] | o[1] << 8)); break;
    case OPF_JUMP_BACK: printf(" -> %u", pc + 3 - (o[0] | o[1] << 8)); break;
    case OPF_FOR: printf(" %u %u -> %u", o[0], o[1], pc + 5 - (o[2] | o[3] << 8)); break;
    case OPF_SLOT_SITE: print_slot(m, o[0]); print_site(m, o + 1); break;
    case OPF_SLOT2_SITE: print_slot(m, o[0]); print_slot(m, o[1]); print_site(m, o + 2); break;
    case OPF_INT8_SITE: printf(" %d", (int8_t)o[0]); print_site(m, o + 1); break;
    case OPF_SLOT_INT8_SITE: print_slot(m, o[0]); printf(" %d", (int8_t)o[1]); print_site(m, o + 2); break;
    }
}

void disasm_method(Method *m, int indent)
{
    printf("%*s%s (args %u, locals %u, ctx %u, stack %u)%s\n", indent, "", method_print_name(m), m->nargs,
           m->nlocals, m->ctxSize, m->maxStack, m->quickKind ? " quick" : m->prim ? " primitive" : "");
    for (uint32_t pc = 0; pc < m->codeLen;) {
        uint8_t op = m->code[pc];
        printf("%*s  %4u  %-16s", indent, "", pc, opcode_names[op]);
        print_operands(m, pc, &m->code[pc + 1]);
        printf("\n");
        pc += 1 + (uint32_t)opcode_operand_bytes[op];
    }
    for (uint32_t i = 0; i < m->numBlocks; i++) disasm_method(m->blocks[i], indent + 4);
}

void disasm_class(ClassInfo *c)
{
    ClassInfo *sides[2] = {c, c->meta};
    for (int s = 0; s < 2; s++) {
        ClassInfo *k = sides[s];
        if (!k) continue;
        Method **ms = malloc((k->methods.count + 1) * sizeof(Method *));
        size_t n = 0;
        for (uint32_t i = 0; i < k->methods.cap; i++)
            if (k->methods.keys[i]) ms[n++] = k->methods.values[i];
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && ms[j - 1]->line > ms[j]->line; j--) {
                Method *t = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++) disasm_method(ms[i], 0);
        free(ms);
    }
}
