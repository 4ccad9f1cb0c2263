#!/bin/sh
# Smack: objects get labels (security.SMACK64), the rules go to smackfs one per
# write, and onlycap makes root's Smack privileges depend on its label, so the
# workload (root, but labelled lab_workload) is checked like anyone else.
# Run by the lab as root in /lab/config.
set -eu

smackfs=/sys/fs/smackfs
grep -q smack /sys/kernel/security/lsm || {
    echo "setup: Smack is not active (/sys/kernel/security/lsm: $(cat /sys/kernel/security/lsm))" >&2
    exit 1
}
mkdir -p "$smackfs"
grep -q " $smackfs " /proc/mounts || mount -t smackfs smackfs "$smackfs"

label() { setfattr -n security.SMACK64 -v "$1" "$2"; }
# The public file may be read (rule below); the secret has a label no rule names.
label lab_public "$LAB_PUBLIC"
label lab_secret "$LAB_SECRET"
# The work directory carries the workload's own label: it creates, writes and
# removes there (what it creates takes its label).
label lab_workload "$LAB_WORK_DIR"
# Character devices everyone may read and write (the star label).
for dev in /dev/null /dev/zero /dev/full /dev/random /dev/urandom; do
    label '*' "$dev"
done

# Rules, one per write: subject object access. Everything else labelled "_"
# (programs, libraries, /etc, /srv/lsmpmon-lab) is readable and executable
# by anyone: Smack's floor rule; writing it needs a rule, and there is none.
while read -r subject object access; do
    echo "$subject $object $access" > "$smackfs/load2"
done < rules

# Loopback is an unlabelled host: the workload's TCP and UDP to itself carry no
# CIPSO label and need no rule.
echo "127.0.0.1/8 @" > "$smackfs/netlabel"
# Log denials (1). Audit prints through printk's rate limit (10 in 5 s): the
# netlabel records above use it up, and the proof's denials would be dropped.
echo 1 > "$smackfs/logging"
echo 0 > /proc/sys/kernel/printk_ratelimit
# From now on only tasks labelled "_" keep CAP_MAC_*.
echo _ > "$smackfs/onlycap"
echo "setup: $(wc -l < rules) rules, onlycap $(cat "$smackfs/onlycap")"
