// SPDX-License-Identifier: BSD-2-Clause
/* parser.c - recursive-descent parser from SOM source to the parse tree (ast.h). */
#include "ast.h"
#include "largeint.h"
#include "lexer.h"
#include "object.h"
#include "symbol.h"
#include "vm.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- An arena: the whole tree of one class is freed at once ---- */

typedef struct ArenaBlock {
    struct ArenaBlock *next;
    size_t used, cap;
    char data[];
} ArenaBlock;

typedef struct Parser {
    Lexer lx;
    Token tok, peek;
    bool hasPeek;
    jmp_buf fail;
    ArenaBlock *arena;
    Scope *scope;
    const char *path;
    int depth;              /* expressions and literal arrays being parsed, nested */
} Parser;

/* Deeper nesting is a syntax error: the parser (and the compiler after it) recurse once
 * per level, and 100,000 nested parentheses must not overflow the C stack. */
#define MAX_NESTING 1000

static void *aalloc(Parser *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    ArenaBlock *b = p->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = vm_xmalloc(sizeof(ArenaBlock) + cap);
        b->used = 0;
        b->cap = cap;
        b->next = p->arena;
        p->arena = b;
    }
    void *r = b->data + b->used;
    b->used += n;
    memset(r, 0, n);
    return r;
}

static char *astrndup(Parser *p, const char *s, size_t n)
{
    char *r = aalloc(p, n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* Growable pointer arrays in the arena. */
static void push_ptr(Parser *p, void ***arr, int *n, void *item)
{
    if ((*n & (*n - 1)) == 0 || *n == 0) { /* capacity doubles at powers of two */
        int cap = *n ? *n * 2 : 4;
        void **na = aalloc(p, (size_t)cap * sizeof(void *));
        if (*n) memcpy(na, *arr, (size_t)*n * sizeof(void *));
        *arr = na;
    }
    (*arr)[(*n)++] = item;
}
#define PUSH(p, arr, n, item) push_ptr((p), (void ***)&(arr), &(n), (item))

/* ---- Errors ---- */

NORETURN static void fail_at(Parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_at(Parser *p, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d:%d: error: ", p->path, line, col);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    longjmp(p->fail, 1);
}

static void free_token(Token *t) { free(t->text); t->text = NULL; }

static Token read_token(Parser *p)
{
    Token t = lex_next(&p->lx);
    if (t.kind == T_ERROR) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s", t.text);
        free(t.text);
        fail_at(p, t.line, t.col, "%s", msg);
    }
    return t;
}

static void advance(Parser *p)
{
    free_token(&p->tok);
    if (p->hasPeek) { p->tok = p->peek; p->hasPeek = false; }
    else p->tok = read_token(p);
}

static Token *peek(Parser *p)
{
    if (!p->hasPeek) { p->peek = read_token(p); p->hasPeek = true; }
    return &p->peek;
}

static bool at(Parser *p, TokenKind k) { return p->tok.kind == k; }

static void describe(Token *t, char *buf, size_t n)
{
    if (t->kind == T_EOF) snprintf(buf, n, "end of file");
    else snprintf(buf, n, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start);
}

NORETURN static void fail_expected(Parser *p, const char *what)
{
    char got[64];
    describe(&p->tok, got, sizeof got);
    fail_at(p, p->tok.line, p->tok.col, "expected %s but found %s", what, got);
}

static void expect(Parser *p, TokenKind k, const char *what)
{
    if (!at(p, k)) fail_expected(p, what);
    advance(p);
}

static char *take_ident(Parser *p, const char *what)
{
    if (!at(p, T_IDENT)) fail_expected(p, what);
    char *s = astrndup(p, p->tok.start, p->tok.len);
    advance(p);
    return s;
}

static bool is_binary_op(Parser *p) { return at(p, T_OPERATOR) || at(p, T_BAR); }

/* ---- Nodes and scopes ---- */

static Node *node(Parser *p, NodeKind k, int line, int col)
{
    Node *n = aalloc(p, sizeof(Node));
    n->kind = k;
    n->line = line;
    n->col = col;
    return n;
}

static Scope *open_scope(Parser *p, bool isBlock, int line)
{
    Scope *s = aalloc(p, sizeof(Scope));
    s->outer = p->scope;
    s->isBlock = isBlock;
    s->real = s;
    s->line = line;
    p->scope = s;
    return s;
}

static void close_scope(Parser *p) { p->scope = p->scope->outer; }

static void declare(Parser *p, Scope *s, char *name, bool isArg, int line, int col)
{
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i]->name, name) == 0)
            fail_at(p, line, col, "'%s' is declared twice", name);
    Var *v = aalloc(p, sizeof(Var));
    v->name = name;
    v->scope = s;
    v->isArg = isArg;
    if (isArg) v->argIndex = ++s->nargs;
    PUSH(p, s->vars, s->nvars, v);
}

