// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon's probes: one fentry and one fexit program, loaded once per LSM hook
 * with the hook id patched in (see hook_id()). Each traced call is timed on a
 * per-task stack (nested hooks and preemption cannot mix samples up), checked
 * for a context switch (LSMPMON's cs_count) and attributed to the syscall the
 * task is in.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include "vmlinux_min.h"
#include "intf.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/* Written by user space before load; the verifier prunes what they turn off. */
const volatile __u32 self_tgid = 0;
const volatile __u32 filter_tgid = 0;
const volatile __u8 filter_uid_on = 0;
const volatile __u32 filter_uid = 0;
const volatile __u64 filter_cgroup_id = 0;
const volatile __u8 filter_comm_on = 0;
const volatile char filter_comm[LSMPMON_COMM_LEN] = {};
const volatile __u8 filter_object_on = 0;
const volatile char filter_object[LSMPMON_OBJ_NAME_LEN] = {};
const volatile __u8 syscall_time_on = 0;

/* 0 until every hook is attached (the ready gate); then toggled by `trace ctl`. */
__u32 enabled = 0;

struct frame {
	__u64 start_ns;
	__u64 switches;
	__u32 hook;
	__u32 pad;
};

struct task_ctx {
	__u32 depth;
	__u32 pad;
	__u64 sys_start_ns;
	struct frame frames[LSMPMON_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSMPMON_MAX_HOOKS);
	__type(key, __u32);
	__type(value, struct lsmpmon_hook_stats);
} hook_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LSMPMON_MAX_HOOKS);
	__type(key, __u32);
	__type(value, struct lsmpmon_hook_meta);
} hook_meta SEC(".maps");

