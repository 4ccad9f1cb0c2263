/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calibration driver.
 * Included once, by lsmpmon.bpf.c.
 */
/*
 * Never attached: user space runs it with BPF_PROG_TEST_RUN, which makes the
 * kernel call bpf_fentry_test1() and friends, the empty functions lsmpmon
 * calibrates its probes on (trace/calibrate.rs). It loads on 5.10 too.
 */
SEC("fentry/bpf_fentry_test1")
int BPF_PROG(test_run_driver)
{
	return 0;
}

