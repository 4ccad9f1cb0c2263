/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session family (BPF_TRACE_FSESSION and its multi-link).
 * Included once, by lsmpmon.bpf.c.
 */
/*
 * The session probe (BPF_TRACE_FSESSION, 7.x): one program the trampoline
 * runs at the hook's entry and again at its exit, with a per-call cookie on
 * its stack (enum lsmpmon_cookie) instead of a frame on the CPU's stack.
 * Same statistics as the fentry/fexit pair: a call whose task was switched
 * out (its switch count changed) is a cs_count; session calls that finished
 * on this CPU meanwhile were nested in it (their cost is taken out); calls
 * that began before tracing was enabled, or were filtered out, have a 0
 * cookie and are not counted. Loaded as an fentry template, where only the
 * first test runs (LSMPMON_PATCH_SESSION is 0); user space loads the copies
 * as sessions, with the kfunc placeholders made calls.
 */
static __always_inline __u64 task_switches(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return t->nvcsw + t->nivcsw;
}

static __always_inline void session_entry(void *ctx, __u64 *cookie)
{
	struct lsmpmon_cpu *c;
	__u64 v;

	*cookie = 0;
	if (!enabled && !PATCHED(LSMPMON_PATCH_CALIBRATION))
		return;
	c = this_cpu();
	if (!c)
		return;
	/* At entry only the --object filter needs to know the hook. */
	if (MULTI() && filter_object_on)
		c->multi_hook = bpf_get_attach_cookie(ctx);
	if (!call_ok(ctx, c, false, true))
		return;
	/* As entry_timing(): a call inside a timed one is timed, for that one's sake. */
	if (drawing() && !c->session_depth && sampled_out(c)) {
		*cookie = LSMPMON_COOKIE_UNTIMED;
		return;
	}
	v = 1;
	if (drawing() && c->session_depth)
		v |= LSMPMON_COOKIE_FORCED;
	c->session_depth++;
	v |= (__u64)(c->sessions_done & LSMPMON_COOKIE_DONE_MASK) << LSMPMON_COOKIE_DONE_SHIFT;
	v |= (task_switches() & LSMPMON_COOKIE_GEN_MASK) << LSMPMON_COOKIE_GEN_SHIFT;
	/* Last, so that the probe's own bookkeeping stays out of the sample. */
	*cookie = v | bpf_ktime_get_ns() << LSMPMON_COOKIE_START_SHIFT;
}

/* --sample: the exit of a call its entry left untimed. */
static __always_inline void session_untimed(void *ctx)
{
	struct lsmpmon_cpu *c = this_cpu();

	if (!c)
		return;
	if (MULTI())
		c->multi_hook = bpf_get_attach_cookie(ctx);
	count_untimed(ctx, c, false, true);
}

static __always_inline void session_exit(void *ctx, __u64 cookie, __u64 now)
{
	struct lsmpmon_hook_stats *s;
	struct lsmpmon_cpu *c;
	__u64 delta_ns, probes_ns;
	__u32 nested;
	__u8 depth;

	if (!cookie)
		return;
	c = this_cpu();
	if (!c)
		return;
	if (MULTI())
		c->multi_hook = bpf_get_attach_cookie(ctx);
	s = stats_of(c, true);
	if (((task_switches() ^ (cookie >> LSMPMON_COOKIE_GEN_SHIFT)) & LSMPMON_COOKIE_GEN_MASK)) {
		/* Switched out inside (on_switch has reset the CPU's depth). */
		s->cs_count++;
		if (!PATCHED(LSMPMON_PATCH_LEAN))
			by_cgroup(c, s, true, count_return(ctx, c, s, false, true), false, 0);
		return;
	}
	depth = c->session_depth;
	if (depth)
		c->session_depth = depth - 1;
	nested = (c->sessions_done - (cookie >> LSMPMON_COOKIE_DONE_SHIFT)) &
		 LSMPMON_COOKIE_DONE_MASK;
	c->sessions_done++;
	delta_ns = ((now << LSMPMON_COOKIE_START_SHIFT) - (cookie & ~0xffffffffULL)) >>
		   LSMPMON_COOKIE_START_SHIFT;
	if (nested) {
		probes_ns = nested * nested_cost_ns;
		delta_ns = delta_ns > probes_ns ? delta_ns - probes_ns : 0;
		s->nested += nested;
	}
	if (sampling_on() && (cookie & LSMPMON_COOKIE_FORCED)) {
		count_untimed(ctx, c, false, true);
		return;
	}
	record(ctx, c, s, delta_ns, depth <= 1, false, true);
}

SEC("fentry/security_file_permission")
int BPF_PROG(hook_session)
{
	__u64 *cookie, now;

	if (!PATCHED(LSMPMON_PATCH_SESSION))
		return 0;
	cookie = kf_session_cookie(ctx);
	if (!cookie)
		return 0;
	/* --empty-probes: what any session probe needs, and nothing else. */
	if (PATCHED(LSMPMON_PATCH_EMPTY)) {
		*cookie = kf_session_is_return(ctx) ? 2 : 1;
		return 0;
	}
	if (!kf_session_is_return(ctx)) {
		/*
		 * One program for every hook has one recursion guard per CPU: a
		 * task preempted in here would make the kernel skip every hook's
		 * calls on this CPU until it ran again.
		 */
		if (MULTI())
			preempt_off();
		session_entry(ctx, cookie);
		if (MULTI())
			preempt_on();
		return 0;
	}
	if (*cookie == LSMPMON_COOKIE_UNTIMED) {
		/* Before the clock: an untimed call is only counted. */
		preempt_off();
		session_untimed(ctx);
		preempt_on();
		return 0;
	}
	now = bpf_ktime_get_ns();
	preempt_off();
	session_exit(ctx, *cookie, now);
	preempt_on();
	return 0;
}

