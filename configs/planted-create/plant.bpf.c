// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon lab: a known cost planted in one hook, with no security module.
 *
 * An fexit program on security_inode_create, which the kernel calls once per
 * file it creates (creat, open with O_CREAT of a new name) and for nothing
 * else the benchmark does. Each call does PLANT_ROUNDS rounds of work on a
 * global and counts itself, so the cost is fixed and the same on every
 * kernel. It runs inside the hook's own time: a trace times it as part of
 * security_inode_create.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef PLANT_ROUNDS
#define PLANT_ROUNDS 48
#endif

__u64 calls = 0;
volatile __u64 sink = 0;

SEC("fexit/security_inode_create")
int planted_inode_create(unsigned long long *ctx)
{
	for (int i = 0; i < PLANT_ROUNDS; i++)
		sink += i;
	calls++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
