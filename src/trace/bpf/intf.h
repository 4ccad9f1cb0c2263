/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Everything the BPF side and the Rust side of `lsmpmon trace` must agree on:
 * limits, ids and record layouts. Rust reads this file through bindgen.
 */
#ifndef LSMPMON_INTF_H
#define LSMPMON_INTF_H

#ifndef __VMLINUX_MIN_H__
#include <linux/types.h>
#endif

enum lsmpmon_limits {
	/*
	 * Hook ids are 0..n-1 for the n traced hooks; id n is the calibration
	 * probe. Statistics are kept per CPU at [cpu * (n + 1) + id].
	 */
	LSMPMON_MAX_HOOKS = 1024,
	/* Syscall slot 0 is "(none)": not in a syscall; slot n+1 is syscall n. */
	LSMPMON_SYSCALL_SLOTS = 512,
	LSMPMON_HIST_BUCKETS = 64, /* log2 of a u64: a mask keeps the index provably in range */
	/* Frames on each CPU's stack of hooks in progress (nesting, interrupts). */
	LSMPMON_MAX_DEPTH = 16,
	LSMPMON_OBJ_NAME_LEN = 32,
	LSMPMON_COMM_LEN = 16,
};

/*
 * The hook id is not looked up at run time: each program instance is loaded
 * with this immediate replaced by its hook's id (see trace/attach.rs).
 */
#define LSMPMON_HOOK_ID_MAGIC 0x1badcafe

/* Which argument of a hook names the object, for the --object filter. */
enum lsmpmon_obj_kind {
	LSMPMON_OBJ_NONE = 0,
	LSMPMON_OBJ_FILE = 1,	/* struct file * */
	LSMPMON_OBJ_DENTRY = 2, /* struct dentry * */
	LSMPMON_OBJ_PATH = 3,	/* const struct path * */
};

struct lsmpmon_hook_meta {
	__u8 obj_kind;	  /* enum lsmpmon_obj_kind */
	__u8 obj_arg;	  /* index of that argument */
	__u8 returns_int; /* allow/deny split is meaningful */
	__u8 pad;
};

/* Per hook, per CPU (summed in user space). */
struct lsmpmon_hook_stats {
	__u64 count;	/* calls without a context switch: the timed ones */
	__u64 sum_ns;
	__u64 min_ns;	/* 0 = no sample yet */
	__u64 max_ns;
	__u64 cs_count; /* calls during which the task was switched out (or migrated) */
	__u64 allow;	/* int hooks: returned 0 (timed and switched calls) */
	__u64 deny;	/* int hooks: returned non-zero */
	__u64 dropped;	/* entry seen but the CPU's stack was full */
	__u64 hist[LSMPMON_HIST_BUCKETS]; /* log2(ns) of timed calls */
};

/* Per (hook, syscall slot), shared by all CPUs (atomic adds): the timed calls only. */
struct lsmpmon_syscall_cell {
	__u64 sum_ns;
	__u64 count;
};

/* Per syscall slot, shared (atomic adds): time from sys_enter to sys_exit of filtered tasks. */
struct lsmpmon_syscall_time {
	__u64 sum_ns;
	__u64 count;
	__u64 hook_ns; /* time in outermost timed hooks during this syscall */
};

#endif /* LSMPMON_INTF_H */
