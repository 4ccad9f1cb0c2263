/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few kernel types the tracer reads, declared with CO-RE relocations so
 * that one object runs on every kernel (5.10 ... 6.18): libbpf matches the
 * fields by name against the running kernel's BTF at load time.
 */
#ifndef __VMLINUX_MIN_H__
#define __VMLINUX_MIN_H__

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct pt_regs {
	unsigned long orig_ax;
};

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	unsigned long nvcsw;
	unsigned long nivcsw;
};

struct qstr {
	const unsigned char *name;
};

struct dentry {
	struct qstr d_name;
};

struct path {
	struct dentry *dentry;
};

struct file {
	struct path f_path;
};

#pragma clang attribute pop

#define PF_KTHREAD 0x00200000

#endif