/* ---- Literals ---- */

static Value parse_number_value(Parser *p, bool negative)
{
    Token *t = &p->tok;
    char buf[512];
    Value v;
    if (t->len >= sizeof buf - 2) {
        if (t->kind == T_DOUBLE) fail_at(p, t->line, t->col, "number literal too long");
        char *s = vm_xmalloc(t->len + 2);
        s[0] = '-';
        memcpy(s + 1, t->start, t->len);
        v = largeint_parse_perm(negative ? s : s + 1, negative ? t->len + 1 : t->len);
        free(s);
        advance(p);
        return v;
    }
    snprintf(buf, sizeof buf, "%s%.*s", negative ? "-" : "", (int)t->len, t->start);
    if (t->kind == T_DOUBLE) {
        double d = strtod(buf, NULL);
        v = double_new_perm(d);
    } else {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        if (errno == 0 && int_fits(ll)) v = int_value(ll);
        else v = largeint_parse_perm(buf, strlen(buf));
    }
    advance(p);
    return v;
}

static Value parse_symbol_after_hash(Parser *p)
{
    Token *t = &p->tok;
    Value v;
    switch (t->kind) {
    case T_IDENT: case T_KEYWORD: case T_KEYWORD_SEQ: case T_OPERATOR: case T_BAR: case T_PRIMITIVE:
        v = sym_intern(t->start, t->len);
        break;
    case T_STRING:
        v = sym_intern(t->text, t->textLen);
        break;
    default:
        fail_expected(p, "a symbol after '#'");
    }
    advance(p);
    return v;
}

static Value parse_literal_array(Parser *p);

/* One element of a literal array (identifiers there are symbols, as in SOM). */
static Value parse_array_element(Parser *p)
{
    Token *t = &p->tok;
    switch (t->kind) {
    case T_INTEGER: case T_DOUBLE: return parse_number_value(p, false);
    case T_OPERATOR:
        if (t->len == 1 && t->start[0] == '-' && (peek(p)->kind == T_INTEGER || peek(p)->kind == T_DOUBLE) &&
            peek(p)->start == t->start + 1) {
            advance(p);
            return parse_number_value(p, true);
        }
        /* a binary selector symbol */
        __attribute__((fallthrough));
    case T_BAR: case T_KEYWORD: case T_KEYWORD_SEQ: case T_PRIMITIVE: {
        Value v = sym_intern(t->start, t->len);
        advance(p);
        return v;
    }
    case T_IDENT: {
        Value v;
        if (t->len == 3 && memcmp(t->start, "nil", 3) == 0) v = VM.nil;
        else if (t->len == 4 && memcmp(t->start, "true", 4) == 0) v = VM.trueObj;
        else if (t->len == 5 && memcmp(t->start, "false", 5) == 0) v = VM.falseObj;
        else v = sym_intern(t->start, t->len);
        advance(p);
        return v;
    }
    case T_STRING: {
        Value v = str_new_perm(t->text, t->textLen);
        advance(p);
        return v;
    }
    case T_SYMBOL_START:
        advance(p);
        if (at(p, T_LPAREN)) return parse_literal_array(p);
        return parse_symbol_after_hash(p);
    case T_LPAREN: return parse_literal_array(p);
    default: fail_expected(p, "a literal array element or ')'");
    }
}

static Value parse_literal_array_body(Parser *p);

static void enter_nesting(Parser *p)
{
    if (++p->depth > MAX_NESTING)
        fail_at(p, p->tok.line, p->tok.col, "nesting too deep: more than %d levels of parentheses, "
                "blocks and literal arrays", MAX_NESTING);
}

static Value parse_literal_array(Parser *p)
{
    enter_nesting(p);
    Value v = parse_literal_array_body(p);
    p->depth--;
    return v;
}

