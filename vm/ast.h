// SPDX-License-Identifier: BSD-2-Clause
/* ast.h - the parse tree the compiler works on: one class definition, its methods and their scopes. */
#ifndef SQVM_AST_H
#define SQVM_AST_H

#include "common.h"

typedef struct Scope Scope;

/* A named variable: argument or temporary of one method or block. */
typedef struct Var {
    char *name;
    Scope *scope;       /* where it is declared (possibly an inlined block) */
    bool isArg, captured;
    int argIndex;       /* 1-based for arguments */
    int slot;           /* frame local index, or context slot when captured */
} Var;

typedef enum {
    N_LIT, N_VAR, N_ASSIGN, N_SEND, N_CASCADE, N_BLOCK, N_RETURN,
    N_SELF, N_SUPER, N_NIL, N_TRUE, N_FALSE
} NodeKind;

typedef enum { REF_UNRESOLVED, REF_VAR, REF_FIELD, REF_GLOBAL } RefKind;

/* The control-flow sends compiled as jumps: the one list of inlined selectors.
 * X(selector, form, recv, arg0, arg1): the send is inlined when each operand marked
 * 0 or 1 is a literal block of that many parameters (-1: any expression); a receiver
 * block that must be literal is inlined with the arguments. The form names the code
 * compiler.c generates; the selectors that share one generate the same code. */
#define INLINED_SENDS(X)                              \
    X("ifTrue:",         INLINE_IF_TRUE,      -1, 0, -1) \
    X("ifFalse:",        INLINE_IF_FALSE,     -1, 0, -1) \
    X("ifTrue:ifFalse:", INLINE_IF_TRUE,      -1, 0, 0)  \
    X("ifFalse:ifTrue:", INLINE_IF_FALSE,     -1, 0, 0)  \
    X("and:",            INLINE_AND,          -1, 0, -1) \
    X("&&",              INLINE_AND,          -1, 0, -1) \
    X("or:",             INLINE_OR,           -1, 0, -1) \
    X("||",              INLINE_OR,           -1, 0, -1) \
    X("ifNil:",          INLINE_IF_NIL,       -1, 0, -1) \
    X("ifNil:ifNotNil:", INLINE_IF_NIL,       -1, 0, 0)  \
    X("ifNotNil:",       INLINE_IF_NOT_NIL,   -1, 0, -1) \
    X("ifNotNil:ifNil:", INLINE_IF_NOT_NIL,   -1, 0, 0)  \
    X("whileTrue:",      INLINE_WHILE_TRUE,   0, 0, -1)  \
    X("whileTrue",       INLINE_WHILE_TRUE,   0, -1, -1) \
    X("whileFalse:",     INLINE_WHILE_FALSE,  0, 0, -1)  \
    X("whileFalse",      INLINE_WHILE_FALSE,  0, -1, -1) \
    X("to:do:",          INLINE_TO_DO,        -1, -1, 1) \
    X("downTo:do:",      INLINE_DOWN_TO_DO,   -1, -1, 1) \
    X("timesRepeat:",    INLINE_TIMES_REPEAT, -1, 0, -1)

typedef enum {
    INLINE_NONE,          /* an ordinary send */
    INLINE_IF_TRUE, INLINE_IF_FALSE, INLINE_AND, INLINE_OR, INLINE_IF_NIL, INLINE_IF_NOT_NIL,
    INLINE_WHILE_TRUE, INLINE_WHILE_FALSE, INLINE_TO_DO, INLINE_DOWN_TO_DO, INLINE_TIMES_REPEAT
} InlineForm;

typedef struct Node Node;
struct Node {
    NodeKind kind;
    int line, col;
    Value lit;            /* N_LIT; N_SEND selector; N_VAR name symbol */
    char *name;           /* N_VAR */
    RefKind ref;          /* N_VAR after resolution */
    Var *var;
    int field;
    Node *recv;           /* N_SEND / N_CASCADE receiver; N_ASSIGN/N_RETURN value */
    Node *target;         /* N_ASSIGN variable */
    Node **args;          /* N_SEND arguments; N_CASCADE messages (sends without receiver) */
    int nargs;
    bool isSuper;         /* N_SEND to super */
    InlineForm inlined;   /* N_SEND compiled as control flow, or INLINE_NONE */
    Scope *scope;         /* N_BLOCK */
};

/* A method or block body and its variables. */
struct Scope {
    Scope *outer;
    Scope *real;          /* nearest enclosing scope that is not an inlined block */
    bool isBlock, inlined;
    Var **vars;           /* arguments first, then temporaries */
    int nvars, nargs;
    Node **body;
    int nbody;
    int line;
    /* filled by slot assignment (real scopes only) */
    int numLocals, ctxSize;
    bool hasCtx;
};

typedef struct MethodDef {
    Value selector;
    Scope *scope;
    bool isPrimitive;
    int line;
} MethodDef;

typedef struct ClassDef {
    char *name, *superName;   /* superName NULL means Object; "nil" means none */
    char **fields, **classFields;
    int nfields, nclassFields;
    MethodDef **methods, **classMethods;
    int nmethods, nclassMethods;
    const char *path;
    void *arena;          /* everything above is allocated here */
} ClassDef;

/* Parses a whole class file; on a syntax error prints path:line:col and answers NULL. */
ClassDef *parse_class(const char *path, const char *src, size_t len);
/* Parses "[ statements ]"-like text for -e: a method "doIt" of no class. */
MethodDef *parse_expression_method(const char *src, size_t len, void **arenaOut);
void ast_free(void *arena);

#endif
