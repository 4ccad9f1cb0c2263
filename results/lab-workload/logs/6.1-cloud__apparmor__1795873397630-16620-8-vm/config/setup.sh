#!/bin/sh
# Loads the lsmpmon-workload profile into the running kernel with the real
# apparmor_parser, compiled against this kernel's own features
# (/sys/kernel/security/apparmor/features; parser.conf pins nothing).
# Run by the lab as root in /lab/config.
set -eu

test -d /sys/kernel/security/apparmor || {
    echo "setup: AppArmor is not active (/sys/kernel/security/apparmor missing)" >&2
    exit 1
}
parser() { /sbin/apparmor_parser --config-file=parser.conf --skip-cache "$@"; }

# The binary policy, kept so its size can be reported as the policy size ...
parser --skip-kernel-load --stdout lsmpmon-workload > lsmpmon-workload.bin
# ... and the profile loaded (or replaced) in the kernel.
parser --replace lsmpmon-workload

# Denials reach the kernel log through printk (there is no auditd in the guest), which
# rate-limits: lift the limit so that no denial record the proof looks for is dropped.
echo 0 > /proc/sys/kernel/printk_ratelimit

# Proof that it is loaded and enforcing.
grep -qx 'lsmpmon-workload (enforce)' /sys/kernel/security/apparmor/profiles || {
    echo "setup: profile lsmpmon-workload is not loaded in enforce mode:" >&2
    cat /sys/kernel/security/apparmor/profiles >&2
    exit 1
}
echo "setup: AppArmor profile lsmpmon-workload loaded (enforce), $(wc -c < lsmpmon-workload.bin) bytes compiled"
