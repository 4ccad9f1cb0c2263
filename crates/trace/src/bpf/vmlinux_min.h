/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few kernel types the tracer reads, declared with CO-RE relocations so
 * that one object runs on every kernel (5.10 ... 6.18): libbpf matches the
 * fields by name against the running kernel's BTF at load time.
 */
#ifndef __VMLINUX_MIN_H__
#define __VMLINUX_MIN_H__
/* Tells bpf_tracing.h to use the kernel's pt_regs field names. */
#define __VMLINUX_H__

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct pt_regs {
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
};

struct task_struct {
	void *stack;
	unsigned int flags;
	int pid;
	int tgid;
	/* The task's context switches, voluntary and not. */
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

#define PF_IO_WORKER 0x00000010
#define PF_KTHREAD 0x00200000
/* x86_64 kernel stack size without KASAN (Debian kernels). */
#define THREAD_SIZE (16384)

#endif
