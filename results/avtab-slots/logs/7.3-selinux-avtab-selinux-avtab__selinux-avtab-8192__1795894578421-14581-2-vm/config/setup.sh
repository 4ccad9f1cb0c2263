#!/bin/sh
# Loads the policy built by host_build (policy.33) with policycoreutils'
# load_policy, labels what the matrix names, and checks SELinux is enforcing.
# Runs in the guest as root (kernel_t), in /lab/config.
set -eu

# load_policy -i reads the policy type from /etc/selinux/config and the policy from
# /etc/selinux/TYPE/policy/policy.VERSION; it mounts selinuxfs on /sys/fs/selinux.
mkdir -p /etc/selinux/lsmpmon-mini/policy
cp policy.33 /etc/selinux/lsmpmon-mini/policy/policy.33
printf 'SELINUX=enforcing\nSELINUXTYPE=lsmpmon-mini\n' > /etc/selinux/config

# Every denial is an audit record printed to the kernel log (no auditd here):
# turn printk's rate limit off so none is dropped.
echo 0 > /proc/sys/kernel/printk_ratelimit

# The load alone is timed (lab-mark lines: a stage of the cell's guest report).
echo 'lab-mark: policy-load begin'
load_policy -i
echo 'lab-mark: policy-load end'

# Files made before the policy existed carry their file system's label
# (lab_system_t on the root file system, lab_device_t in /dev); relabel the
# workload's program (its entrypoint) and the fork ops' helper it executes,
# the secret and the two data devices.
chcon -v system_u:object_r:lab_workload_exec_t "$LAB_WORKLOAD" /usr/libexec/lsmpmon-fork
chcon -v system_u:object_r:lab_secret_t "$LAB_SECRET"
chcon -v system_u:object_r:lab_null_device_t /dev/null /dev/zero

[ "$(cat /sys/fs/selinux/enforce)" = 1 ] || echo 1 > /sys/fs/selinux/enforce
echo "selinux-mini: policy $(cat /sys/fs/selinux/policyvers) loaded, enforce=$(cat /sys/fs/selinux/enforce)"
