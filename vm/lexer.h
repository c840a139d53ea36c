// SPDX-License-Identifier: BSD-2-Clause
/* lexer.h - tokens of SOM source text. */
#ifndef SQVM_LEXER_H
#define SQVM_LEXER_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    T_EOF, T_IDENT, T_KEYWORD, T_KEYWORD_SEQ /* a:b: (in symbols) */, T_OPERATOR,
    T_INTEGER, T_DOUBLE, T_STRING, T_SYMBOL_START /* # */, T_ASSIGN, T_RETURN,
    T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_COLON, T_BAR, T_PERIOD, T_SEMI,
    T_SEPARATOR /* ---- */, T_PRIMITIVE, T_ERROR
} TokenKind;

typedef struct Token {
    TokenKind kind;
    const char *start;  /* into the source */
    size_t len;
    int line, col;
    char *text;         /* decoded string literal (malloc'd) or NULL */
    size_t textLen;
} Token;

typedef struct Lexer {
    const char *src, *p, *end;
    const char *path;
    int line;
    const char *lineStart;
} Lexer;

void lex_init(Lexer *lx, const char *path, const char *src, size_t len);
/* Reads the next token; on a lexical error answers T_ERROR with text = message. */
Token lex_next(Lexer *lx);

#endif
