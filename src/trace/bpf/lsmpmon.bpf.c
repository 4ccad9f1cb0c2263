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
/* --lean: only LSMPMON's count/min/max/sum/cs_count. */
const volatile __u8 lean = 0;

/* Set by user space before load: n traced hooks, ids 0..n-1, n = calibration. */
const volatile __u32 n_hooks = 0;

/* 0 until every hook is attached (the ready gate); then toggled by `trace ctl`. */
__u32 enabled = 0;

/*
 * Hooks in progress on one CPU, innermost on top. A per-CPU stack instead of
 * task storage: no helper call to find it (the probe-cost target). A frame
 * belongs to the task that pushed it; a call is timed only if its frame is
 * still on top of the same CPU's stack at exit and the task's context-switch
 * count did not move. Otherwise the task was switched out (or migrated), and
 * the call goes to cs_count untimed, as in LSMPMON.
 */
struct frame {
	__u64 start_ns;
	__u64 switches;
	__u64 task;
	__u32 hook;
	__u32 pad;
};

struct cpu_stack {
	__u32 depth;
	__u32 pad;
	struct frame frames[LSMPMON_MAX_DEPTH];
};

/* Only for --syscall-time: when the task entered its current syscall. */
struct task_ctx {
	__u64 sys_start_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx SEC(".maps");

/* Plain arrays indexed by CPU by hand: their lookups are inlined by the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to the number of CPUs */
	__type(key, __u32);
	__type(value, struct cpu_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to CPUs * (n_hooks + 1) */
	__type(key, __u32);
	__type(value, struct lsmpmon_hook_stats);
} hook_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LSMPMON_MAX_HOOKS);
	__type(key, __u32);
	__type(value, struct lsmpmon_hook_meta);
} hook_meta SEC(".maps");

/* hook * LSMPMON_SYSCALL_SLOTS + slot; resized to n_hooks * LSMPMON_SYSCALL_SLOTS. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lsmpmon_syscall_cell);
} syscall_cells SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
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

/*
 * floor(log2(v)) with constant shifts only: the x86 JIT turns each variable
 * shift into a save/restore of %rcx, which cost more than these branches.
 */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* NUL-terminated strings of at most n bytes are equal. */
static __always_inline bool str_eq(const char *a, const volatile char *b, int n)
{
	for (int i = 0; i < n; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			break;
	}
	return true;
}

static __always_inline bool comm_matches(void)
{
	char comm[LSMPMON_COMM_LEN];

	bpf_get_current_comm(comm, sizeof(comm));
	return str_eq(comm, filter_comm, LSMPMON_COMM_LEN);
}

/*
 * Every probe helper takes `kp`: true in the kprobe/kretprobe fallback for
 * kernels before 5.17 (no BTF task pointer, no bpf_get_func_arg/ret, no
 * bpf_task_pt_regs), where task fields are read with bpf_probe_read_kernel.
 * It is a compile-time constant in each program, so the other path vanishes.
 */
static __always_inline __u64 current_task(bool kp)
{
	return kp ? bpf_get_current_task() : (__u64)bpf_get_current_task_btf();
}

