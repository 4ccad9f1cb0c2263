#!/bin/sh
# selinux-mini's setup (policy loaded by load_policy -i, enforcing), then the
# sweep's files: one file per generated type in $LAB_BENCH_DIR/avc-types,
# labelled at creation by the policy's named type transitions; then the AVC
# threshold (the file avc-threshold, when this configuration has one) and a
# flushed AVC, so that the op starts on a cold cache.
# Runs in the guest as root (kernel_t), in /lab/config.
set -eu

mkdir -p /etc/selinux/lsmpmon-avc/policy
cp policy.33 /etc/selinux/lsmpmon-avc/policy/policy.33
printf 'SELINUX=enforcing\nSELINUXTYPE=lsmpmon-avc\n' > /etc/selinux/config
echo 0 > /proc/sys/kernel/printk_ratelimit
load_policy -i

chcon system_u:object_r:lab_workload_exec_t "$LAB_WORKLOAD"
chcon system_u:object_r:lab_secret_t "$LAB_SECRET"
chcon system_u:object_r:lab_null_device_t /dev/null /dev/zero

# The shell's own redirection creates each file: no process per file.
types=$(cat avc-types)
dir="$LAB_BENCH_DIR/avc-types"
mkdir -p "$dir"
i=0
while [ "$i" -lt "$types" ]; do
    : > "$dir/avc-$((100000 + i))"
    i=$((i + 1))
done
echo "selinux-avc: $types files in $dir"

avc=/sys/fs/selinux/avc
if [ -f avc-threshold ]; then
    cat avc-threshold > "$avc/cache_threshold"
fi
# Leaving and re-entering enforcing mode flushes the AVC (avc_ss_reset):
# creating the files cached kernel_t's decisions for every type.
echo 0 > /sys/fs/selinux/enforce
echo 1 > /sys/fs/selinux/enforce
echo "selinux-avc: policy $(cat /sys/fs/selinux/policyvers) loaded, enforce=$(cat /sys/fs/selinux/enforce), cache_threshold $(cat $avc/cache_threshold)"
