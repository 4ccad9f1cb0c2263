/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every method shares: the loader's constants, the maps, the per-CPU
 * stack of frames, the filters and the entry and exit logic each method's
 * programs call.
 * Included once, by lsmpmon.bpf.c.
 */
/* Written by user space before load; the verifier prunes what they turn off. */
const volatile __u32 self_tgid = 0;
const volatile __u32 filter_tgid = 0;
/* Any of the uid, cgroup, comm and object filters: one test on the hot path. */
const volatile __u8 filters_on = 0;
const volatile __u8 filter_uid_on = 0;
const volatile __u32 filter_uid = 0;
const volatile __u64 filter_cgroup_id = 0;
const volatile __u8 filter_comm_on = 0;
const volatile char filter_comm[LSMPMON_COMM_LEN] = {};
const volatile __u8 filter_object_on = 0;
const volatile char filter_object[LSMPMON_OBJ_NAME_LEN] = {};
/* --with-interrupts: an interrupt handler is its interrupted task's, not out. */
const volatile __u8 with_interrupts = 0;
/* Statistics rows in each CPU's value (hooks + the calibration row). */
const volatile __u32 stat_rows = 1;

/* --sample N with N > 1: on_switch keeps no open calls (an unframed exit is untimed). */
const volatile __u8 sampling = 0;

/* 0 until every hook is attached (the ready gate); then toggled by `trace ctl`. */
__u32 enabled = 0;
/*
 * What one probe pair nested in a call adds to it, measured by user space
 * before tracing starts (trace/calibrate.rs, and session.rs under --sample;
 * probe.nested_cost_ns): taken out of a call's time once per such pair.
 */
__u64 nested_cost_ns = 0;
/*
 * --sample: what the exit's test for an open frame adds inside a timed call
 * (before its clock read), measured by user space with the calibration
 * probe running that test (calibrate_skew = 1) and without; taken out of
 * every sampled call's time, which then reads as when every call is timed.
 */
__u64 sample_skew_ns = 0;
__u8 calibrate_skew = 0;
/*
 * --sample: the calibration probe's calls are booked as a call nested in a
 * timed one is (timed for that one's sake, counted as untimed), so that user
 * space can time that pair: the nested cost under --sample.
 */
__u8 calibrate_forced = 0;
/*
 * --timing-windows: 0 while a window's entries are being attached or
 * released or settle (trace/windows.rs): an entry then leaves its call
 * untimed.
 */
__u8 window_timing = 0;

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

/*
 * Per CPU: struct lsmpmon_cpu, then the statistics of hooks 0..n, n being
 * the calibration probe (LSMPMON_PATCH_STATS_OFF locates a hook's). A
 * plain array indexed by CPU by hand (the verifier inlines its lookups;
 * per-CPU array lookups are helper calls before 6.10), mmapped by user space.
 * The value size is set at load time, so the map has no BTF value type.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized to the number of CPUs */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct lsmpmon_cpu)); /* + (n + 1) stats */
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LSMPMON_MAX_HOOKS);
	__type(key, __u32);
	__type(value, struct lsmpmon_hook_meta);
} hook_meta SEC(".maps");

/* Thread id -> traced calls it was switched out in and has not yet left. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LSMPMON_MAX_PENDING_TASKS);
	__type(key, __u32);
	__type(value, struct lsmpmon_pending);
} pending SEC(".maps");

/* hook * LSMPMON_SYSCALL_SLOTS + slot; resized to n * LSMPMON_SYSCALL_SLOTS. */
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

/* --by cgroup; preallocated, so a cell can be added in any context. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, LSMPMON_MAX_CGROUP_CELLS);
	__type(key, struct lsmpmon_cgroup_key);
	__type(value, struct lsmpmon_cgroup_cell);
} cgroup_cells SEC(".maps");

/*
 * A per-hook constant (enum lsmpmon_patch), patched into each loaded copy of
 * the program: no lookup on the hot path, and the verifier prunes what the
 * value rules out. The template that libbpf loads only to relocate it sees 0.
 */
#define PATCHED(marker)                                                           \
	({                                                                        \
		__u64 __v;                                                        \
		asm volatile("%0 = %1 ll" : "=r"(__v) : "i"((__u64)(marker) << 32)); \
		(__u32)__v;                                                       \
	})

/*
 * The hook's id, read where it is used rather than kept in a register across
 * helper calls (a callee-saved register costs a push and a pop per call).
 */
#define HOOK_ID() PATCHED(LSMPMON_PATCH_HOOK_ID)

/*
 * The multi-link session program serves every hook: its per-hook constants
 * are the link's cookie for the hook, which the program keeps in its CPU's
 * multi_hook while it runs (a program does not nest on its CPU).
 */
