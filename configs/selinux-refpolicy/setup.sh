#!/bin/sh
# Installs the policy built by build.sh as SELinux type lsmpmon-refpolicy, loads
# it with load_policy, labels the file systems from its file_contexts with
# setfiles (as a refpolicy system is labelled) and checks SELinux enforces.
# Runs in the guest as root (kernel_t), in /lab/config.
set -eu
name=lsmpmon-refpolicy

mkdir -p /etc/selinux/$name/policy /etc/selinux/$name/contexts/files
cp policy.33 /etc/selinux/$name/policy/
cp file_contexts file_contexts.subs_dist /etc/selinux/$name/contexts/files/
printf 'SELINUX=enforcing\nSELINUXTYPE=%s\n' $name > /etc/selinux/config

# Every denial is an audit record printed to the kernel log (no auditd here):
# turn printk's rate limit off so none is dropped.
echo 0 > /proc/sys/kernel/printk_ratelimit

# The load alone is timed (lab-mark lines: a stage of the cell's guest report).
echo 'lab-mark: policy-load begin'
load_policy -i
echo 'lab-mark: policy-load end'

# Files made before the policy existed carry their file system's label (root_t
# on the initramfs, device_t or a transition's type in /dev, tmpfs_t in /tmp);
# give every file its file_contexts label: /bin/busybox bin_t, /etc etc_t,
# /dev/null null_device_t, /tmp tmp_t, and from lsmpmon_lab.fc the workload, the
# secret, the work directory and /lab. setfiles does not cross into other
# file systems: name each.
setfiles /etc/selinux/$name/contexts/files/file_contexts / /dev /tmp /run

[ "$(cat /sys/fs/selinux/enforce)" = 1 ] || echo 1 > /sys/fs/selinux/enforce
echo "selinux-refpolicy: policy $(cat /sys/fs/selinux/policyvers) loaded, enforce=$(cat /sys/fs/selinux/enforce)"
