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
	/*
	 * Syscall slot 0 is "(none)": not in a syscall; slot n+1 is syscall n.
	 * The last two are calls in interrupt context, which belong to no task.
	 */
	LSMPMON_SYSCALL_SLOTS = 512,
	LSMPMON_SLOT_IRQ = LSMPMON_SYSCALL_SLOTS - 2,	  /* "(irq)": a hardirq handler */
	LSMPMON_SLOT_SOFTIRQ = LSMPMON_SYSCALL_SLOTS - 1, /* "(softirq)" */
	/*
	 * Marks an interrupt slot in lsmpmon_hook_stats.pend_slot, where any
	 * syscall number (+ 1) can also be: bit 31, which no x86_64 syscall has.
	 */
	LSMPMON_SLOT_IRQ_MARK = 0x80000000,
	/*
	 * The latency histogram is log-linear (as HdrHistogram's): one bucket
	 * per ns below 2 * LSMPMON_HIST_SUB ns, then LSMPMON_HIST_SUB buckets
	 * per power of two, so a bucket is at most 1/16 of its lower bound wide
	 * and its middle within 3.2 % of any call in it. Bucket i >= 32 holds
	 * [(16 + i % 16) << (i / 16 - 1), (17 + i % 16) << (i / 16 - 1)) ns; the
	 * last ends at 2^31 ns (2.1 s) and also takes every slower call.
	 */
	LSMPMON_HIST_SUB_BITS = 4,
	LSMPMON_HIST_SUB = 1 << LSMPMON_HIST_SUB_BITS,
	LSMPMON_HIST_BUCKETS = 28 * LSMPMON_HIST_SUB,
	/*
	 * Frames on each CPU's stack of hooks in progress (nesting, interrupts):
	 * 10, so that lsmpmon_cpu.used (in bytes) fits a u8.
	 */
	LSMPMON_MAX_DEPTH = 10,
	/* Frames an exit looks through for its own (those above it lost their exit). */
	LSMPMON_EXIT_SEARCH = 4,
	/* Tasks switched out inside a traced hook at one time (lsmpmon_pending). */
	LSMPMON_MAX_PENDING_TASKS = 16384,
	/* (cgroup, hook) cells of --by cgroup; calls beyond are cgroup_lost_calls. */
	LSMPMON_MAX_CGROUP_CELLS = 16384,
	LSMPMON_OBJ_NAME_LEN = 32,
	LSMPMON_COMM_LEN = 16,
	/* --sample's largest N: the draw 1..2N-1 fits lsmpmon_cpu.sample_left. */
	LSMPMON_MAX_SAMPLE = 32768,
	/*
	 * LSMPMON_PATCH_SAMPLE's value under --timing-windows: the exits, always
	 * attached, count a call with no frame as untimed; the entries, attached
	 * only during a window, time every call (no draw).
	 */
	LSMPMON_SAMPLE_WINDOWED = 32769,
};

/*
 * Per-hook constants are not looked up at run time: each program copy is
 * loaded with them patched in (attach/consts.rs). Each is a 64-bit immediate
 * whose upper half is one of these markers; the lower half holds the value,
 * 0 in the template.
 */
enum lsmpmon_patch {
	LSMPMON_PATCH_HOOK_ID = 0x1badcafe,
	/*
	 * For hooks returning int, 1 + the index of the return value among the
	 * fexit program's context words (= 1 + the number of arguments); 0 for
	 * void hooks.
	 */
	LSMPMON_PATCH_RET_SLOT = 0x1badcaff,
	/* Byte offset of the hook's lsmpmon_hook_stats in its CPU's value. */
	LSMPMON_PATCH_STATS_OFF = 0x1badcb00,
	/* 1 in the calibration probe's copy, which counts lsmpmon's own calls only. */
	LSMPMON_PATCH_CALIBRATION = 0x1badcb01,
	/* Options, the same in every copy: 1 if on. */
	LSMPMON_PATCH_LEAN = 0x1badcb02,	 /* --lean: only LSMPMON's columns */
	LSMPMON_PATCH_SYSCALL_TIME = 0x1badcb03, /* --syscall-time */
	/*
	 * 1 on a kernel that can preempt a task inside a probe (preempt=full,
	 * lazy): the probes run with preemption disabled (bpf_preempt_disable).
	 */
	LSMPMON_PATCH_NO_PREEMPT = 0x1badcb04,
	/* 1 in a session program's copy (BPF_TRACE_FSESSION): see hook_session. */
	LSMPMON_PATCH_SESSION = 0x1badcb05,
	/*
	 * 1 for `trace --empty-probes` (a benchmark of the attach methods
	 * themselves): every program returns at once, recording nothing.
	 */
	LSMPMON_PATCH_EMPTY = 0x1badcb06,
	/*
	 * 1 in the one session program of a multi-link (BPF_TRACE_FSESSION_MULTI):
	 * the per-hook constants come from the link's cookie for the hook
	 * (enum lsmpmon_multi_cookie), not from patches.
	 */
	LSMPMON_PATCH_MULTI = 0x1badcb07,
	/* --by cgroup: every call also counted in its task's cgroup's cell. */
	LSMPMON_PATCH_BY_CGROUP = 0x1badcb08,
	/*
	 * --sample N: one call in N timed on average (0 or 1: every call); the
	 * others are counted only (lsmpmon_hook_stats.untimed).
	 */
	LSMPMON_PATCH_SAMPLE = 0x1badcb09,
};

