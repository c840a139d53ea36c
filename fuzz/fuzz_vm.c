// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_vm.c - boots the VM once for the fuzz targets (see fuzz_vm.h). */
#include "fuzz_vm.h"
#include "gc.h"
#include "loader.h"
#include "prims.h"
#include "vm.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

void fuzz_vm_boot(void)
{
    static int booted;
    if (booted) return;
    booted = 1;
    setlocale(LC_CTYPE, "C.UTF-8");
    GCConfig gcfg = {.youngBytes = 1u << 20, .maxHeapBytes = (size_t)64 << 20, .stress = false, .fullEvery = 10};
    loader_add_path("/nonexistent-fuzz-class-path", false); /* the embedded library only */
    vm_boot(&gcfg, 512u << 10, (1u << 20) / sizeof(Value));
    prims_system_init(array_new_perm(0));
}

char *fuzz_cstring(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}