#define MULTI() PATCHED(LSMPMON_PATCH_MULTI)

/*
 * `sess` in the helpers below is a compile-time constant, true only in the
 * programs MULTI() can be 1 in (the session, count and kprobe.multi ones):
 * the fentry/fexit and per-hook kprobe programs compile without the
 * multi-link's branches (their patched check alone cost 6.1's fentry/fexit
 * probes 2-16 ns per call).
 */

static __always_inline __u32 hook_of(struct lsmpmon_cpu *c, bool sess)
{
	if (sess && MULTI())
		return c->multi_hook & LSMPMON_MULTI_HOOK_MASK;
	return HOOK_ID();
}

/* Kfuncs, by placeholder (enum lsmpmon_kfunc): see intf.h. */
static void (*kf_preempt_disable)(void) = (void *)LSMPMON_KFUNC_PREEMPT_DISABLE;
static void (*kf_preempt_enable)(void) = (void *)LSMPMON_KFUNC_PREEMPT_ENABLE;
static bool (*kf_session_is_return)(void *ctx) = (void *)LSMPMON_KFUNC_SESSION_IS_RETURN;
static __u64 *(*kf_session_cookie)(void *ctx) = (void *)LSMPMON_KFUNC_SESSION_COOKIE;

/*
 * A probe's work on its CPU's data is one critical section: on a kernel that
 * can preempt a task anywhere (full, lazy), another task running in the
 * middle of it would push its frames among ours. Elsewhere this is nothing.
 */
static __always_inline void preempt_off(void)
{
	if (PATCHED(LSMPMON_PATCH_NO_PREEMPT))
		kf_preempt_disable();
}

static __always_inline void preempt_on(void)
{
	if (PATCHED(LSMPMON_PATCH_NO_PREEMPT))
		kf_preempt_enable();
}

/* floor(log2(v)) for v < 256 (and 0 for 0): one load instead of a chain of branches. */
static const __u8 log2_of_byte[256] = {
	[0 ... 1] = 0,	  [2 ... 3] = 1,    [4 ... 7] = 2,     [8 ... 15] = 3,
	[16 ... 31] = 4,  [32 ... 63] = 5,  [64 ... 127] = 6,  [128 ... 255] = 7,
};

/*
 * floor(log2(v)): the table for the usual case, then constant shifts only
 * (the x86 JIT turns each variable shift into a save/restore of %rcx).
 */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 r = 16;

	if (v < 256)
		return log2_of_byte[v];
	if (v < 65536)
		return 8 + log2_of_byte[v >> 8];
	v >>= 16;
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
	return r + log2_of_byte[v & 0xff];
}

/*
 * The histogram bucket of each call under 4096 ns, the usual case: one load
 * instead of a log2 and a variable shift (which the x86 JIT wraps in a save
 * and restore of %rcx). Bucket 16 * (l - 3) + k holds [(16 + k) << (l - 4),
 * (17 + k) << (l - 4)) for l >= 4; below 16 ns, one bucket a ns.
 */
#define HIST_SUB_RANGE(l, k)                                                     \
	[((16 + (k)) << ((l) - 4))...(((17 + (k)) << ((l) - 4)) - 1)] = 16 * ((l) - 3) + (k)
#define HIST_OCTAVE(l)                                                           \
	HIST_SUB_RANGE(l, 0), HIST_SUB_RANGE(l, 1), HIST_SUB_RANGE(l, 2),        \
	HIST_SUB_RANGE(l, 3), HIST_SUB_RANGE(l, 4), HIST_SUB_RANGE(l, 5),        \
	HIST_SUB_RANGE(l, 6), HIST_SUB_RANGE(l, 7), HIST_SUB_RANGE(l, 8),        \
	HIST_SUB_RANGE(l, 9), HIST_SUB_RANGE(l, 10), HIST_SUB_RANGE(l, 11),      \
	HIST_SUB_RANGE(l, 12), HIST_SUB_RANGE(l, 13), HIST_SUB_RANGE(l, 14),     \
	HIST_SUB_RANGE(l, 15)
#define HIST_SMALL 4096
/* Global (in the skeleton's rodata) so that a unit test can read it. */
const volatile __u16 hist_of_small[HIST_SMALL] = {
	[1] = 1,   [2] = 2,	  [3] = 3,   [4] = 4,	[5] = 5,   [6] = 6,
	[7] = 7,   [8] = 8,	  [9] = 9,   [10] = 10, [11] = 11, [12] = 12,
	[13] = 13, [14] = 14, [15] = 15, HIST_OCTAVE(4), HIST_OCTAVE(5),
	HIST_OCTAVE(6), HIST_OCTAVE(7), HIST_OCTAVE(8), HIST_OCTAVE(9),
	HIST_OCTAVE(10), HIST_OCTAVE(11),
};