static Value parse_literal_array_body(Parser *p)
{
    expect(p, T_LPAREN, "'('");
    Value tmp[256];
    Value *elems = tmp;
    size_t n = 0, cap = 256;
    while (!at(p, T_RPAREN)) {
        if (at(p, T_EOF)) fail_expected(p, "')' to close the literal array");
        if (n == cap) {
            Value *ne = vm_xmalloc(cap * 2 * sizeof(Value));
            memcpy(ne, elems, n * sizeof(Value));
            if (elems != tmp) free(elems);
            elems = ne;
            cap *= 2;
        }
        elems[n++] = parse_array_element(p);
    }
    advance(p);
    Value a = array_new_perm(n);
    for (size_t i = 0; i < n; i++) as_obj(a)->slots[i] = elems[i];
    if (elems != tmp) free(elems);
    return a;
}

/* ---- Expressions ---- */

static Node *parse_expression(Parser *p);
static Node *parse_block(Parser *p);

static Node *lit_node(Parser *p, Value v, int line, int col)
{
    Node *n = node(p, N_LIT, line, col);
    n->lit = v;
    return n;
}

static Node *parse_primary(Parser *p)
{
    Token *t = &p->tok;
    int line = t->line, col = t->col;
    switch (t->kind) {
    case T_IDENT: {
        char *name = take_ident(p, "identifier");
        if (!strcmp(name, "self")) return node(p, N_SELF, line, col);
        if (!strcmp(name, "super")) return node(p, N_SUPER, line, col);
        if (!strcmp(name, "nil")) return node(p, N_NIL, line, col);
        if (!strcmp(name, "true")) return node(p, N_TRUE, line, col);
        if (!strcmp(name, "false")) return node(p, N_FALSE, line, col);
        Node *n = node(p, N_VAR, line, col);
        n->name = name;
        return n;
    }
    case T_INTEGER: case T_DOUBLE:
        return lit_node(p, parse_number_value(p, false), line, col);
    case T_OPERATOR:
        if (t->len == 1 && t->start[0] == '-' && (peek(p)->kind == T_INTEGER || peek(p)->kind == T_DOUBLE)) {
            advance(p);
            return lit_node(p, parse_number_value(p, true), line, col);
        }
        fail_expected(p, "an expression");
    case T_STRING: {
        Value s = str_new_perm(t->text, t->textLen);
        advance(p);
        return lit_node(p, s, line, col);
    }
    case T_SYMBOL_START:
        advance(p);
        if (at(p, T_LPAREN)) return lit_node(p, parse_literal_array(p), line, col);
        return lit_node(p, parse_symbol_after_hash(p), line, col);
    case T_LPAREN: {
        advance(p);
        Node *e = parse_expression(p);
        expect(p, T_RPAREN, "')'");
        return e;
    }
    case T_LBRACKET:
        return parse_block(p);
    default:
        fail_expected(p, "an expression");
    }
}

static Node *send_node(Parser *p, Node *recv, Value sel, int line, int col)
{
    Node *n = node(p, N_SEND, line, col);
    n->recv = recv;
    n->lit = sel;
    n->isSuper = recv && recv->kind == N_SUPER;
    return n;
}

static Node *parse_unary_tail(Parser *p, Node *recv)
{
    while (at(p, T_IDENT) || at(p, T_PRIMITIVE)) {
        Token *t = &p->tok;
        recv = send_node(p, recv, sym_intern(t->start, t->len), t->line, t->col);
        advance(p);
    }
    return recv;
}

static Node *parse_binary_tail(Parser *p, Node *recv)
{
    while (is_binary_op(p)) {
        Token *t = &p->tok;
        Node *s = send_node(p, recv, sym_intern(t->start, t->len), t->line, t->col);
        advance(p);
        Node *arg = parse_unary_tail(p, parse_primary(p));
        PUSH(p, s->args, s->nargs, arg);
        recv = s;
    }
    return recv;
}

static Node *parse_keyword_tail(Parser *p, Node *recv)
{
    if (!at(p, T_KEYWORD)) return recv;
    char sel[1024];
    size_t sl = 0;
    Node *s = send_node(p, recv, 0, p->tok.line, p->tok.col);
    while (at(p, T_KEYWORD)) {
        if (sl + p->tok.len >= sizeof sel) fail_at(p, p->tok.line, p->tok.col, "selector too long");
        memcpy(sel + sl, p->tok.start, p->tok.len);
        sl += p->tok.len;
        advance(p);
        Node *arg = parse_binary_tail(p, parse_unary_tail(p, parse_primary(p)));
        PUSH(p, s->args, s->nargs, arg);
    }
    s->lit = sym_intern(sel, sl);
    return s;
}

