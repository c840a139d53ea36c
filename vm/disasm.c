// SPDX-License-Identifier: BSD-2-Clause
/* disasm.c - prints bytecode: for `sqvm --disassemble Class` and the compiler tests. */
#include "globals.h"
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

void disasm_method(Method *m, int indent)
{
    printf("%*s%s (args %u, locals %u, ctx %u, stack %u)%s\n", indent, "", method_print_name(m), m->nargs,
           m->nlocals, m->ctxSize, m->maxStack, m->quickKind ? " quick" : m->prim ? " primitive" : "");
    for (uint32_t pc = 0; pc < m->codeLen;) {
        uint8_t op = m->code[pc];
        printf("%*s  %4u  %-16s", indent, "", pc, opcode_names[op]);
        const uint8_t *o = &m->code[pc + 1];
        switch (op) {
        case OP_PUSH_INT8: printf(" %d", (int8_t)o[0]); break;
        case OP_PUSH_LIT: printf(" "); print_literal(m->literals[o[0] | o[1] << 8]); break;
        case OP_PUSH_ARG: case OP_POP_ARG: case OP_PUSH_LOCAL: case OP_POP_LOCAL: case OP_PUSH_FIELD: case OP_POP_FIELD:
        case OP_PUSH_BLOCK:
            printf(" %u", o[0]);
            break;
        case OP_PUSH_CTX: case OP_POP_CTX: printf(" %u %u", o[0], o[1]); break;
        case OP_PUSH_GLOBAL: printf(" %s", sym_cstr(globals[o[0] | o[1] << 8].name)); break;
        case OP_JUMP: case OP_JUMP_IF_TRUE: case OP_JUMP_IF_FALSE: case OP_JUMP_IF_NIL: case OP_JUMP_IF_NOT_NIL:
            printf(" -> %u", pc + 3 + (o[0] | o[1] << 8));
            break;
        case OP_JUMP_BACK: printf(" -> %u", pc + 3 - (o[0] | o[1] << 8)); break;
        case OP_FOR_NEXT: printf(" %u %u -> %u", o[0], o[1], pc + 5 - (o[2] | o[3] << 8)); break;
        default:
            if (op >= OP_SEND && op <= OP_SEND_ATPUT) printf(" #%s", sym_cstr(m->sites[o[0] | o[1] << 8].selector));
            else if (op >= OP_SEND_ADD_L && op <= OP_SEND_NE_I) {
                int shape = (op - OP_SEND_ADD_L) % 3; /* L, LL, I */
                int bytes = shape == 1 ? 2 : 1;
                if (shape == 2) printf(" %d", (int8_t)o[0]);
                else printf(shape == 1 ? " %u %u" : " %u", o[0], o[1]);
                printf(" #%s", sym_cstr(m->sites[o[bytes] | o[bytes + 1] << 8].selector));
            }
            break;
        }
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