/* The histogram bucket of a call of ns ns (intf.h: LSMPMON_HIST_SUB). */
static __always_inline __u64 hist_bucket(__u64 ns)
{
	__u64 l;

	if (ns < HIST_SMALL)
		return hist_of_small[ns];
	l = log2_u64(ns);
	return ((l - LSMPMON_HIST_SUB_BITS + 1) << LSMPMON_HIST_SUB_BITS) |
	       ((ns >> (l - LSMPMON_HIST_SUB_BITS)) & (LSMPMON_HIST_SUB - 1));
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
 * Every probe helper takes `kp`, a compile-time constant in each program, so
 * the other paths vanish: 0 in the tracing programs (fentry/fexit, session);
 * KP_OLD in the kprobe/kretprobe fallback for kernels before 5.17 (no BTF
 * task pointer, no bpf_get_func_arg/ret, no bpf_task_pt_regs), where task
 * fields are read with bpf_probe_read_kernel; KP_BTF in the kprobe.multi
 * programs (5.18+): their context is pt_regs too, but the task is a BTF
 * pointer read directly (each bpf_probe_read_kernel is a helper call).
 */
#define KP_OLD 1
#define KP_BTF 2
/* KP_BTF in the kprobe session program, which has a cookie per call. */
#define KP_SESSION 3

static __always_inline struct task_struct *current_task(int kp)
{
	return kp == KP_OLD ? (struct task_struct *)bpf_get_current_task() :
			      bpf_get_current_task_btf();
}

static __always_inline struct lsmpmon_cpu *this_cpu(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&cpus, &cpu);
}

/*
 * The hook's statistics on this CPU, at a patched constant offset. A 32-bit
 * move zero-extends it for the pointer add (one instruction; clang would
 * shift left and right).
 */
static __always_inline struct lsmpmon_hook_stats *stats_of(struct lsmpmon_cpu *c, bool sess)
{
	__u32 off = PATCHED(LSMPMON_PATCH_STATS_OFF);

	if (sess && MULTI()) {
		__u32 row = hook_of(c, sess);

		if (row >= stat_rows)
			row = 0;
		return (void *)(c + 1) + row * sizeof(struct lsmpmon_hook_stats);
	}

	asm volatile("%0 = %1" : "=w"(off) : "w"(off));
	return (void *)c + off;
}

/*
 * Only properties of a task that cannot change while it runs (tgid, flags).
 * Kernel threads (zeroed saved registers) and io_uring workers (a copy of
 * their creator's) never make a syscall of their own: their calls go to
 * slot 0, "(none)".
 */
static __always_inline __u32 classify(int kp)
{
	struct task_struct *t = current_task(kp);
	__u32 tgid = kp == KP_OLD ? bpf_get_current_pid_tgid() >> 32 : t->tgid;
	__u32 flags = kp == KP_OLD ? BPF_CORE_READ(t, flags) : t->flags;

	if (tgid == self_tgid)
		return LSMPMON_SUBJ_SELF;
	if (filter_tgid && tgid != filter_tgid)
		return LSMPMON_SUBJ_OUT;
	return flags & (PF_KTHREAD | PF_IO_WORKER) ? LSMPMON_SUBJ_KTHREAD : LSMPMON_SUBJ_USER;
}

static __always_inline __u32 subject_of(struct lsmpmon_cpu *c, int kp)
{
	__u32 v = c->subject;

	if (v == LSMPMON_SUBJ_UNKNOWN) {
		v = classify(kp);
		c->subject = v;
	}
	return v;
}

/*
 * What runs here is one to trace: not lsmpmon, not filtered out by --pid (nor,
 * in an interrupt handler, by any task filter: see on_softirq_entry).
 */
static __always_inline bool traced_task(struct lsmpmon_cpu *c, int kp)
{
	return subject_of(c, kp) < LSMPMON_SUBJ_SELF;
}

/* Properties a task can change without a switch: checked on every call. */
static __always_inline bool task_filters_ok(void)
{
	if (filter_uid_on && (__u32)bpf_get_current_uid_gid() != filter_uid)
		return false;
	if (filter_cgroup_id && bpf_get_current_cgroup_id() != filter_cgroup_id)
		return false;
	if (filter_comm_on && !comm_matches())
		return false;
	return true;
}

/* Every task filter evaluated, as for a task that passes them all. */
static __always_inline void all_task_filters(void)
{
	bool ok = true;

	if (filter_uid_on)
		ok &= (__u32)bpf_get_current_uid_gid() == filter_uid;
	if (filter_cgroup_id)
		ok &= bpf_get_current_cgroup_id() == filter_cgroup_id;
	if (filter_comm_on)
		ok &= comm_matches();
	asm volatile("" : : "r"(ok));
}

