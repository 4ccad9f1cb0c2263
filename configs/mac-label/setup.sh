#!/bin/sh
# Loads the reference MAC with the label method (the three mac-* setups differ
# only in --method): labels the policy's files (every method, so the guests
# stay alike), loads and pins the programs with lsmpmon itself, turns tracing
# on for the denial records. Run by the lab as root in /lab/config.
set -eu
method=label
mounted() { awk -v d="$1" -v t="$2" '$2 == d && $3 == t { m = 1 } END { exit !m }' /proc/mounts; }
mounted /sys/fs/bpf bpf || mount -t bpf bpf /sys/fs/bpf
mounted /sys/kernel/tracing tracefs || mount -t tracefs tracefs /sys/kernel/tracing
policy=policy.mac
# Scaling runs add unmatched rules (see README): the lookup is what grows.
if [ -s pad_rules ]; then
    n=$(cat pad_rules)
    mkdir -p /srv/lsmpmon-mac-pad
    cp policy.mac /tmp/policy-padded.mac
    i=0
    while [ "$i" -lt "$n" ]; do
        : > "/srv/lsmpmon-mac-pad/f$i"
        echo "deny open /srv/lsmpmon-mac-pad/f$i pad_$i" >> /tmp/policy-padded.mac
        i=$((i + 1))
    done
    policy=/tmp/policy-padded.mac
fi
/bin/lsmpmon mac label --policy "$policy"
/bin/lsmpmon mac load --method "$method" --policy "$policy" --subject lsmpmon-workload
echo 1 > /sys/kernel/tracing/tracing_on