static void mark_inlining(Node *s);

/* mark_inlining for a send and the sends it is made of without parentheses: in
 * "a notNil && [b] ifTrue: [c]" the && is ifTrue:'s receiver. (A parenthesised
 * send was marked as an expression of its own; a block's statements when the block
 * was parsed.) */
static void mark_inlinings(Node *e)
{
    if (e->kind != N_SEND) return;
    mark_inlining(e);
    if (e->recv) mark_inlinings(e->recv);
    for (int a = 0; a < e->nargs; a++) mark_inlinings(e->args[a]);
}

/* A message (without receiver) for a cascade part. */
static Node *parse_cascade_message(Parser *p)
{
    Node *hole = NULL;
    Node *m;
    if (at(p, T_IDENT) || at(p, T_PRIMITIVE)) {
        m = send_node(p, hole, sym_intern(p->tok.start, p->tok.len), p->tok.line, p->tok.col);
        advance(p);
        m = parse_keyword_tail(p, parse_binary_tail(p, parse_unary_tail(p, m)));
    } else if (is_binary_op(p)) {
        m = parse_keyword_tail(p, parse_binary_tail(p, hole));
    } else if (at(p, T_KEYWORD)) {
        m = parse_keyword_tail(p, hole);
    } else {
        fail_expected(p, "a message after ';'");
    }
    return m;
}

static Node *parse_expression_body(Parser *p);

static Node *parse_expression(Parser *p)
{
    enter_nesting(p);
    Node *n = parse_expression_body(p);
    p->depth--;
    return n;
}

static Node *parse_expression_body(Parser *p)
{
    if (at(p, T_IDENT) && peek(p)->kind == T_ASSIGN) {
        int line = p->tok.line, col = p->tok.col;
        Node *target = parse_primary(p);
        if (target->kind != N_VAR)
            fail_at(p, line, col, "cannot assign to a pseudo-variable");
        advance(p); /* := */
        Node *n = node(p, N_ASSIGN, line, col);
        n->target = target;
        n->recv = parse_expression(p);
        return n;
    }
    Node *recv = parse_primary(p);
    Node *e = parse_keyword_tail(p, parse_binary_tail(p, parse_unary_tail(p, recv)));
    if (!at(p, T_SEMI)) {
        mark_inlinings(e);
        return e;
    }
    /* Cascade: the last send's receiver is evaluated once, every message goes to it.
     * A parenthesised send is a primary, not a message: "(a and: [b]); c" has no
     * message to cascade from (as Squeak says), and must not lose its receiver. */
    if (e->kind != N_SEND || e == recv) fail_at(p, p->tok.line, p->tok.col, "a cascade must follow a message send");
    Node *c = node(p, N_CASCADE, e->line, e->col);
    c->recv = e->recv;
    e->recv = NULL;
    PUSH(p, c->args, c->nargs, e);
    while (at(p, T_SEMI)) {
        advance(p);
        Node *m = parse_cascade_message(p);
        PUSH(p, c->args, c->nargs, m);
    }
    return c;
}

static void parse_statements(Parser *p, Scope *s, TokenKind end)
{
    while (!at(p, end)) {
        if (at(p, T_EOF)) fail_expected(p, end == T_RPAREN ? "')'" : "']'");
        if (at(p, T_PERIOD)) { advance(p); continue; }
        if (at(p, T_RETURN)) {
            int line = p->tok.line, col = p->tok.col;
            advance(p);
            Node *r = node(p, N_RETURN, line, col);
            r->recv = parse_expression(p);
            PUSH(p, s->body, s->nbody, r);
            if (at(p, T_PERIOD)) advance(p);
            if (!at(p, end)) fail_expected(p, "the end of the block or method after a return");
            break;
        }
        PUSH(p, s->body, s->nbody, parse_expression(p));
        if (!at(p, end) && !at(p, T_PERIOD)) fail_expected(p, "'.' or the end of the body");
    }
}

/* "a b c |": the names of temporaries and the closing bar. */
static void parse_local_names(Parser *p, Scope *s)
{
    while (at(p, T_IDENT)) {
        int line = p->tok.line, col = p->tok.col;
        declare(p, s, take_ident(p, "a local name"), false, line, col);
    }
    expect(p, T_BAR, "'|' to end the local variables");
}

static void parse_locals(Parser *p, Scope *s)
{
    if (!at(p, T_BAR)) return;
    advance(p);
    parse_local_names(p, s);
}


