// SPDX-License-Identifier: BSD-2-Clause
/* verified_insns.c - for tests/verifier.sh: the name of each BPF program whose id is
 * given and how many instructions the kernel's verifier processed to load it
 * (bpf_prog_info.verified_insns, Linux 5.16+), one "NAME COUNT" line each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

int main(int argc, char **argv)
{
	int status = 0;

	for (int i = 1; i < argc; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id((__u32)strtoul(argv[i], NULL, 10));

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
			fprintf(stderr, "verified_insns: program %s: cannot read its info\n", argv[i]);
			status = 1;
		} else {
			printf("%s %u\n", info.name, info.verified_insns);
		}
		if (fd >= 0)
			close(fd);
	}
	return status;
}
