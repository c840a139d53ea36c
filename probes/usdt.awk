# SPDX-License-Identifier: BSD-2-Clause
# probes/usdt.awk - generates the VM's probe header from the provider file:
#
#   awk -f probes/usdt.awk probes/squeak.d > build/gen/squeak_probes.h
#
# For each "probe NAME(TYPE ARG, ...);" of the provider it writes NAME's semaphore (a
# member of one struct, squeak_semaphores, in the file's order), PROVIDER_NAME_ENABLED()
# and the site macro PROVIDER_NAME(args), NAME's "__" written "_" as dtrace -h does. A site is a nop with an ELF note in
# .note.stapsdt, the format that bpftrace, bcc and libbpf read (SystemTap's SDT notes,
# version 3): the site's address, the .stapsdt.base address, the semaphore's address,
# provider, name, and the arguments as "SIZE@OPERAND" (a negative size is signed).
#
# The nop is five bytes on x86-64 (0f 1f 44 00 00): a uprobe there can be optimized
# by the kernel into a call, about half the cost of the int3 trap a one-byte nop
# takes. -DSQVM_PROBE_NOP1 (make PROBE_NOP=1) emits the one-byte nop of sys/sdt.h.
# Arguments are in registers or immediates ("nr"): libbpf cannot read RIP-relative
# memory operands.

function die(msg) { print "usdt.awk: " FILENAME ": " msg > "/dev/stderr"; failed = 1; exit 1 }

# size and signedness of a declared argument type, as the note wants it: 8, -4, ...
function arg_size(type) {
    gsub(/^[ \t]+|[ \t]+$/, "", type)
    gsub(/[ \t]+/, " ", type)
    if (type ~ /\*$/) return 8
    if (type == "uint64_t" || type == "uintptr_t" || type == "size_t") return 8
    if (type == "int64_t" || type == "intptr_t" || type == "long") return -8
    if (type == "uint32_t" || type == "unsigned" || type == "unsigned int") return 4
    if (type == "int32_t" || type == "int") return -4
    if (type == "uint16_t") return 2
    if (type == "int16_t") return -2
    if (type == "uint8_t") return 1
    if (type == "int8_t") return -1
    die("unknown argument type '" type "'")
}

# the C type an argument is converted to, so that its operand is a register of its size
function arg_ctype(size) {
    if (size == 8) return "uint64_t"
    if (size == -8) return "int64_t"
    if (size == 4) return "uint32_t"
    if (size == -4) return "int32_t"
    if (size == 2) return "uint16_t"
    if (size == -2) return "int16_t"
    if (size == 1) return "uint8_t"
    return "int8_t"
}

# "#pragma sqvm semaphore A B": probe A has no semaphore of its own but B's (declared
# before or after it). A probe's semaphore is a counter the kernel keeps for every tracer
# of it; two probes may share one, which then counts the tracers of both.
/^[ \t]*#pragma[ \t]+sqvm[ \t]+semaphore[ \t]/ { shares[$4] = $5; next }
/^[ \t]*#/ { next }
{ text = text $0 "\n" }