/* A multi-link's cookie for one hook: what the patched constants say in a copy. */
enum lsmpmon_multi_cookie {
	LSMPMON_MULTI_HOOK_MASK = 0xffff,	/* the hook id (its statistics row) */
	LSMPMON_MULTI_RETURNS_INT = 0x10000,	/* the hook returns int */
};

/*
 * Kernel functions (kfuncs) the probes call only where the running kernel has
 * them. Compiled as calls of helpers with these ids, which no kernel has, in
 * code the template's constants make dead; each loaded copy has them turned
 * into calls of the kfunc by the BTF id the running kernel gives it
 * (attach/template.rs).
 */
enum lsmpmon_kfunc {
	LSMPMON_KFUNC_PREEMPT_DISABLE = 0x7ff0c001,
	LSMPMON_KFUNC_PREEMPT_ENABLE = 0x7ff0c002,
	LSMPMON_KFUNC_SESSION_IS_RETURN = 0x7ff0c003,
	LSMPMON_KFUNC_SESSION_COOKIE = 0x7ff0c004,
};

/*
 * A session program's per-call cookie (one u64 on the trampoline's stack):
 * bit 0 set if the call is being timed; bit 1 (--sample) if it was not
 * drawn (LSMPMON_COOKIE_FORCED); bits 2-11 the CPU's count of
 * finished session calls at its entry (those finished before its exit ran
 * inside it); bits 12-31 the task's context switches at its entry (any
 * change: a cs_count; 2^20 switches inside one call would go unseen); bits
 * 32-63 its start time in ns modulo 2^32 (4.29 s: a timed call, which has no
 * context switch, never lasts that long).
 */
enum lsmpmon_cookie {
	LSMPMON_COOKIE_DONE_SHIFT = 2,
	LSMPMON_COOKIE_DONE_MASK = 0x3ff,
	LSMPMON_COOKIE_GEN_SHIFT = 12,
	LSMPMON_COOKIE_GEN_MASK = 0xfffff,
	LSMPMON_COOKIE_START_SHIFT = 32,
	/*
	 * --sample, bit 1: not drawn. With bit 0, timed only because it runs
	 * inside a timed call (counted as untimed, its cost taken out of that
	 * call's); alone, a call counted but not timed.
	 */
	LSMPMON_COOKIE_FORCED = 2,
	LSMPMON_COOKIE_UNTIMED = 2,
};

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

/*
 * A hook call in progress on one CPU (see struct lsmpmon_cpu). An exit takes
 * the frame of its own call only: same hook, same call key (the address of
 * the trampoline's argument block, which a call's fentry and fexit share).
 * A frame whose exit never ran (the kernel skipped it) is discarded by the
 * next exit below it; a call whose entry was skipped finds no frame.
 */
struct lsmpmon_frame {
	__u64 start_ns;
	__u64 key;  /* 0 while the frame is being built */
	__u16 hook;
	/*
	 * Probe pairs of lsmpmon's that ran inside this call (nested hooks,
	 * per-LSM functions, interrupts): their cost is taken out of its time.
	 */
	__u16 nested;
	/*
	 * --sample, --timing-windows: LSMPMON_FRAME_FORCED if the call is timed
	 * only because it runs inside a timed one (so that its probes' cost
	 * comes out of that one's time), not by its own draw;
	 * LSMPMON_FRAME_TAINTED if a traced call ran inside it without a frame
	 * (its entry attached after it began, gated by a window, skipped by the
	 * kernel, or the stack full), so that its exit's cost cannot be taken
	 * out. Either way its statistics count it as untimed.
	 */
	__u32 forced;
};

enum lsmpmon_frame_marks {
	LSMPMON_FRAME_FORCED = 1,
	LSMPMON_FRAME_TAINTED = 2,
};

/*
 * The current task as the probes see it, worked out once per context switch
 * (lsmpmon_cpu.subject; 0 = not yet known).
 */
