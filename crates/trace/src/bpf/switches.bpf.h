/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Context switches and interrupts: what every method needs to keep its
 * frames honest.
 * Included once, by lsmpmon.bpf.c.
 */
/*
 * The task leaving this CPU takes its open calls with it: their hooks are
 * noted against its thread id (after any it left open before) and the CPU's
 * stack is emptied for the next task.
 */
static __always_inline void note_pending(struct lsmpmon_cpu *c, __u32 used)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lsmpmon_pending fresh = {}, *p;
	__u32 n;

	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p) {
		bpf_map_update_elem(&pending, &tid, &fresh, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&pending, &tid);
		if (!p)
			return;
	}
	n = p->calls;
	for (__u32 i = 0; i < LSMPMON_MAX_DEPTH; i++) {
		if ((i + 1) * FRAME_SIZE > used)
			break;
		/* Tested after the barrier, in the register that indexes. */
		asm volatile("" : "+r"(n));
		if (n >= LSMPMON_MAX_DEPTH)
			break;
		p->hook[n] = c->frames[i].hook;
		n++;
	}
	p->calls = n;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch)
{
	struct lsmpmon_cpu *c = this_cpu();
	__u32 used;

	if (!c)
		return 0;
	c->subject = LSMPMON_SUBJ_UNKNOWN;
	c->session_depth = 0;
	used = c->used;
	if (used) {
		c->used = 0;
		if (!sampling)
			note_pending(c, used);
	}
	return 0;
}

/*
 * Hooks called from an interrupt handler belong to no task: while one runs,
 * the CPU's subject says so (the interrupted task's verdict is put back
 * after), and with a task filter they are out, as no task passes it —
 * unless --with-interrupts gives them to the task they interrupted when it
 * passes (on one CPU a loopback packet's receive runs in its sender's
 * softirq): --pid's verdict here, the others per call on `current`, which
 * is still that task. Hardirq handlers do not nest; one can interrupt a
 * softirq.
 */
#define TASK_FILTERS_ON (filter_tgid || filter_uid_on || filter_cgroup_id || filter_comm_on)

static __always_inline __u32 interrupt_subject(__u32 subject, __u32 interrupted)
{
	if (!TASK_FILTERS_ON)
		return subject;
	if (!with_interrupts)
		return LSMPMON_SUBJ_OUT;
	/* KP_OLD's reads: bpf_get_current_task_btf is 5.11+, this runs on 5.10 too. */
	if (interrupted == LSMPMON_SUBJ_UNKNOWN)
		interrupted = classify(KP_OLD);
	return interrupted < LSMPMON_SUBJ_SELF ? subject : LSMPMON_SUBJ_OUT;
}

/* An interrupt handler begins: the interrupted subject is kept for its end. */
static __always_inline void interrupt_entry(__u32 subject, bool softirq)
{
	struct lsmpmon_cpu *c = this_cpu();

	if (!c)
		return;
	if (softirq)
		c->subject_before_softirq = c->subject;
	else
		c->subject_before_irq = c->subject;
	c->subject = interrupt_subject(subject, softirq ? c->subject_before_softirq : c->subject_before_irq);
}

/* Put back, or UNKNOWN (worked out again) if the entry came before attaching. */
static __always_inline void interrupt_exit(bool softirq)
{
	struct lsmpmon_cpu *c = this_cpu();

	if (!c)
		return;
	if (softirq) {
		c->subject = c->subject_before_softirq;
		c->subject_before_softirq = LSMPMON_SUBJ_UNKNOWN;
	} else {
		c->subject = c->subject_before_irq;
		c->subject_before_irq = LSMPMON_SUBJ_UNKNOWN;
	}
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry)
{
	interrupt_entry(LSMPMON_SUBJ_SOFTIRQ, true);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit)
{
	interrupt_exit(true);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_entry)
{
	interrupt_entry(LSMPMON_SUBJ_IRQ, false);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_exit)
{
	interrupt_exit(false);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lsmpmon_cpu *c = this_cpu();
	struct task_ctx *tc;

	if (!enabled || !c || !traced_task(c, false))
		return 0;
	if (filters_on && !task_filters_ok())
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
	slot = syscall_slot(task, false);
	if (slot >= LSMPMON_SYSCALL_SLOTS)
		slot = 0;
	st = bpf_map_lookup_elem(&syscall_time, &slot);
	if (st && enabled) {
		__sync_fetch_and_add(&st->sum_ns, bpf_ktime_get_ns() - tc->sys_start_ns);
		__sync_fetch_and_add(&st->count, 1);
	}
	tc->sys_start_ns = 0;
	return 0;
}
