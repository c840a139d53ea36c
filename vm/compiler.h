// SPDX-License-Identifier: BSD-2-Clause
/* compiler.h - from the parse tree to bytecode methods. */
#ifndef SQVM_COMPILER_H
#define SQVM_COMPILER_H

#include "ast.h"
#include "method.h"

/* Compiles one method for holder; on an error prints path:line:col and answers NULL. */
Method *compile_method(MethodDef *md, ClassInfo *holder, const char *path);

#endif
