// SPDX-License-Identifier: BSD-2-Clause
/* lexer.c - turns SOM source text into tokens with line and column. */
#include "lexer.h"
#include "vm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

void lex_init(Lexer *lx, const char *path, const char *src, size_t len)
{
    lx->src = lx->p = lx->lineStart = src;
    lx->end = src + len;
    lx->path = path;
    lx->line = 1;
}

static int col_of(Lexer *lx, const char *at) { return (int)(at - lx->lineStart) + 1; }

static void newline(Lexer *lx, const char *after) { lx->line++; lx->lineStart = after; }

static Token make(Lexer *lx, TokenKind k, const char *start, int line, int col)
{
    Token t = {k, start, (size_t)(lx->p - start), line, col, NULL, 0};
    return t;
}

static Token error(Lexer *lx, const char *start, int line, int col, const char *msg)
{
    Token t = make(lx, T_ERROR, start, line, col);
    t.text = vm_xstrdup(msg);
    return t;
}

static bool is_op_char(char c) { return c && strchr("~&|*/\\+=><,@%-", c) != NULL; }
static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Skips white space and "comments"; answers false on an unterminated comment. */
static bool skip_space(Lexer *lx, int *commentLine, int *commentCol)
{
    for (;;) {
        while (lx->p < lx->end && isspace((unsigned char)*lx->p)) {
            if (*lx->p == '\n') newline(lx, lx->p + 1);
            lx->p++;
        }
        if (lx->p < lx->end && *lx->p == '"') {
            *commentLine = lx->line;
            *commentCol = col_of(lx, lx->p);
            lx->p++;
            while (lx->p < lx->end && *lx->p != '"') {
                if (*lx->p == '\n') newline(lx, lx->p + 1);
                lx->p++;
            }
            if (lx->p >= lx->end) return false;
            lx->p++;
            continue;
        }
        return true;
    }
}

static Token lex_string(Lexer *lx, const char *start, int line, int col)
{
    size_t cap = 16, n = 0;
    char *buf = vm_xmalloc(cap);
    lx->p++; /* opening quote */
    for (;;) {
        if (lx->p >= lx->end) {
            free(buf);
            return error(lx, start, line, col, "unterminated string literal");
        }
        char c = *lx->p++;
        if (c == '\'') {
            if (lx->p < lx->end && *lx->p == '\'') { c = '\''; lx->p++; }
            else break;
        } else if (c == '\\' && lx->p < lx->end) {
            char e = *lx->p++;
            switch (e) {
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 'f': c = '\f'; break;
            case '0': c = '\0'; break;
            case '\'': c = '\''; break;
            case '\\': c = '\\'; break;
            default: c = e; break;
            }
        } else if (c == '\n') {
            newline(lx, lx->p);
        }
        if (n + 1 >= cap) buf = vm_xrealloc(buf, cap *= 2);
        buf[n++] = c;
    }
    buf[n] = 0;
    Token t = make(lx, T_STRING, start, line, col);
    t.text = buf;
    t.textLen = n;
    return t;
}

static Token lex_number(Lexer *lx, const char *start, int line, int col)
{
    while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) lx->p++;
    bool isDouble = false;
    if (lx->p + 1 < lx->end && *lx->p == '.' && isdigit((unsigned char)lx->p[1])) {
        isDouble = true;
        lx->p++;
        while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) lx->p++;
    }
    if (lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
        const char *q = lx->p + 1;
        if (q < lx->end && (*q == '-' || *q == '+')) q++;
        if (q < lx->end && isdigit((unsigned char)*q)) {
            isDouble = true;
            lx->p = q;
            while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) lx->p++;
        }
    }
    return make(lx, isDouble ? T_DOUBLE : T_INTEGER, start, line, col);
}

Token lex_next(Lexer *lx)
{
    int cline = 0, ccol = 0;
    if (!skip_space(lx, &cline, &ccol)) return error(lx, lx->p, cline, ccol, "unterminated comment");
    const char *start = lx->p;
    int line = lx->line, col = col_of(lx, start);
    if (lx->p >= lx->end) return make(lx, T_EOF, start, line, col);
    char c = *lx->p;
    if (is_ident_start(c)) {
        while (lx->p < lx->end && is_ident_char(*lx->p)) lx->p++;
        if (lx->p < lx->end && *lx->p == ':' && !(lx->p + 1 < lx->end && lx->p[1] == '=')) {
            lx->p++;
            /* a:b:c: keyword sequence (only meaningful after #) */
            const char *q = lx->p;
            bool seq = false;
            while (q < lx->end && is_ident_start(*q)) {
                const char *r = q;
                while (r < lx->end && is_ident_char(*r)) r++;
                if (r < lx->end && *r == ':') { q = r + 1; seq = true; }
                else break;
            }
            if (seq) { lx->p = q; return make(lx, T_KEYWORD_SEQ, start, line, col); }
            return make(lx, T_KEYWORD, start, line, col);
        }
        Token t = make(lx, T_IDENT, start, line, col);
        if (t.len == 9 && memcmp(start, "primitive", 9) == 0) t.kind = T_PRIMITIVE;
        return t;
    }
    if (isdigit((unsigned char)c)) return lex_number(lx, start, line, col);
    if (c == '\'') return lex_string(lx, start, line, col);
    lx->p++;
    switch (c) {
    case '#': return make(lx, T_SYMBOL_START, start, line, col);
    case '^': return make(lx, T_RETURN, start, line, col);
    case '(': return make(lx, T_LPAREN, start, line, col);
    case ')': return make(lx, T_RPAREN, start, line, col);
    case '[': return make(lx, T_LBRACKET, start, line, col);
    case ']': return make(lx, T_RBRACKET, start, line, col);
    case '.': return make(lx, T_PERIOD, start, line, col);
    case ';': return make(lx, T_SEMI, start, line, col);
    case ':':
        if (lx->p < lx->end && *lx->p == '=') { lx->p++; return make(lx, T_ASSIGN, start, line, col); }
        return make(lx, T_COLON, start, line, col);
    default: break;
    }
    if (c == '-' && lx->p + 2 < lx->end && lx->p[0] == '-' && lx->p[1] == '-' && lx->p[2] == '-') {
        while (lx->p < lx->end && *lx->p == '-') lx->p++;
        return make(lx, T_SEPARATOR, start, line, col);
    }
    if (is_op_char(c)) {
        if (c == '|' && !(lx->p < lx->end && is_op_char(*lx->p)))
            return make(lx, T_BAR, start, line, col);
        /* a minus directly before a digit stands alone, so "3-4" and "x--1" parse */
        while (lx->p < lx->end && is_op_char(*lx->p) && !(*lx->p == '-' && lx->p + 1 < lx->end &&
               isdigit((unsigned char)lx->p[1])))
            lx->p++;
        return make(lx, T_OPERATOR, start, line, col);
    }
    char msg[64];
    if (isprint((unsigned char)c)) snprintf(msg, sizeof msg, "unexpected character '%c'", c);
    else snprintf(msg, sizeof msg, "unexpected byte 0x%02x", (unsigned char)c);
    return error(lx, start, line, col, msg);
}
