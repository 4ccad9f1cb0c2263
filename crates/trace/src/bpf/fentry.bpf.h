/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fentry/fexit family: the pair per hook, its variants without preemption
 * control and the counting-only programs (also the multi-link templates).
 * Included once, by lsmpmon.bpf.c.
 */
SEC("fentry/security_file_permission")
int BPF_PROG(hook_entry)
{
	return on_entry(ctx, false, false);
}

SEC("fexit/security_file_permission")
int BPF_PROG(hook_exit)
{
	return on_exit(ctx, false, false);
}

/*
 * The same for a kernel that can preempt a task anywhere (preempt=full,
 * lazy): each probe runs with preemption disabled. Programs of their own, so
 * that the ones above stay as they were on the kernels that need no guard.
 */
static __always_inline int on_entry_np(void *ctx, bool sess)
{
	int timing = entry_timing();

	if (timing == TIME_NOT)
		return 0;
	preempt_off();
	on_timed_entry(ctx, false, sess, timing);
	preempt_on();
	return 0;
}

SEC("fentry/security_file_permission")
int BPF_PROG(hook_entry_np)
{
	return on_entry_np(ctx, false);
}

SEC("fexit/security_file_permission")
int BPF_PROG(hook_exit_np)
{
	/*
	 * The time first: the call ended here. A task preempted before the
	 * next line has its frame taken away by on_switch: a cs_count.
	 */
	__u64 now;

	if (exit_untimed(ctx, false, false, true))
		return 0;
	now = bpf_ktime_get_ns();
	preempt_off();
	on_exit_at(ctx, now, false, false);
	preempt_on();
	return 0;
}

/*
 * --timing-windows on a kernel with BPF_TRACE_FENTRY_MULTI: every hook's
 * entry, by one multi-link made for each window; the link's cookie names the
 * hook. The exits are the hooks' own (hook_exit, hook_exit_np), whose frames
 * it opens: the same trampoline, so the same call key.
 */
SEC("fentry/security_file_permission")
int BPF_PROG(hook_window_entry)
{
	/* preempt_off() is a no-op where the copy is not patched for it. */
	return on_entry_np(ctx, true);
}

/*
 * `trace --empty-probes`, a benchmark of the attach method itself: loaded as
 * both the fentry and the fexit program of every hook, it records nothing.
 */
SEC("fentry/security_file_permission")
int BPF_PROG(hook_empty)
{
	(void)HOOK_ID();
	return 0;
}

/*
 * `trace --count-only`: each call of the hook and what it returned, no
 * timing: one fexit program per call instead of a pair (or, on a kernel with
 * BPF_TRACE_FEXIT_MULTI, one program for every hook whose link's cookie
 * names the hook). No frame, no clock, no context-switch or syscall work.
 */
SEC("fexit/security_file_permission")
int BPF_PROG(hook_count)
{
	struct lsmpmon_hook_stats *s;
	struct lsmpmon_cpu *c;

	if (!enabled)
		return 0;
	/* One program for every hook has one recursion guard per CPU (see hook_session). */
	preempt_off();
	c = this_cpu();
	if (!c)
		goto out;
	if (MULTI())
		c->multi_hook = bpf_get_attach_cookie(ctx);
	if (!call_ok(ctx, c, false, true))
		goto out;
	s = stats_of(c, true);
	s->count++;
	by_cgroup(c, s, true, count_return(ctx, c, s, false, true), false, 0);
out:
	preempt_on();
	return 0;
}

