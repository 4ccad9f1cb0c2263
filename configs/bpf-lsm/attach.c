// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon-bpf-attach PROG_PIN LINK_PIN
 *
 * Attaches a pinned BPF LSM program (bpftool prog loadall ... pins them) to
 * its hook and pins the link, so the program stays attached after this
 * process exits; removing LINK_PIN detaches it.
 *
 * Only this step is not bpftool's: Debian 12's bpftool (7.1.0, built from the
 * Linux 6.1 sources) loads and pins programs and maps but cannot attach an LSM
 * (tracing-type) program: `prog loadall ... autoattach` came with Linux 6.2's
 * bpftool. This does what libbpf's bpf_program__attach_lsm + bpf_link__pin
 * do, in three bpf(2) commands: BPF_OBJ_GET, BPF_RAW_TRACEPOINT_OPEN (the
 * hook is the program's own attach_btf_id, so no name), BPF_OBJ_PIN.
 * Built by host_build; needs only libc, which the guest has with bpftool's
 * libraries.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

int main(int argc, char **argv)
{
	union bpf_attr attr;
	int prog, link;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PROG_PIN LINK_PIN\n", argv[0]);
		return 2;
	}

	memset(&attr, 0, sizeof(attr));
	attr.pathname = (uint64_t)(uintptr_t)argv[1];
	prog = sys_bpf(BPF_OBJ_GET, &attr);
	if (prog < 0) {
		fprintf(stderr, "%s: BPF_OBJ_GET %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.raw_tracepoint.name = 0;
	attr.raw_tracepoint.prog_fd = (uint32_t)prog;
	link = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &attr);
	if (link < 0) {
		fprintf(stderr, "%s: attaching %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.pathname = (uint64_t)(uintptr_t)argv[2];
	attr.bpf_fd = (uint32_t)link;
	if (sys_bpf(BPF_OBJ_PIN, &attr) < 0) {
		fprintf(stderr, "%s: pinning the link at %s: %s\n", argv[0], argv[2],
			strerror(errno));
		return 1;
	}
	return 0;
}
