// SPDX-License-Identifier: BSD-2-Clause
/* method.h - compiled methods, send sites with their inline caches, and the bytecode enum. */
#ifndef SQVM_METHOD_H
#define SQVM_METHOD_H

#include "common.h"
#include "object.h"

typedef enum {
#define OPCODE(name, operands, effect, format) OP_##name,
#include "opcodes.h"
#undef OPCODE
    OP__COUNT
} Opcode;

/* How an opcode's operands are printed (opcodes.h's fourth column). */
typedef enum {
    OPF_NONE, OPF_INT8, OPF_LIT, OPF_INDEX, OPF_CTX, OPF_GLOBAL, OPF_SITE, OPF_JUMP, OPF_JUMP_BACK,
    OPF_FOR, OPF_SLOT_SITE, OPF_SLOT2_SITE, OPF_INT8_SITE, OPF_SLOT_INT8_SITE
} OperandFormat;

extern const char *const opcode_names[];
extern const int8_t opcode_operand_bytes[];
extern const uint8_t opcode_formats[];

/* One send site: its selector and an inline cache of two entries, the class of the
 * last receiver that missed first: a site that sees two classes in turn (List's
 * "yTail isNil", a ListElement until the end of the list, then nil) hits in one of them. */
typedef struct SendSite {
    Value selector;       /* a Symbol (permanent) */
    uint32_t nargs;
    uint32_t cachedClass; /* class index of the last receiver that missed, 0 when empty */
    Method *cachedMethod;
    uint32_t cachedClass2; /* the entry cachedClass had before, 0 when empty */
    /* cachedMethod's quick form when it is a getter or a setter (QUICK_FIELD,
     * QUICK_SETTER; else QUICK_NONE) and its field: a hit answers in place without a
     * load through the method (NBody's Body>>x and vx:, List's next). In the padding
     * after cachedClass2; emptied with the cache, and so when tracing turns quick
     * methods off. */
    uint8_t quick, quickIndex;
    Method *cachedMethod2;
} SendSite;

/* A primitive works on args[0] (receiver) .. args[nargs]. */
struct Frame;
typedef enum {
    PRIM_OK,         /* result stored in args[0] */
    PRIM_FAIL,       /* could not handle the arguments */
    PRIM_ACTIVATED,  /* pushed a new activation (block value, perform:); the interpreter resumes in it */
} PrimResult;
typedef PrimResult (*PrimFn)(Value *args, uint32_t nargs);

/* Quick methods run without a frame when nobody traces method entry/return:
 * "^self" (also an empty body), "^field", "^constant" and "field := arg". */
enum { QUICK_NONE, QUICK_SELF, QUICK_FIELD, QUICK_CONST, QUICK_SETTER };

enum {
    MF_BLOCK = 1,        /* a block's method */
    MF_HAS_CTX = 2,      /* activation allocates a context for captured variables */
    MF_NONLOCAL = 4,     /* contains a ^ inside a block (needs the home frame serial) */
    /* library methods whose activations the VM recognises on the stack (unwind.c) */
    MF_ON_DO = 8,        /* Block1>>on:do: */
    MF_ENSURE = 16,      /* Block1>>ensure:, ifCurtailed: */
    MF_EXC_SIGNAL = 32,  /* Exception>>signal */
    MF_EXC_HANDLER = 64, /* Exception>>evaluateHandler:frame:serial: (a handler is running) */
};

/* A compiled method or block. Native memory: it never moves. */
struct Method {
    Value selector;          /* Symbol; for blocks, the home method's selector */
    ClassInfo *holder;       /* class the method is defined in */
    uint8_t *code;
    uint32_t codeLen;
    uint16_t nargs;          /* not counting the receiver */
    uint16_t nlocals;        /* frame locals (uncaptured temporaries) */
    uint16_t ctxSize;        /* captured variables, when MF_HAS_CTX */
    uint16_t maxStack;
    uint16_t flags;
    uint16_t numLiterals, numSites, numBlocks;
    Value *literals;         /* GC roots */
    SendSite *sites;
    Method **blocks;
    Method *outer;           /* for blocks: the enclosing method or block */
    PrimFn prim;             /* for primitives: the C function (prim_quick for quick methods) */
    uint8_t quick, quickIndex; /* quick is QUICK_NONE while call probes are traced */
    uint8_t quickKind;         /* what detect_quick found */
    Value quickValue;        /* QUICK_CONST: an immediate or permanent object */
    /* Copy-in of captured arguments at entry: argCopy[i], for argument i (from 1,
     * as in args[i]; argCopy[0] is unused), is its context slot, or 0 when no block
     * captures it. */
    uint8_t *argCopy;
    /* Line numbers: lines[i] is the source line of code[i]. */
    uint16_t *lines;
    uint32_t line;
    Value mirror;            /* the Smalltalk Method object, created lazily */
    char *printName;         /* "Class>>selector", NUL-terminated, for probes and backtraces */
    const char *sourcePath;  /* file the method was compiled from ("-e" for expressions) */
};

Method *method_new(void);
#ifdef SQVM_FUZZ
size_t method_fuzz_mark(void);           /* the number of methods made so far */
void method_fuzz_release(size_t mark);   /* frees every method made since mark */
#endif
/* Quick methods on (untraced) or off (traced: they run as activations). */
void method_set_quick_enabled(bool on);
/* Sets quick and prim of a method whose quickKind the compiler found. */
void method_install_quick(Method *m);
/* Empties every send site's inline cache (a class's methods changed). */
void method_flush_send_caches(void);
Value method_mirror(Method *m);
Method *method_from_mirror(Value v);
const char *method_print_name(Method *m);
int method_line_at(const Method *m, const uint8_t *ip);
void disasm_method(Method *m, int indent);
void disasm_class(ClassInfo *c);

#endif
