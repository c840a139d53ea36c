// SPDX-License-Identifier: BSD-2-Clause
/* A small binary with USDT notes of provider squeak and a sqvm_debug_offsets symbol: the
 * seed of fuzz_elf, so that mutations start from the structures the tools look for. */
#include <sys/sdt.h>

const unsigned long long sqvm_debug_offsets[32] = {1};

int main(int argc, char **argv)
{
    DTRACE_PROBE2(squeak, vm__start, argv[0], sqvm_debug_offsets);
    DTRACE_PROBE1(squeak, vm__exit, argc);
    return 0;
}