static __always_inline __u64 func_arg(void *ctx, __u32 n, int kp)
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

static __always_inline bool object_ok(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	__u32 id = hook_of(c, sess);
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

static __always_inline bool filters_ok(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	if (!task_filters_ok())
		return false;
	return !filter_object_on || object_ok(ctx, c, kp, sess);
}

/* Is this call of hook `id` one to record? */
static __always_inline bool call_ok(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	/*
	 * The calibration hook is driven by lsmpmon itself, and does the same
	 * work as a call that passes the task filters (lsmpmon takes the --comm
	 * name while it calibrates): the pair cost it measures is a real probe's.
	 */
	if (PATCHED(LSMPMON_PATCH_CALIBRATION)) {
		if (subject_of(c, kp) != LSMPMON_SUBJ_SELF)
			return false;
		if (filters_on)
			all_task_filters();
		return true;
	}
	if (!traced_task(c, kp))
		return false;
	return !filters_on || filters_ok(ctx, c, kp, sess);
}

/* Syscall nr + 1: 0 when not in a syscall; callers map >= LSMPMON_SYSCALL_SLOTS to 0. */
static __always_inline __u32 syscall_slot(struct task_struct *t, int kp)
{
	struct pt_regs *regs;
	__u64 nr, slot;

	if (kp == KP_OLD) {
		/* task_pt_regs(): the top of the task's kernel stack (x86_64). */
		regs = (struct pt_regs *)((long)BPF_CORE_READ(t, stack) + THREAD_SIZE) - 1;
		regs = (void *)((long)regs + sizeof(struct pt_regs) - bpf_core_type_size(struct pt_regs));
		nr = BPF_CORE_READ(regs, orig_ax);
	} else {
		/* A BTF pointer: a direct load, not bpf_probe_read_kernel. */
		regs = (struct pt_regs *)bpf_task_pt_regs(t);
		nr = regs->orig_ax;
	}
	/* -1 (not in a syscall) is slot 0; record() bounds the rest when it uses one. */
	return nr + 1;
}

#define FRAME_SIZE sizeof(struct lsmpmon_frame)
#define STACK_SIZE (LSMPMON_MAX_DEPTH * FRAME_SIZE)

_Static_assert(__builtin_offsetof(struct lsmpmon_cpu, frames) == FRAME_SIZE,
	       "the header is one frame long");
_Static_assert(STACK_SIZE < 256, "lsmpmon_cpu.used fits a u8");
_Static_assert(__builtin_offsetof(struct lsmpmon_frame, hook) % 4 == 0 &&
		       __builtin_offsetof(struct lsmpmon_frame, nested) ==
			       __builtin_offsetof(struct lsmpmon_frame, hook) + 2,
	       "hook and nested are one aligned u32 (little-endian: hook low)");

/* The top frame when `used` bytes are in use (used > 0). */
static __always_inline struct lsmpmon_frame *top_frame(struct lsmpmon_cpu *c, __u64 used)
{
	return (void *)c + used;
}

/*
 * Ties a call's exit to its entry. fentry and fexit of one call get the same
 * context (the trampoline's argument block on the caller's stack), unique
 * among the calls in progress on a CPU. The kprobe fallback runs under the
 * kernel's per-CPU bpf_prog_active, so an interrupt skips both probes of a
 * call or neither: the thread id suffices there.
 */
static __always_inline __u64 call_key(void *ctx, int kp)
{
	/* Never 0, the mark of a frame being built (the idle task's id is 0). */
	if (kp)
		return bpf_get_current_pid_tgid() | (1ULL << 63);
	/* The pointer itself: the verifier allows no arithmetic on it. */
	return (__u64)ctx;
}

/*
 * `sess` (see hook_of) is true only in the kprobe.multi programs, where the
 * link's cookie names the hook: kept in the CPU's multi_hook while the
 * program runs (kprobe programs do not nest on a CPU: bpf_prog_active).
 */
#define HOOK_KEPT (1ULL << 63)

static __always_inline void take_cookie(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess,
					bool at_exit)
{
	__u64 *kept, hook;

	if (!(sess && MULTI()))
		return;
	if (kp != KP_SESSION) {
		c->multi_hook = bpf_get_attach_cookie(ctx);
		return;
	}
	/*
	 * The attach cookie is a binary search of the link's functions: the
	 * session's entry keeps it in the call's own cookie for the exit.
	 */
	kept = kf_session_cookie(ctx);
	if (at_exit && kept && (*kept & HOOK_KEPT)) {
		c->multi_hook = *kept;
		return;
	}
	hook = bpf_get_attach_cookie(ctx);
	c->multi_hook = hook;
	if (!at_exit && kept)
		*kept = hook | HOOK_KEPT;
}

/*
 * --sample N (N > 1) or --timing-windows: the probes keep the books of
 * untimed calls. The calibration probe keeps them too, so that the pair cost
 * it measures is the real probes' (it only never draws: drawing()).
 */
static __always_inline bool sampling_on(void)
{
	return PATCHED(LSMPMON_PATCH_SAMPLE) > 1;
}

/* --timing-windows: an entry, attached only during a window, times every call. */
static __always_inline bool windowed(void)
{
	return PATCHED(LSMPMON_PATCH_SAMPLE) == LSMPMON_SAMPLE_WINDOWED;
}

/* Does an entry draw which calls to time? Under --sample, except in the calibration probe. */
static __always_inline bool drawing(void)
{
	return sampling_on() && !windowed() && !PATCHED(LSMPMON_PATCH_CALIBRATION);
}

/*
 * --sample N: is this call left untimed? Each CPU times one call, then draws
 * how many calls until its next timed one (1..2N-1, mean N).
 */
static __always_inline bool sampled_out(struct lsmpmon_cpu *c)
{
	__u32 every = PATCHED(LSMPMON_PATCH_SAMPLE);
	__u32 left = c->sample_left;

	if (left > 1) {
		c->sample_left = left - 1;
		return true;
	}
	c->sample_left = 1 + bpf_get_prandom_u32() % (2 * every - 1);
	return false;
}

/* What --sample makes of a call at its entry. */
enum entry_timing {
	TIME_DRAWN = 0,	 /* timed (every call is, without --sample) */
	TIME_NOT = 1,	 /* only counted, by its exit */
	TIME_FORCED = 2, /* timed for the timed call it runs in, counted as untimed */
};

/*
 * An entry probe's first test under --sample, before any filter or
 * preemption guard. A call inside a timed one is timed too, so that its
 * probes' cost comes out of the outer call's time as when every call is
 * timed; its own statistics count it as untimed (each hook's timed calls
 * stay its own draws, one in N).
 */
static __always_inline int entry_timing(void)
{
	struct lsmpmon_cpu *c;

	if (!drawing())
		return TIME_DRAWN;
	c = this_cpu();
	if (!c)
		return TIME_NOT;
	if (c->used)
		return TIME_FORCED;
	return sampled_out(c) ? TIME_NOT : TIME_DRAWN;
}

/* The entry of a call to time (`timing`: TIME_DRAWN or TIME_FORCED). */
static __always_inline int on_timed_entry(void *ctx, int kp, bool sess, int timing)
{
	struct lsmpmon_cpu *c;
	struct lsmpmon_frame *f;
	__u64 used; /* 64 bits: no zero-extension before the pointer add */

	/* The calibration probe runs before tracing is enabled. */
	if (!enabled && !PATCHED(LSMPMON_PATCH_CALIBRATION))
		return 0;
	if (windowed() && !window_timing && !PATCHED(LSMPMON_PATCH_CALIBRATION))
		return 0;
	c = this_cpu();
	if (!c)
		return 0;
	take_cookie(ctx, c, kp, sess, false);
	if (!call_ok(ctx, c, kp, sess))
		return 0;
	used = c->used;
	if (used >= STACK_SIZE) {
		/* --sample: its exit counts it as untimed (and spoils the calls below). */
		if (!sampling_on())
			stats_of(c, sess)->dropped++;
		return 0;
	}
	/*
	 * Unmarked, then claimed: an interrupt from here on pushes above this
	 * frame, and no exit takes it before it is complete.
	 */
	f = top_frame(c, used + FRAME_SIZE);
	f->key = 0;
	/* Unmarked before the claim: an interrupt's exit may taint it after. */
	if (sampling_on())
		f->forced = 0;
	c->used = used + FRAME_SIZE;
	*(__u32 *)&f->hook = hook_of(c, sess); /* hook, and nested = 0 */
	if (sampling_on() && (timing == TIME_FORCED ||
			      (PATCHED(LSMPMON_PATCH_CALIBRATION) && calibrate_forced)))
		f->forced |= LSMPMON_FRAME_FORCED;
	f->key = call_key(ctx, kp);
	/* Last, so that the probe's own bookkeeping stays out of the sample. */
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int on_entry(void *ctx, int kp, bool sess)
{
	int timing = entry_timing();

	if (timing == TIME_NOT)
		return 0;
	return on_timed_entry(ctx, kp, sess, timing);
}

/* Word `off` / 8 of the fexit context, read where clang cannot merge loads. */
#define CTX_WORD(ctx, off)                                                        \
	({                                                                        \
		__u64 __w;                                                        \
		asm volatile("%0 = *(u64 *)(%1 + " #off ")" : "=r"(__w) : "r"(ctx)); \
		__w;                                                              \
	})

/*
 * An int hook's return value (0 for void hooks). Its place among the fexit
 * context words is a patched constant: the verifier keeps one case.
 */
static __always_inline int return_value(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	__u32 slot = PATCHED(LSMPMON_PATCH_RET_SLOT);
	__u64 ret = 0;

	/* The multi-link program's hooks have no one place for it: the helper. */
	if (sess && MULTI()) {
		if (!(c->multi_hook & LSMPMON_MULTI_RETURNS_INT))
			return 0;
		if (kp)
			return (int)PT_REGS_RC((struct pt_regs *)ctx);
		bpf_get_func_ret(ctx, &ret);
		return (int)ret;
	}

	if (!slot)
		return 0;
	if (kp)
		return (int)PT_REGS_RC_CORE((struct pt_regs *)ctx);
	/* One load per case, at a constant offset: the verifier allows no other. */
	switch (slot) {
	case 1: ret = CTX_WORD(ctx, 0); break;
	case 2: ret = CTX_WORD(ctx, 8); break;
	case 3: ret = CTX_WORD(ctx, 16); break;
	case 4: ret = CTX_WORD(ctx, 24); break;
	case 5: ret = CTX_WORD(ctx, 32); break;
	case 6: ret = CTX_WORD(ctx, 40); break;
	case 7: ret = CTX_WORD(ctx, 48); break;
	default: return 0;
	}
	return (int)ret;
}

#define EPERM 1
#define EACCES 13

/* Denied (-EACCES, -EPERM), another error, or a value: 0 (allowed) costs one test. */
/* Classifies the call's return; returns it. */
static __always_inline int count_return(void *ctx, struct lsmpmon_cpu *c,
					struct lsmpmon_hook_stats *s, int kp, bool sess)
{
	int ret = return_value(ctx, c, kp, sess);

	if (!ret)
		return 0;
	if (ret == -EACCES || ret == -EPERM)
		s->deny++;
	else if (ret < 0)
		s->error++;
	else
		s->value++;
	return ret;
}

/*
 * --by cgroup: the call in its task's cgroup's cell. The cgroup is read at
 * every call: a task can move without being switched out.
 */
static __always_inline void count_in_cgroup(struct lsmpmon_cpu *c, struct lsmpmon_hook_stats *s,
					    bool sess, int ret, bool timed, __u64 delta_ns)
{
	struct lsmpmon_cgroup_key key = { .hook = hook_of(c, sess) };
	struct lsmpmon_cgroup_cell *cell, fresh = {};

	if (c->subject != LSMPMON_SUBJ_IRQ && c->subject != LSMPMON_SUBJ_SOFTIRQ)
		key.cgroup_id = bpf_get_current_cgroup_id();
	cell = bpf_map_lookup_elem(&cgroup_cells, &key);
	if (!cell) {
		bpf_map_update_elem(&cgroup_cells, &key, &fresh, BPF_NOEXIST);
		cell = bpf_map_lookup_elem(&cgroup_cells, &key);
		if (!cell) {
			s->cgroup_lost_calls++;
			return;
		}
	}
	cell->calls++;
	if (timed) {
		cell->timed++;
		cell->sum_ns += delta_ns;
	}
	if (ret == -EACCES || ret == -EPERM)
		cell->deny++;
}

/*
 * The test apart from the work: clang would otherwise set up the work's
 * stack variables before it, on every call.
 */
static __always_inline void by_cgroup(struct lsmpmon_cpu *c, struct lsmpmon_hook_stats *s,
				      bool sess, int ret, bool timed, __u64 delta_ns)
{
	if (PATCHED(LSMPMON_PATCH_BY_CGROUP))
		count_in_cgroup(c, s, sess, ret, timed, delta_ns);
}

/*
 * The per-syscall cell of a pend_slot: syscall slots as they are (any beyond
 * the table in "(none)"), interrupt slots without their mark.
 */
static __always_inline __u32 cell_slot(__u32 pend_slot)
{
	if (pend_slot < LSMPMON_SLOT_IRQ)
		return pend_slot;
	if (pend_slot == (LSMPMON_SLOT_IRQ_MARK | LSMPMON_SLOT_IRQ))
		return LSMPMON_SLOT_IRQ;
	if (pend_slot == (LSMPMON_SLOT_IRQ_MARK | LSMPMON_SLOT_SOFTIRQ))
		return LSMPMON_SLOT_SOFTIRQ;
	return 0;
}

static __always_inline void record(void *ctx, struct lsmpmon_cpu *c, struct lsmpmon_hook_stats *s,
				   __u64 delta_ns, bool outermost, int kp, bool sess)
{
	struct lsmpmon_syscall_cell *cell;
	struct lsmpmon_syscall_time *st;
	__u32 slot = 0, idx, subject;
	__u64 bucket;
	int ret;

	s->sum_ns += delta_ns;
	if (delta_ns < s->min_ns)
		s->min_ns = delta_ns;
	if (delta_ns > s->max_ns)
		s->max_ns = delta_ns;
	if (PATCHED(LSMPMON_PATCH_LEAN)) {
		s->count++;
		return;
	}
	ret = count_return(ctx, c, s, kp, sess);
	by_cgroup(c, s, sess, ret, true, delta_ns);
	bucket = hist_bucket(delta_ns);
	/* Keep clang from folding the bound away: the verifier needs it. */
	asm volatile("" : "+r"(bucket));
	if (bucket >= LSMPMON_HIST_BUCKETS)
		bucket = LSMPMON_HIST_BUCKETS - 1;
	s->hist[bucket]++;

	subject = c->subject;
	/* The usual case first: clang would test the rare ones before it. */
	if (__builtin_expect(subject == LSMPMON_SUBJ_USER, 1))
		slot = syscall_slot(current_task(kp), kp);
	else if (subject == LSMPMON_SUBJ_SOFTIRQ)
		slot = LSMPMON_SLOT_IRQ_MARK | LSMPMON_SLOT_SOFTIRQ;
	else if (subject == LSMPMON_SUBJ_IRQ)
		slot = LSMPMON_SLOT_IRQ_MARK | LSMPMON_SLOT_IRQ;
	if (slot != s->pend_slot) {
		idx = cell_slot(s->pend_slot) + hook_of(c, sess) * LSMPMON_SYSCALL_SLOTS;
		cell = bpf_map_lookup_elem(&syscall_cells, &idx);
		if (cell && s->pend_count) {
			__sync_fetch_and_add(&cell->sum_ns, s->pend_sum_ns);
			__sync_fetch_and_add(&cell->count, s->pend_count);
		}
		s->pend_slot = slot;
		s->pend_sum_ns = 0;
		s->pend_count = 0;
	}
	s->pend_sum_ns += delta_ns;
	s->pend_count++;
	/* A call in an interrupt handler is no syscall's time. */
	if (PATCHED(LSMPMON_PATCH_SYSCALL_TIME) && outermost && !(slot & LSMPMON_SLOT_IRQ_MARK)) {
		if (slot >= LSMPMON_SYSCALL_SLOTS)
			slot = 0;
		st = bpf_map_lookup_elem(&syscall_time, &slot);
		if (st)
			__sync_fetch_and_add(&st->hook_ns, delta_ns);
	}
}

/*
 * --sample: a call that was not timed (not drawn, or drawn and switched out:
 * on_switch keeps no open calls then) is counted, as --count-only counts.
 */
static __always_inline void count_untimed(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	struct lsmpmon_hook_stats *s = stats_of(c, sess);

	s->untimed++;
	if (!PATCHED(LSMPMON_PATCH_LEAN))
		by_cgroup(c, s, sess, count_return(ctx, c, s, kp, sess), false, 0);
}

/*
 * Pops frame `f` (at `used` bytes) of a call that ends at `now_ns` and
 * records the call's time, less the probe pairs that ran inside it; the
 * frame below, if any, is told it contained this pair and those.
 */
static __always_inline void finish(void *ctx, struct lsmpmon_cpu *c, struct lsmpmon_frame *f,
				   __u64 used, __u64 now_ns, int kp, bool sess)
{
	struct lsmpmon_hook_stats *s = stats_of(c, sess);
	__u64 delta_ns = now_ns - f->start_ns, probes_ns;
	__u32 nested = f->nested;
	/* Read before the frame is released (an interrupt may reuse it). */
	__u32 marks = sampling_on() ? f->forced : 0;
	__u64 below = used - FRAME_SIZE;

	c->used = below;
	if ((__s64)delta_ns < 0) {
		s->dropped++; /* no call takes negative time */
		return;
	}
	if (sampling_on())
		delta_ns = delta_ns > sample_skew_ns ? delta_ns - sample_skew_ns : 0;
	if (nested) {
		probes_ns = nested * nested_cost_ns;
		delta_ns = delta_ns > probes_ns ? delta_ns - probes_ns : 0;
		s->nested += nested;
	}
	if (below) {
		asm volatile("%0 &= 0xff" : "+r"(below)); /* as in on_exit() */
		top_frame(c, below)->nested += nested + 1;
		/* The call below contains the untimed call's exit too. */
		if (marks & LSMPMON_FRAME_TAINTED)
			top_frame(c, below)->forced |= LSMPMON_FRAME_TAINTED;
	}
	if (marks) {
		count_untimed(ctx, c, kp, sess);
		return;
	}
	record(ctx, c, s, delta_ns, used == FRAME_SIZE, kp, sess);
}

/*
 * A traced call that ends without a frame: if its task was switched out
 * inside it, it is a cs_count; otherwise its entry was never recorded (it
 * began before tracing was enabled, was filtered out or did not fit) and it
 * is not counted at all.
 */
static __always_inline void finish_unframed(void *ctx, struct lsmpmon_cpu *c, int kp, bool sess)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lsmpmon_hook_stats *s;
	struct lsmpmon_pending *p;
	__u32 top;

	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p)
		return;
	/* One unsigned test: calls == 0 wraps around. */
	top = p->calls - 1;
	if (top >= LSMPMON_MAX_DEPTH || p->hook[top] != hook_of(c, sess))
		return;
	p->calls = top;
	if (!top)
		bpf_map_delete_elem(&pending, &tid);
	s = stats_of(c, sess);
	s->cs_count++;
	if (!PATCHED(LSMPMON_PATCH_LEAN))
		by_cgroup(c, s, sess, count_return(ctx, c, s, kp, sess), false, 0);
}

/*
 * An exit probe's first test under --sample: with no frame open on this CPU,
 * this call is untimed, and is counted before any clock read. `guard`: the
 * count runs with preemption disabled (the fentry/fexit programs' _np copies).
 */
static __always_inline bool exit_untimed(void *ctx, int kp, bool sess, bool guard)
{
	struct lsmpmon_cpu *c;

	if (PATCHED(LSMPMON_PATCH_SAMPLE) <= 1)
		return false;
	/* The calibration probe (always framed) runs the test when told: calibrate_skew. */
	if (PATCHED(LSMPMON_PATCH_CALIBRATION) && !calibrate_skew)
		return false;
	c = this_cpu();
	if (!c)
		return true;
	if (c->used)
		return false;
	if (!enabled)
		return true;
	if (guard)
		preempt_off();
	take_cookie(ctx, c, kp, sess, true);
	if (call_ok(ctx, c, kp, sess))
		count_untimed(ctx, c, kp, sess);
	if (guard)
		preempt_on();
	return true;
}

/* The exit of a call that ended at `now`. */
static __always_inline int on_exit_at(void *ctx, __u64 now, int kp, bool sess)
{
	__u64 key = call_key(ctx, kp);
	struct lsmpmon_frame *f;
	struct lsmpmon_cpu *c;
	__u64 used;

	/* No test of `enabled` here: calls that began while enabled are counted. */
	c = this_cpu();
	if (!c)
		return 0;
	take_cookie(ctx, c, kp, sess, true);
	used = c->used;
	/*
	 * Our frame is on top, unless calls above it lost their exit (the kernel
	 * skips a probe that would recurse): those frames are discarded.
	 */
#pragma unroll
	for (int i = 0; i < LSMPMON_EXIT_SEARCH; i++) {
		if (used < FRAME_SIZE)
			break;
		/* A bound the verifier sees: clang would fold a cast. */
		asm volatile("%0 &= 0xff" : "+r"(used));
		f = top_frame(c, used);
		/*
		 * fentry: two calls in progress on a CPU never share a context, so
		 * the key alone names the call; kprobes also need the hook.
		 */
		if (f->key == key && (!kp || f->hook == hook_of(c, sess))) {
			finish(ctx, c, f, used, now, kp, sess);
			return 0;
		}
		used -= FRAME_SIZE;
	}
	if (PATCHED(LSMPMON_PATCH_CALIBRATION))
		return 0;
	if (PATCHED(LSMPMON_PATCH_SAMPLE) > 1) {
		/* A filtered-out call is as out as when every call is timed. */
		if (!enabled || !call_ok(ctx, c, kp, sess))
			return 0;
		/* This traced exit ran inside the call on top, whose time it spoils. */
		used = c->used;
		if (used >= FRAME_SIZE) {
			asm volatile("%0 &= 0xff" : "+r"(used));
			top_frame(c, used)->forced |= LSMPMON_FRAME_TAINTED;
		}
		count_untimed(ctx, c, kp, sess);
		return 0;
	}
	/* Only traced tasks have open calls (and lsmpmon's own are not kept). */
	if (!traced_task(c, kp))
		return 0;
	finish_unframed(ctx, c, kp, sess);
	return 0;
}

static __always_inline int on_exit(void *ctx, int kp, bool sess)
{
	if (exit_untimed(ctx, kp, sess, false))
		return 0;
	return on_exit_at(ctx, bpf_ktime_get_ns(), kp, sess);
}

