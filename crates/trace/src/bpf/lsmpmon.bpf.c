// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon's probes: each attach method's programs (fentry.bpf.h,
 * session.bpf.h, kprobe.bpf.h), copied once per LSM hook with per-hook
 * constants patched in (see PATCHED() in core.bpf.h). Each traced call
 * is timed on a per-CPU stack of frames (nested hooks and interrupts cannot
 * mix samples up), checked for a context switch (LSMPMON's cs_count) and
 * attributed to the syscall the task is in.
 *
 * Context switches are seen by a sched_switch program: it empties the CPU's
 * stack of frames and notes, per task, how many traced calls it left open;
 * their exits are then counted in cs_count, and an exit with neither a frame
 * nor an open call (its entry came before tracing was enabled) in nothing.
 * No task field is read on the hot path, and the task's verdict (lsmpmon
 * itself, filtered out, kernel thread) is worked out once per switch. Every
 * instruction counts: in the guest's virtual time one is 1 ns.
 *
 * One object, one file per method family: the families share the maps, the
 * per-CPU stack of frames and the constants user space patches, so they are
 * compiled together and user space loads only the chosen family's programs.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include "vmlinux_min.h"
#include "intf.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#include "core.bpf.h"
#include "fentry.bpf.h"
#include "session.bpf.h"
#include "calibrate.bpf.h"
#include "kprobe.bpf.h"
#include "switches.bpf.h"
