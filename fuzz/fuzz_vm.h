// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_vm.h - what the VM fuzz targets share: one VM, booted once per fuzzing process
 * (bootstrap compiles the whole core library: far too slow to repeat per input). */
#ifndef FUZZ_VM_H
#define FUZZ_VM_H

#include <stddef.h>

/* Boots the VM (embedded core library only, a 64 MiB heap), once. */
void fuzz_vm_boot(void);

/* The input as a NUL-terminated copy (the lexer wants a length, -e a C string). */
char *fuzz_cstring(const unsigned char *data, size_t size);

#endif