static Node *parse_block(Parser *p)
{
    int line = p->tok.line, col = p->tok.col;
    advance(p); /* [ */
    Scope *s = open_scope(p, true, line);
    if (at(p, T_COLON)) {
        while (at(p, T_COLON)) {
            advance(p);
            int l = p->tok.line, c = p->tok.col;
            declare(p, s, take_ident(p, "a block parameter name"), true, l, c);
        }
        if (at(p, T_OPERATOR) && p->tok.len == 2 && p->tok.start[0] == '|' && p->tok.start[1] == '|') {
            /* "[:x || t | ...]": the parameters' bar and the locals' opening bar, fused */
            advance(p);
            parse_local_names(p, s);
        } else if (!at(p, T_RBRACKET)) { /* "[:x]" is allowed */
            expect(p, T_BAR, "'|' after the block parameters");
        }
    }
    parse_locals(p, s);
    parse_statements(p, s, T_RBRACKET);
    advance(p);
    close_scope(p);
    Node *n = node(p, N_BLOCK, line, col);
    n->scope = s;
    return n;
}

/* ---- Inlining decisions (made as soon as a send is parsed) ---- */

static bool is_block(Node *n, int params)
{
    return n && n->kind == N_BLOCK && n->scope->nargs == params;
}

static void inline_block(Node *n)
{
    Scope *s = n->scope;
    s->inlined = true;
}

/* ast.h's INLINED_SENDS as a table, searched by selector name. */
static const struct {
    const char *selector;
    InlineForm form;
    int8_t recv, arg0, arg1;  /* block parameters required, or -1 */
} inlined_sends[] = {
#define INLINED_SEND(sel, form, recv, arg0, arg1) {sel, form, recv, arg0, arg1},
    INLINED_SENDS(INLINED_SEND)
#undef INLINED_SEND
};

/* Control-flow sends with literal block arguments become jumps (compiler.c emits them).
 * && and || with a literal block are and: and or:; the ifNil: family is inlined
 * for blocks of no argument only (SOM sends such a block value, so a block with
 * an argument would get nil: that case stays a send). */
static void mark_inlining(Node *s)
{
    if (s->kind != N_SEND || s->isSuper) return;
    const char *name = sym_cstr(s->lit);
    size_t i = 0, n = sizeof inlined_sends / sizeof inlined_sends[0];
    while (i < n && strcmp(inlined_sends[i].selector, name) != 0) i++;
    if (i == n) return;
    if ((inlined_sends[i].recv >= 0 && !is_block(s->recv, inlined_sends[i].recv)) ||
        (inlined_sends[i].arg0 >= 0 && !is_block(s->args[0], inlined_sends[i].arg0)) ||
        (inlined_sends[i].arg1 >= 0 && !is_block(s->args[1], inlined_sends[i].arg1)))
        return;
    s->inlined = inlined_sends[i].form;
    if (inlined_sends[i].recv >= 0) inline_block(s->recv);
    for (int a = 0; a < s->nargs; a++)
        if (s->args[a]->kind == N_BLOCK) inline_block(s->args[a]);
}

/* ---- Methods and classes ---- */

static MethodDef *parse_method(Parser *p)
{
    MethodDef *m = aalloc(p, sizeof(MethodDef));
    m->line = p->tok.line;
    Scope *s = open_scope(p, false, p->tok.line);
    m->scope = s;
    if (at(p, T_IDENT) || at(p, T_PRIMITIVE)) {
        m->selector = sym_intern(p->tok.start, p->tok.len);
        advance(p);
    } else if (is_binary_op(p)) {
        m->selector = sym_intern(p->tok.start, p->tok.len);
        advance(p);
        int l = p->tok.line, c = p->tok.col;
        declare(p, s, take_ident(p, "an argument name after the binary selector"), true, l, c);
    } else if (at(p, T_KEYWORD)) {
        char sel[1024];
        size_t sl = 0;
        while (at(p, T_KEYWORD)) {
            if (sl + p->tok.len >= sizeof sel) fail_at(p, p->tok.line, p->tok.col, "selector too long");
            memcpy(sel + sl, p->tok.start, p->tok.len);
            sl += p->tok.len;
            advance(p);
            int l = p->tok.line, c = p->tok.col;
            declare(p, s, take_ident(p, "an argument name after the keyword"), true, l, c);
        }
        m->selector = sym_intern(sel, sl);
    } else {
        fail_expected(p, "a method definition");
    }
    if (!(at(p, T_OPERATOR) && p->tok.len == 1 && p->tok.start[0] == '='))
        fail_expected(p, "'=' after the method pattern");
    advance(p);
    if (at(p, T_PRIMITIVE)) {
        m->isPrimitive = true;
        advance(p);
    } else {
        expect(p, T_LPAREN, "'(' to begin the method body");
        parse_locals(p, s);
        parse_statements(p, s, T_RPAREN);
        advance(p);
    }
    close_scope(p);
    return m;
}