enum lsmpmon_subject {
	LSMPMON_SUBJ_UNKNOWN = 0,
	LSMPMON_SUBJ_USER = 1,	  /* traced, a user task */
	LSMPMON_SUBJ_KTHREAD = 2, /* traced, a kernel thread or io_uring worker (never in a syscall) */
	/*
	 * In an interrupt handler on this CPU (set and undone by the irq and
	 * softirq tracepoints): no task's call, no syscall's.
	 */
	LSMPMON_SUBJ_IRQ = 3,
	LSMPMON_SUBJ_SOFTIRQ = 4,
	LSMPMON_SUBJ_SELF = 5, /* lsmpmon itself: only the calibration probe */
	LSMPMON_SUBJ_OUT = 6,  /* excluded by a task filter (--pid; in interrupts, any) */
};

/*
 * One CPU's state, followed in the same map value by that CPU's
 * lsmpmon_hook_stats for hooks 0..n (n = calibration): one map lookup per
 * probe, and the hook's statistics at a constant offset.
 */
struct lsmpmon_cpu {
	/*
	 * Bytes of frames in use: depth * sizeof(struct lsmpmon_frame). As this
	 * header is one frame long, the top frame is at (void *)cpu + used: a u8
	 * the verifier knows is in range, with no mask.
	 */
	__u8 used;
	/* Session calls in progress on this CPU (nesting, interrupts). */
	__u8 session_depth;
	/*
	 * --sample: this CPU's calls until the next timed one. After each timed
	 * call, a draw in 1..2N-1 (mean N): a fixed stride would time the same
	 * hook of a loop every time.
	 */
	__u16 sample_left;
	__u32 subject; /* enum lsmpmon_subject of what runs here */
	/* subject before the current softirq / hardirq handler began */
	__u32 subject_before_softirq;
	__u32 subject_before_irq;
	/* Session calls finished on this CPU (modulo 2^32). */
	__u32 sessions_done;
	/* Multi-link: the running hook's cookie (enum lsmpmon_multi_cookie). */
	__u32 multi_hook;
	struct lsmpmon_frame frames[LSMPMON_MAX_DEPTH];
};

/* Per hook, per CPU (summed in user space). */
struct lsmpmon_hook_stats {
	__u64 count;	/* calls without a context switch: the timed ones (--lean only; else sum of hist) */
	__u64 sum_ns;
	__u64 min_ns;	/* starts at U64_MAX (set by user space) */
	__u64 max_ns;
	__u64 cs_count; /* calls during which the task was switched out (or migrated) */
	/* Int hooks' returns other than 0: */
	__u64 deny;	/* -EACCES or -EPERM */
	__u64 error;	/* another negative value */
	__u64 value;	/* a positive value (a length, a boolean, ...) */
	/*
	 * Calls not measured: the CPU's stack of frames was full, or a delta
	 * that cannot be (the clock went back).
	 */
	__u64 dropped;
	__u64 nested;	/* nested probe pairs whose cost was taken out of sum_ns */
	/* --by cgroup: calls in no cgroup cell, the table being full. */
	__u64 cgroup_lost_calls;
	/* --sample: calls counted but not timed (not drawn, or drawn and switched out). */
	__u64 untimed;
	/*
	 * Timed calls in syscall slot pend_slot not yet added to syscall_cells:
	 * most calls of a hook on a CPU are in the syscall of its previous call,
	 * so the shared cell is touched only when the slot changes.
	 */
	__u32 pend_slot;
	__u32 pad;
	__u64 pend_count;
	__u64 pend_sum_ns;
	__u64 hist[LSMPMON_HIST_BUCKETS]; /* timed calls by duration (log-linear) */
};

/*
 * Per task switched out inside traced hooks: those calls' hooks, outermost
 * first. The task leaves them innermost first; each is then a cs_count.
 */
struct lsmpmon_pending {
	__u32 calls;
	__u16 hook[LSMPMON_MAX_DEPTH];
};

/*
 * Per (hook, syscall slot), shared by all CPUs (atomic adds): the timed calls
 * only, plus each CPU's lsmpmon_hook_stats.pend_* for its current slot.
 */
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

/*
 * --by cgroup: a hook's calls by the cgroup (v2) of the task making them,
 * per CPU. Calls in an interrupt handler belong to no task: cgroup_id 0.
 */
struct lsmpmon_cgroup_key {
	__u64 cgroup_id;
	__u32 hook;
	__u32 pad;
};

struct lsmpmon_cgroup_cell {
	__u64 calls;  /* every call, timed or not */
	__u64 timed;  /* timed calls (none with --count-only; 1 in N with --sample N) */
	__u64 sum_ns; /* their time */
	__u64 deny;   /* returned -EACCES or -EPERM */
};

#endif /* LSMPMON_INTF_H */
