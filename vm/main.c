// SPDX-License-Identifier: BSD-2-Clause
/* main.c - the sqvm command line. */
#include "ast.h"
#include "compiler.h"
#include "gc.h"
#include "interp.h"
#include "interrupt.h"
#include "loader.h"
#include "prims.h"
#include "probes.h"
#include "sched.h"
#include "symbol.h"
#include "vm.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>


static void usage(FILE *f)
{
    fprintf(f,
        "Usage: sqvm [options] ClassName|File.som [arguments...]\n"
        "       sqvm [options] -e EXPRESSION\n"
        "Runs a SOM Smalltalk program: the class's run: (given the argument array) or run.\n"
        "\n"
        "Options:\n"
        "  -cp, --classpath DIRS   colon-separated folders to find classes in\n"
        "  -e EXPRESSION           evaluate the statements and print the value\n"
        "  --disassemble CLASS     print the bytecode of CLASS's methods and exit\n"
        "  --young SIZE            eden size: bytes allocated between young collections\n"
        "                          (default 8M)\n"
        "  --heap SIZE             maximum old space after a full collection (default 4G);\n"
        "                          sizes take K, M, G suffixes\n"
        "  --stack SIZE            stack of the main process (default 64M)\n"
        "  --gc-stress             collect at every safe point, a full collection every\n"
        "                          10th time (slow; for testing)\n"
        "  --gc-verify             check the whole heap after every collection\n"
        "  --gc-stats              print collector statistics at exit\n"
        "  --alloc-sample SIZE     mean bytes between object__alloc__sample probes\n"
        "                          (default 512K)\n"
        "  -h, --help              show this help\n"
        "  --version               show the version\n"
        "\n"
        "Examples:\n"
        "  sqvm -cp examples Hello\n"
        "  sqvm tests/bench/BenchmarkHarness.som Richards 10 1\n"
        "  sqvm -e '(1 << 100) + 1'\n");
}

static size_t parse_size(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) goto bad;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) goto bad;
    return (size_t)v;
bad:
    fprintf(stderr, "sqvm: %s: bad size '%s' (use e.g. 512K, 64M, 2G)\n", opt, s);
    exit(2);
}

static const char *need_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "sqvm: option %s needs an argument (see sqvm --help)\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static void add_class_path(const char *paths)
{
    char *copy = vm_xstrdup(paths);
    for (char *tok = strtok(copy, ":"); tok; tok = strtok(NULL, ":")) loader_add_path(tok, false);
    free(copy);
}

/* "-e": compile the text as a method of nil and print its value (println). */
static int eval_expression(Process *p, const char *text)
{
    void *arena;
    MethodDef *md = parse_expression_method(text, strlen(text), &arena);
    if (!md) return 1;
    ClassInfo *nilClass = class_at(CLS_NIL);
    Method *m = compile_method(md, nilClass, "-e");
    ast_free(arena);
    if (!m) return 1;
    /* run directly: the method is not added to Nil, so reflection does not see it */
    Value args[1] = {VM.nil};
    Value result = interp_run_method(p, m, args);
    args[0] = result;
    interp_run_send(p, sym_intern_cstr("println"), args, 0);
    return 0;
}

int main(int argc, char **argv)
{
    /* Strings are UTF-8: String>>isLetters and friends classify characters
     * beyond ASCII through the C library's wide-character functions. */
    setlocale(LC_CTYPE, "C.UTF-8");
    GCConfig gcfg = {.youngBytes = 8u << 20, .maxHeapBytes = (size_t)4 << 30, .stress = false, .fullEvery = 10};
    size_t stackBytes = 64u << 20;
    size_t allocSample = 512u << 10;
    const char *expr = NULL, *disasm = NULL;
    int i = 1;
    char *cpFromFile = NULL;
    const char *cpArgs[64];
    int ncp = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-cp") || !strcmp(a, "--classpath")) {
            if (ncp == 64) { fprintf(stderr, "sqvm: too many -cp options\n"); return 2; }
            cpArgs[ncp++] = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "-e")) expr = need_arg(argc, argv, &i);
        else if (!strcmp(a, "--disassemble")) disasm = need_arg(argc, argv, &i);
        else if (!strcmp(a, "--young")) gcfg.youngBytes = parse_size(a, need_arg(argc, argv, &i));
        else if (!strcmp(a, "--heap")) gcfg.maxHeapBytes = parse_size(a, need_arg(argc, argv, &i));
        else if (!strcmp(a, "--stack")) stackBytes = parse_size(a, need_arg(argc, argv, &i));
        else if (!strcmp(a, "--gc-stress")) gcfg.stress = true;
        else if (!strcmp(a, "--gc-verify")) gcfg.verify = true;
        else if (!strcmp(a, "--gc-stats")) vm_options.gcStats = true;
        else if (!strcmp(a, "--alloc-sample")) allocSample = parse_size(a, need_arg(argc, argv, &i));
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--version")) { printf("sqvm %s\n", SQVM_VERSION); return 0; }
        else if (!strcmp(a, "--")) { i++; break; }
        else {
            fprintf(stderr, "sqvm: unknown option %s (see sqvm --help)\n", a);
            return 2;
        }
    }
    if (!expr && !disasm && i >= argc) {
        usage(stderr);
        return 2;
    }
    if (stackBytes < (64u << 10)) stackBytes = 64u << 10;
#ifdef SQVM_GC_STRESS
    gcfg.stress = true;
    gcfg.verify = true;
#endif
    /* A program given as a path: its folder joins the class path, its name is the class. */
    const char *className = i < argc ? argv[i] : NULL;
    char *classNameBuf = NULL;
    if (className) {
        size_t len = strlen(className);
        if (len > 4 && !strcmp(className + len - 4, ".som")) {
            cpFromFile = vm_xstrdup(className);
            char *slash = strrchr(cpFromFile, '/');
            const char *base = slash ? slash + 1 : cpFromFile;
            classNameBuf = vm_xstrdup(base);
            classNameBuf[strlen(classNameBuf) - 4] = 0;
            if (slash) *slash = 0;
            else strcpy(cpFromFile, ".");
            className = classNameBuf;
        }
    }
    if (cpFromFile) loader_add_path(cpFromFile, false);
    for (int k = 0; k < ncp; k++) add_class_path(cpArgs[k]);
    if (!cpFromFile && !ncp) loader_add_path(".", false);
    Process *p = vm_boot(&gcfg, allocSample, stackBytes / sizeof(Value));
    interrupt_install();
    if (SQ_ENABLED(VM_START)) probe_vm_start();
    if (disasm) {
        ClassInfo *c = loader_load_class(disasm);
        if (!c) { fprintf(stderr, "sqvm: class %s not found on the class path\n", disasm); return 1; }
        disasm_class(c);
        return 0;
    }
    if (expr) {
        prims_system_init(array_new_perm(0));
        int rc = eval_expression(p, expr);
        vm_exit(rc);
    }
    /* system initialize: #('ClassName' 'arg1' ...) */
    Value args = array_new_perm((size_t)(argc - i));
    as_obj(args)->slots[0] = str_new_perm(className, strlen(className));
    for (int k = i + 1; k < argc; k++) as_obj(args)->slots[k - i] = str_new_perm(argv[k], strlen(argv[k]));
    prims_system_init(args);
    Value sendArgs[2] = {VM.systemObj, args};
    interp_run_send(p, SYM.initialize, sendArgs, 1);
    free(classNameBuf);
    free(cpFromFile);
    vm_exit(0);
}