/* hook * LSMPMON_SYSCALL_SLOTS + slot; resized by user space to the hooks found. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSMPMON_SYSCALL_SLOTS);
	__type(key, __u32);
	__type(value, struct lsmpmon_syscall_cell);
} syscall_cells SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSMPMON_SYSCALL_SLOTS);
	__type(key, __u32);
	__type(value, struct lsmpmon_syscall_time);
} syscall_time SEC(".maps");

/* Replaced by the hook's id in each loaded copy: no lookup on the hot path. */
static __always_inline __u32 hook_id(void)
{
	__u64 id;

	asm volatile("%0 = %1" : "=r"(id) : "i"(LSMPMON_HOOK_ID_MAGIC));
	return id;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline bool comm_matches(void)
{
	char comm[LSMPMON_COMM_LEN];

	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < LSMPMON_COMM_LEN; i++) {
		if (comm[i] != filter_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

static __always_inline bool subject_ok(__u32 id)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* The calibration hook is driven by lsmpmon itself. */
	if (id == LSMPMON_CALIBRATION_HOOK)
		return tgid == self_tgid;
	if (tgid == self_tgid)
		return false;
	if (filter_tgid && tgid != filter_tgid)
		return false;
	if (filter_uid_on && (__u32)bpf_get_current_uid_gid() != filter_uid)
		return false;
	if (filter_cgroup_id && bpf_get_current_cgroup_id() != filter_cgroup_id)
		return false;
	if (filter_comm_on && !comm_matches())
		return false;
	return true;
}

static __always_inline bool object_ok(void *ctx, __u32 id)
{
	struct lsmpmon_hook_meta *meta = bpf_map_lookup_elem(&hook_meta, &id);
	char name[LSMPMON_OBJ_NAME_LEN];
	struct dentry *dentry;
	__u64 arg = 0;

	if (!meta || meta->obj_kind == LSMPMON_OBJ_NONE)
		return false;
	if (bpf_get_func_arg(ctx, meta->obj_arg, &arg) || !arg)
		return false;
	switch (meta->obj_kind) {
	case LSMPMON_OBJ_FILE:
		dentry = BPF_CORE_READ((struct file *)arg, f_path.dentry);
		break;
	case LSMPMON_OBJ_PATH:
		dentry = BPF_CORE_READ((struct path *)arg, dentry);
		break;
	default:
		dentry = (struct dentry *)arg;
	}
	if (bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(dentry, d_name.name)) < 0)
		return false;
	for (int i = 0; i < LSMPMON_OBJ_NAME_LEN; i++) {
		if (name[i] != filter_object[i])
			return false;
		if (!name[i])
			break;
	}
	return true;
}

static __always_inline __u64 switches_of(struct task_struct *task)
{
	return task->nvcsw + task->nivcsw;
}

/* Slot 0 when not in a syscall (kernel threads); else syscall nr + 1. */
static __always_inline __u32 syscall_slot(struct task_struct *task)
{
	struct pt_regs *regs;
	long nr;

	if (task->flags & PF_KTHREAD)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	nr = BPF_CORE_READ(regs, orig_ax);
	if (nr < 0 || nr >= LSMPMON_SYSCALL_SLOTS - 1)
		return 0;
	return nr + 1;
}

static __always_inline void count_drop(__u32 id)
{
	struct lsmpmon_hook_stats *s = bpf_map_lookup_elem(&hook_stats, &id);

	if (s)
		s->dropped++;
}

static __always_inline int on_entry(void *ctx, __u32 id)
{
	struct task_struct *task;
	struct task_ctx *tc;
	struct frame *f;
	__u32 depth;

	if (!enabled || !subject_ok(id))
		return 0;
	if (filter_object_on && !object_ok(ctx, id))
		return 0;
	task = bpf_get_current_task_btf();
	tc = bpf_task_storage_get(&task_ctx, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tc) {
		count_drop(id);
		return 0;
	}
	depth = tc->depth;
	if (depth >= LSMPMON_MAX_DEPTH) {
		count_drop(id);
		return 0;
	}
	f = &tc->frames[depth & (LSMPMON_MAX_DEPTH - 1)];
	f->hook = id;
	f->switches = switches_of(task);
	tc->depth = depth + 1;
	/* Last, so that the probe's own bookkeeping stays out of the sample. */
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void record(struct task_struct *task, __u32 id, __u64 delta_ns,
				   bool outermost)
{
	struct lsmpmon_syscall_cell *cell;
	struct lsmpmon_syscall_time *st;
	struct lsmpmon_hook_stats *s;
	__u32 slot, idx;
	__u64 bucket;

	s = bpf_map_lookup_elem(&hook_stats, &id);
	if (!s)
		return;
	s->count++;
	s->sum_ns += delta_ns;
	if (!s->min_ns || delta_ns < s->min_ns)
		s->min_ns = delta_ns;
	if (delta_ns > s->max_ns)
		s->max_ns = delta_ns;
	bucket = log2_u64(delta_ns);
	/* Keep clang from folding the mask away: the verifier needs it. */
	asm volatile("" : "+r"(bucket));
	s->hist[bucket & (LSMPMON_HIST_BUCKETS - 1)]++;

	slot = syscall_slot(task);
	idx = id * LSMPMON_SYSCALL_SLOTS + slot;
	cell = bpf_map_lookup_elem(&syscall_cells, &idx);
	if (cell) {
		cell->sum_ns += delta_ns;
		cell->count++;
	}
	if (syscall_time_on && outermost) {
		st = bpf_map_lookup_elem(&syscall_time, &slot);
		if (st)
			st->hook_ns += delta_ns;
	}
}

static __always_inline int on_exit(void *ctx, __u32 id, bool returns_nonzero)
{
	__u64 now = bpf_ktime_get_ns();
	struct lsmpmon_hook_stats *s;
	struct task_struct *task;
	struct task_ctx *tc;
	struct frame *f;
	__u64 delta_ns;
	__u32 depth;

	task = bpf_get_current_task_btf();
	tc = bpf_task_storage_get(&task_ctx, task, 0, 0);
	if (!tc)
		return 0;
	depth = tc->depth;
	if (depth == 0 || depth > LSMPMON_MAX_DEPTH)
		return 0;
	f = &tc->frames[(depth - 1) & (LSMPMON_MAX_DEPTH - 1)];
	/* This call's entry was not recorded (filtered, or before the gate opened). */
	if (f->hook != id)
		return 0;
	if (filter_object_on && !object_ok(ctx, id))
		return 0;
	tc->depth = depth - 1;
	if (!enabled)
		return 0;
	delta_ns = now - f->start_ns;

	if (switches_of(task) != f->switches) {
		s = bpf_map_lookup_elem(&hook_stats, &id);
		if (!s)
			return 0;
		s->cs_count++;
		s->cs_sum_ns += delta_ns;
	} else {
		record(task, id, delta_ns, depth == 1);
		s = bpf_map_lookup_elem(&hook_stats, &id);
		if (!s)
			return 0;
	}
	if (returns_nonzero)
		s->deny++;
	else
		s->allow++;
	return 0;
}

SEC("fentry/security_file_permission")
int BPF_PROG(hook_entry)
{
	return on_entry(ctx, hook_id());
}

SEC("fexit/security_file_permission")
int BPF_PROG(hook_exit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_exit(ctx, hook_id(), (int)ret != 0);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	struct task_ctx *tc;

	if (!enabled || !subject_ok(0))
		return 0;
	tc = bpf_task_storage_get(&task_ctx, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (tc)
		tc->sys_start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lsmpmon_syscall_time *st;
	struct task_ctx *tc;
	__u32 slot;

	tc = bpf_task_storage_get(&task_ctx, task, 0, 0);
	if (!tc || !tc->sys_start_ns)
		return 0;
	slot = syscall_slot(task);
	st = bpf_map_lookup_elem(&syscall_time, &slot);
	if (st && enabled) {
		st->sum_ns += bpf_ktime_get_ns() - tc->sys_start_ns;
		st->count++;
	}
	tc->sys_start_ns = 0;
	return 0;
}