static void parse_fields(Parser *p, char ***out, int *n)
{
    if (!at(p, T_BAR)) return;
    advance(p);
    while (at(p, T_IDENT)) {
        char *f = take_ident(p, "a field name");
        for (int i = 0; i < *n; i++)
            if (!strcmp((*out)[i], f)) fail_at(p, p->tok.line, p->tok.col, "field '%s' declared twice", f);
        push_ptr(p, (void ***)out, n, f);
    }
    expect(p, T_BAR, "'|' to end the field list");
}

static void parse_class_body(Parser *p, ClassDef *cd)
{
    parse_fields(p, &cd->fields, &cd->nfields);
    while (!at(p, T_SEPARATOR) && !at(p, T_RPAREN)) {
        if (at(p, T_EOF)) fail_expected(p, "')' to close the class");
        PUSH(p, cd->methods, cd->nmethods, parse_method(p));
    }
    if (at(p, T_SEPARATOR)) {
        advance(p);
        parse_fields(p, &cd->classFields, &cd->nclassFields);
        while (!at(p, T_RPAREN)) {
            if (at(p, T_EOF)) fail_expected(p, "')' to close the class");
            PUSH(p, cd->classMethods, cd->nclassMethods, parse_method(p));
        }
    }
    advance(p);
}

static void parser_free(Parser *p)
{
    free_token(&p->tok);
    if (p->hasPeek) free_token(&p->peek);
}

static void arena_free(ArenaBlock *b)
{
    while (b) { ArenaBlock *n = b->next; free(b); b = n; }
}

/* Sets up a parser on src; answers NULL after printing the error if parsing failed. */
ClassDef *parse_class(const char *path, const char *src, size_t len)
{
    Parser *p = vm_xcalloc(1, sizeof(Parser));
    p->path = path;
    lex_init(&p->lx, path, src, len);
    ClassDef *volatile cd = NULL;
    if (setjmp(p->fail)) {
        parser_free(p);
        arena_free(p->arena);
        free(p);
        return NULL;
    }
    p->tok = read_token(p);
    cd = aalloc(p, sizeof(ClassDef));
    cd->path = path;
    cd->name = take_ident(p, "a class name");
    if (!(at(p, T_OPERATOR) && p->tok.len == 1 && p->tok.start[0] == '='))
        fail_expected(p, "'=' after the class name");
    advance(p);
    if (at(p, T_IDENT)) cd->superName = take_ident(p, "a superclass name");
    expect(p, T_LPAREN, "'(' to begin the class body");
    parse_class_body(p, cd);
    if (!at(p, T_EOF)) fail_expected(p, "end of file after the class");
    parser_free(p);
    cd->arena = p->arena;
    free(p);
    return cd;
}

/* "-e" text: the statements of a method doIt whose value is printed. */
MethodDef *parse_expression_method(const char *src, size_t len, void **arenaOut)
{
    Parser *p = vm_xcalloc(1, sizeof(Parser));
    p->path = "-e";
    lex_init(&p->lx, "-e", src, len);
    if (setjmp(p->fail)) {
        parser_free(p);
        arena_free(p->arena);
        free(p);
        return NULL;
    }
    p->tok = read_token(p);
    MethodDef *m = aalloc(p, sizeof(MethodDef));
    m->line = 1;
    m->selector = sym_intern_cstr("doIt");
    m->scope = open_scope(p, false, 1);
    parse_locals(p, m->scope);
    parse_statements(p, m->scope, T_EOF);
    close_scope(p);
    /* The value of the last expression is the answer. */
    Scope *s = m->scope;
    if (s->nbody && s->body[s->nbody - 1]->kind != N_RETURN) {
        Node *last = s->body[s->nbody - 1];
        Node *r = node(p, N_RETURN, last->line, last->col);
        r->recv = last;
        s->body[s->nbody - 1] = r;
    }
    parser_free(p);
    *arenaOut = p->arena;
    free(p);
    return m;
}

void ast_free(void *arena) { arena_free(arena); }
