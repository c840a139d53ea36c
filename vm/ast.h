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
    bool inlined;         /* N_SEND compiled as control flow */
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