END {
    if (failed) exit 1
    # comments out, then one statement per ";"
    while ((i = index(text, "/*")) > 0) {
        rest = substr(text, i + 2)
        j = index(rest, "*/")
        if (j == 0) die("unterminated comment")
        text = substr(text, 1, i - 1) " " substr(rest, j + 2)
    }
    gsub(/\/\/[^\n]*/, "", text)
    gsub(/[ \t\n]+/, " ", text)
    if (!match(text, /provider [A-Za-z_][A-Za-z0-9_]* \{/)) die("no provider")
    provider = substr(text, RSTART + 9, RLENGTH - 11)
    body = substr(text, RSTART + RLENGTH)
    nstmt = split(body, stmts, ";")
    n = 0
    for (s = 1; s <= nstmt; s++) {
        st = stmts[s]
        if (st !~ /probe [A-Za-z_][A-Za-z0-9_]* ?\(/) continue
        sub(/^.*probe /, "", st)
        name = st; sub(/ ?\(.*$/, "", name)
        args = st; sub(/^[^(]*\(/, "", args); sub(/\).*$/, "", args)
        n++
        pname[n] = name
        nargs[n] = 0
        if (args !~ /^ *(void)? *$/) {
            na = split(args, a, ",")
            for (k = 1; k <= na; k++) {
                decl = a[k]
                gsub(/^ +| +$/, "", decl)
                aname = decl; sub(/^.*[ *]/, "", aname)
                atype = substr(decl, 1, length(decl) - length(aname))
                asize[n, k] = arg_size(atype)
                argname[n, k] = aname
            }
            nargs[n] = na
        }
    }
    if (n == 0) die("no probes")
    # each probe's semaphore: a member of its own, or the one it shares (in order)
    nsem = 0
    for (p = 1; p <= n; p++) known[pname[p]] = 1
    for (sa in shares) if (!(sa in known) || !(shares[sa] in known) || (shares[sa] in shares)) die("bad #pragma sqvm semaphore " sa " " shares[sa])
    for (p = 1; p <= n; p++) if (!(pname[p] in shares)) { semidx[pname[p]] = nsem++; semname[pname[p]] = pname[p] }
    for (p = 1; p <= n; p++) if (pname[p] in shares) { semidx[pname[p]] = semidx[shares[pname[p]]]; semname[pname[p]] = shares[pname[p]] }
    if (n > 255) die("too many probes")
    P = toupper(provider)

    print "/* Generated from the " provider " provider by probes/usdt.awk: do not edit. */"
    print "#ifndef " P "_PROBES_H"
    print "#define " P "_PROBES_H"
    print ""
    print "#include <stdint.h>"
    print ""
    print "/* Every probe's semaphore, in the provider's order: a tracer that attaches to a probe"
    print " * makes the kernel count it up in the traced process (and down when it leaves). They"
    print " * are initialised data (in .probes): the kernel finds them in the file's mapping. */"
    print "struct " provider "_semaphores {"
    for (p = 1; p <= n; p++) if (!(pname[p] in shares)) printf "    unsigned short %s;\n", pname[p]
    print "};"
    print "extern struct " provider "_semaphores " provider "_semaphores __attribute__((visibility(\"hidden\")));"
    print ""
    print "#if defined(SQVM_PROBE_NOP1) || !defined(__x86_64__)"
    print "#define " P "_NOP_ \"nop\""
    print "#else"
    print "#define " P "_NOP_ \".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\" /* nopl 0(%rax,%rax,1) */"
    print "#endif"
    print ""
    print "/* A site: the nop, its note in .note.stapsdt (type 3: the site, .stapsdt.base, the"
    print " * semaphore, provider, name, arguments), and .stapsdt.base, by which a tool adjusts"
    print " * the site's address when the file was prelinked. */"
    print "#define " P "_SITE_(name, semaphore, argspec, ...)                                       \\"
    print "    __asm__ __volatile__(\"990: \" " P "_NOP_ \"\\n\"                                       \\"
    print "                         \".pushsection .note.stapsdt, \\\"?\\\", \\\"note\\\"\\n\"                    \\"
    print "                         \".balign 4\\n\"                                                   \\"
    print "                         \".4byte 992f - 991f, 994f - 993f, 3\\n\"                           \\"
    print "                         \"991: .asciz \\\"stapsdt\\\"\\n\"                                        \\"
    print "                         \"992: .balign 4\\n\"                                              \\"
    print "                         \"993: .8byte 990b\\n\"                                            \\"
    print "                         \".8byte _.stapsdt.base\\n\"                                       \\"
    print "                         \".8byte " provider "_semaphores + \" #semaphore \"\\n\"                     \\"
    print "                         \".asciz \\\"" provider "\\\"\\n\"                                          \\"
    print "                         \".asciz \\\"\" name \"\\\"\\n\"                                            \\"
    print "                         \".asciz \\\"\" argspec \"\\\"\\n\"                                         \\"
    print "                         \"994: .balign 4\\n\"                                              \\"
    print "                         \".popsection\\n\"                                                 \\"
    print "                         \".ifndef _.stapsdt.base\\n\"                                      \\"
    print "                         \".pushsection .stapsdt.base, \\\"aG\\\", \\\"progbits\\\", .stapsdt.base, comdat\\n\" \\"
    print "                         \".weak _.stapsdt.base\\n\"                                        \\"
    print "                         \".hidden _.stapsdt.base\\n\"                                      \\"
    print "                         \"_.stapsdt.base: .space 1\\n\"                                    \\"
    print "                         \".size _.stapsdt.base, 1\\n\"                                     \\"
    print "                         \".popsection\\n\"                                                 \\"
    print "                         \".endif\"                                                         \\"
    print "                         : : __VA_ARGS__)"
    for (p = 1; p <= n; p++) {
        U = toupper(pname[p]); gsub(/__/, "_", U)
        print ""
        printf "/* %s(", pname[p]
        for (k = 1; k <= nargs[p]; k++) printf "%s%s", (k > 1 ? ", " : ""), argname[p, k]
        print ") */"
        printf "#define %s_%s_ENABLED() __builtin_expect(%s_semaphores.%s, 0)\n", P, U, provider, semname[pname[p]]
        params = ""; spec = ""; ops = ""
        for (k = 1; k <= nargs[p]; k++) {
            params = params (k > 1 ? ", " : "") "a" k
            spec = spec (k > 1 ? " " : "") asize[p, k] "@%[" provider "_a" k "]"
            ops = ops (k > 1 ? ", " : "") "[" provider "_a" k "] \"nr\"((" arg_ctype(asize[p, k]) ")(uintptr_t)(a" k "))"
        }
        if (nargs[p] == 0) {
            printf "#define %s_%s() %s_SITE_(\"%s\", %d, \"\", )\n", P, U, P, pname[p], 2 * semidx[pname[p]]
        } else {
            printf "#define %s_%s(%s) \\\n    %s_SITE_(\"%s\", %d, \"%s\", %s)\n", P, U, params, P, pname[p], 2 * semidx[pname[p]], spec, ops
        }
    }
    print ""
    print "#endif"
}