static __always_inline bool subject_ok(__u64 task, __u32 id, bool kp)
{
	/* A load from the task, cheaper than bpf_get_current_pid_tgid(). */
	__u32 tgid = kp ? bpf_get_current_pid_tgid() >> 32 : ((struct task_struct *)task)->tgid;

	/* The calibration hook is driven by lsmpmon itself. */
	if (id == n_hooks)
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

static __always_inline __u64 func_arg(void *ctx, __u32 n, bool kp)
{
	struct pt_regs *regs = ctx;
	__u64 arg = 0;

	if (!kp) {
		bpf_get_func_arg(ctx, n, &arg);
		return arg;
	}
	switch (n) {
	case 0: return PT_REGS_PARM1_CORE(regs);
	case 1: return PT_REGS_PARM2_CORE(regs);
	case 2: return PT_REGS_PARM3_CORE(regs);
	case 3: return PT_REGS_PARM4_CORE(regs);
	case 4: return PT_REGS_PARM5_CORE(regs);
	default: return 0;
	}
}

static __always_inline bool object_ok(void *ctx, __u32 id, bool kp)
{
	struct lsmpmon_hook_meta *meta = bpf_map_lookup_elem(&hook_meta, &id);
	char name[LSMPMON_OBJ_NAME_LEN];
	struct dentry *dentry;
	__u64 arg;

	if (!meta || meta->obj_kind == LSMPMON_OBJ_NONE)
		return false;
	arg = func_arg(ctx, meta->obj_arg, kp);
	if (!arg)
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
	return str_eq(name, filter_object, LSMPMON_OBJ_NAME_LEN);
}

/*
 * A number that moves whenever the task is switched out and back in: the
 * scheduler's arrival count (CONFIG_SCHED_INFO, one load), else the
 * voluntary + involuntary switch counts.
 */
static __always_inline __u64 switches_of(__u64 task, bool kp)
{
	struct task_struct *t = (struct task_struct *)task;

	if (bpf_core_field_exists(t->sched_info.pcount))
		return kp ? BPF_CORE_READ(t, sched_info.pcount) : t->sched_info.pcount;
	if (kp)
		return BPF_CORE_READ(t, nvcsw) + BPF_CORE_READ(t, nivcsw);
	return t->nvcsw + t->nivcsw;
}

/* Slot 0 when not in a syscall (kernel threads); else syscall nr + 1. */
static __always_inline __u32 syscall_slot(__u64 task, bool kp)
{
	struct task_struct *t = (struct task_struct *)task;
	struct pt_regs *regs;
	long nr;

	if (kp) {
		if (BPF_CORE_READ(t, flags) & PF_KTHREAD)
			return 0;
		/* task_pt_regs(): the top of the task's kernel stack (x86_64). */
		regs = (struct pt_regs *)((long)BPF_CORE_READ(t, stack) + THREAD_SIZE) - 1;
		regs = (void *)((long)regs + sizeof(struct pt_regs) - bpf_core_type_size(struct pt_regs));
		nr = BPF_CORE_READ(regs, orig_ax);
	} else {
		if (t->flags & PF_KTHREAD)
			return 0;
		/* A BTF pointer: a direct load, not bpf_probe_read_kernel. */
		regs = (struct pt_regs *)bpf_task_pt_regs(t);
		nr = regs->orig_ax;
	}
	if (nr < 0 || nr >= LSMPMON_SYSCALL_SLOTS - 1)
		return 0;
	return nr + 1;
}

static __always_inline struct lsmpmon_hook_stats *stats_of(__u32 cpu, __u32 id)
{
	__u32 key = cpu * (n_hooks + 1) + id;

	return bpf_map_lookup_elem(&hook_stats, &key);
}

static __always_inline int on_entry(void *ctx, __u32 id, bool kp)
{
	struct lsmpmon_hook_stats *s;
	struct cpu_stack *st;
	struct frame *f;
	__u32 cpu, depth;
	__u64 task;

	if (!enabled)
		return 0;
	task = current_task(kp);
	if (!subject_ok(task, id, kp))
		return 0;
	if (filter_object_on && !object_ok(ctx, id, kp))
		return 0;
	cpu = bpf_get_smp_processor_id();
	st = bpf_map_lookup_elem(&stacks, &cpu);
	if (!st)
		return 0;
	depth = st->depth;
	/*
	 * Frames of other tasks on top were left by tasks switched out inside a
	 * hook (interrupts never leave frames: they run in the current task).
	 */
	for (int i = 0; i < LSMPMON_MAX_DEPTH; i++) {
		if (depth == 0 || depth > LSMPMON_MAX_DEPTH ||
		    st->frames[(depth - 1) & (LSMPMON_MAX_DEPTH - 1)].task == task)
			break;
		depth--;
	}
	if (depth >= LSMPMON_MAX_DEPTH) {
		s = stats_of(cpu, id);
		if (s)
			s->dropped++;
		return 0;
	}
	f = &st->frames[depth & (LSMPMON_MAX_DEPTH - 1)];
	f->task = task;
	f->hook = id;
	f->switches = switches_of(task, kp);
	st->depth = depth + 1;
	/* Last, so that the probe's own bookkeeping stays out of the sample. */
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void record(struct lsmpmon_hook_stats *s, __u64 task, __u32 id,
				   __u64 delta_ns, bool outermost, bool kp)
{
	struct lsmpmon_syscall_cell *cell;
	struct lsmpmon_syscall_time *st;
	__u32 slot, idx;
	__u64 bucket;

	s->count++;
	s->sum_ns += delta_ns;
	if (!s->min_ns || delta_ns < s->min_ns)
		s->min_ns = delta_ns;
	if (delta_ns > s->max_ns)
		s->max_ns = delta_ns;
	if (lean)
		return;
	bucket = log2_u64(delta_ns);
	/* Keep clang from folding the mask away: the verifier needs it. */
	asm volatile("" : "+r"(bucket));
	s->hist[bucket & (LSMPMON_HIST_BUCKETS - 1)]++;

	slot = syscall_slot(task, kp);
	idx = id * LSMPMON_SYSCALL_SLOTS + slot;
	cell = bpf_map_lookup_elem(&syscall_cells, &idx);
	if (cell) {
		__sync_fetch_and_add(&cell->sum_ns, delta_ns);
		__sync_fetch_and_add(&cell->count, 1);
	}
	if (syscall_time_on && outermost) {
		st = bpf_map_lookup_elem(&syscall_time, &slot);
		if (st)
			__sync_fetch_and_add(&st->hook_ns, delta_ns);
	}
}

static __always_inline int on_exit(void *ctx, __u32 id, bool returns_nonzero, bool kp)
{
	__u64 now = bpf_ktime_get_ns();
	struct lsmpmon_hook_stats *s;
	struct cpu_stack *st;
	struct frame *f;
	__u32 cpu, depth;
	bool timed = false;
	__u64 task;

	cpu = bpf_get_smp_processor_id();
	st = bpf_map_lookup_elem(&stacks, &cpu);
	if (!st)
		return 0;
	task = current_task(kp);
	depth = st->depth;
	if (depth > 0 && depth <= LSMPMON_MAX_DEPTH) {
		f = &st->frames[(depth - 1) & (LSMPMON_MAX_DEPTH - 1)];
		if (f->task == task && f->hook == id) {
			st->depth = depth - 1;
			timed = switches_of(task, kp) == f->switches;
			if (!enabled)
				return 0;
			s = stats_of(cpu, id);
			if (!s)
				return 0;
			if (timed)
				record(s, task, id, now - f->start_ns, depth == 1, kp);
			goto done;
		}
	}
	/*
	 * No frame of ours on top: either this call's entry was not recorded
	 * (filtered) or the task was switched out inside the hook and its frame
	 * was discarded or left on another CPU.
	 */
	if (!enabled || !subject_ok(task, id, kp))
		return 0;
	if (filter_object_on && !object_ok(ctx, id, kp))
		return 0;
	s = stats_of(cpu, id);
	if (!s)
		return 0;
done:
	if (!timed)
		s->cs_count++;
	if (lean)
		return 0;
	if (returns_nonzero)
		s->deny++;
	else
		s->allow++;
	return 0;
}

SEC("fentry/security_file_permission")
int BPF_PROG(hook_entry)
{
	return on_entry(ctx, hook_id(), false);
}

SEC("fexit/security_file_permission")
int BPF_PROG(hook_exit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_exit(ctx, hook_id(), (int)ret != 0, false);
}

/* The fallback for kernels without bpf_get_func_ret() (< 5.17): same logic. */
SEC("kprobe/security_file_permission")
int hook_kentry(struct pt_regs *ctx)
{
	return on_entry(ctx, hook_id(), true);
}

SEC("kretprobe/security_file_permission")
int hook_kexit(struct pt_regs *ctx)
{
	return on_exit(ctx, hook_id(), (int)PT_REGS_RC_CORE(ctx) != 0, true);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_ctx *tc;

	if (!enabled || !subject_ok((__u64)task, 0, false))
		return 0;
	tc = bpf_task_storage_get(&task_ctx, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
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
	slot = syscall_slot((__u64)task, false);
	st = bpf_map_lookup_elem(&syscall_time, &slot);
	if (st && enabled) {
		__sync_fetch_and_add(&st->sum_ns, bpf_ktime_get_ns() - tc->sys_start_ns);
		__sync_fetch_and_add(&st->count, 1);
	}
	tc->sys_start_ns = 0;
	return 0;
}
