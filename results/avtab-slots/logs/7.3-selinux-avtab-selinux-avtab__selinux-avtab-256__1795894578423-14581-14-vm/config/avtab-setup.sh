#!/bin/sh
# selinux-mini's setup (setup.sh, taken from that configuration: the policy
# built by host_build loaded with load_policy, the same labels), then what
# the compute_av op reads: the generated types and allowed pairs.
# Runs in the guest as root (kernel_t), in /lab/config.
set -eu
sh setup.sh
mkdir -p "$LAB_BENCH_DIR"
cp avtab-policy "$LAB_BENCH_DIR/avtab-policy"
echo "selinux-avtab: $(cat avtab-policy | cut -d' ' -f1) types, $(cat avtab-policy | cut -d' ' -f2) allowed pairs; $(grep -o 'lsmpmon_avtab_slots=[0-9]*' /proc/cmdline || echo 'the kernel'"'"'s own slot count')"
