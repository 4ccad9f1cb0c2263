/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kprobe family: kprobe/kretprobe, kprobe multi and kprobe session.
 * Included once, by lsmpmon.bpf.c.
 */
/* The fallback for kernels without bpf_get_func_ret() (< 5.17): same logic. */
SEC("kprobe/security_file_permission")
int hook_kentry(struct pt_regs *ctx)
{
	return on_entry(ctx, KP_OLD, false);
}

SEC("kretprobe/security_file_permission")
int hook_kexit(struct pt_regs *ctx)
{
	return on_exit(ctx, KP_OLD, false);
}

/*
 * kprobe.multi (5.18+, CONFIG_FPROBE): one entry and one return program for
 * every hook, each attached by one link (BPF_TRACE_KPROBE_MULTI, the return
 * one with BPF_F_KPROBE_MULTI_RETURN) whose per-function cookie names the
 * hook (enum lsmpmon_multi_cookie). The kprobe logic above, with the hook
 * taken from the cookie instead of a patched constant.
 */
SEC("kprobe.multi/security_file_permission")
int hook_kmentry(struct pt_regs *ctx)
{
	return on_entry(ctx, KP_BTF, true);
}

SEC("kretprobe.multi/security_file_permission")
int hook_kmexit(struct pt_regs *ctx)
{
	return on_exit(ctx, KP_BTF, true);
}

/*
 * The kprobe session (BPF_TRACE_KPROBE_SESSION, 6.10+): the same two halves
 * in one program and one link, which the kernel runs at the entry and again
 * at the return (one fprobe, one ftrace_ops per function instead of two).
 * Loaded as a kprobe.multi template, where only the first test runs
 * (LSMPMON_PATCH_SESSION is 0); user space makes the kfunc placeholder a call.
 */
SEC("kprobe.multi/security_file_permission")
int hook_ksession(struct pt_regs *ctx)
{
	if (!PATCHED(LSMPMON_PATCH_SESSION))
		return 0;
	/* 0 at entry: the kernel runs the program at the return too. */
	if (!kf_session_is_return(ctx))
		return on_entry(ctx, KP_SESSION, true);
	return on_exit(ctx, KP_SESSION, true);
}

/* `trace --empty-probes` with kprobe.multi: both links run it; it records nothing. */
SEC("kprobe.multi/security_file_permission")
int hook_kmempty(struct pt_regs *ctx)
{
	(void)HOOK_ID();
	return 0;
}

