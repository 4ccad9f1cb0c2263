#!/bin/sh
# Loads the TOMOYO policy the way a real system does: the five files go to
# /etc/tomoyo/, and the kernel runs /sbin/tomoyo-init (which copies them into
# /sys/kernel/security/tomoyo/) the first time a process executes the path
# /sbin/init. The guest's init is /init, and its /sbin/init is busybox's init
# applet, so a do-nothing /sbin/init is put there and run once to pull the trigger.
# Run by the lab as root in /lab/config.
set -eu

tomoyo=/sys/kernel/security/tomoyo
test -d "$tomoyo" || {
    echo "setup: TOMOYO is not active ($tomoyo missing)" >&2
    exit 1
}
test -x /sbin/tomoyo-init || {
    echo "setup: /sbin/tomoyo-init is missing (the kernel's policy loader)" >&2
    exit 1
}
if grep -q 'lsmpmon-workload' "$tomoyo/domain_policy"; then
    echo "setup: a TOMOYO policy is already loaded; the loader runs only once per boot" >&2
    exit 1
fi

mkdir -p /etc/tomoyo
for f in profile.conf manager.conf exception_policy.conf domain_policy.conf stat.conf; do
    cp "$f" /etc/tomoyo/"$f"
done

# The trigger: a harmless /sbin/init, executed once (the loader runs, synchronously,
# before it). Whatever was at /sbin/init is put back afterwards.
saved=
if [ -e /sbin/init ] || [ -L /sbin/init ]; then
    saved=/sbin/init.lsmpmon-lab
    mv /sbin/init "$saved"
fi
printf '#!/bin/sh\nexit 0\n' > /sbin/init
chmod 0755 /sbin/init
/sbin/init
rm -f /sbin/init
[ -n "$saved" ] && mv "$saved" /sbin/init

# Proof that the policy is loaded: the workload's domain exists with the enforcing
# profile, and profile 3 is in enforcing mode.
awk '/^<kernel> \/usr\/libexec\/lsmpmon-workload$/ { d = 1; next }
     /^</ { d = 0 }
     d && /^use_profile 3$/ { ok = 1 }
     END { exit !ok }' "$tomoyo/domain_policy" || {
    echo "setup: the workload's domain is not loaded with profile 3:" >&2
    cat "$tomoyo/domain_policy" >&2
    exit 1
}
grep -q '^3-CONFIG={ mode=enforcing' "$tomoyo/profile" || {
    echo "setup: profile 3 is not enforcing:" >&2
    cat "$tomoyo/profile" >&2
    exit 1
}
echo "setup: TOMOYO policy loaded by /sbin/tomoyo-init; domain <kernel> /usr/libexec/lsmpmon-workload enforcing; $(grep -a 'Memory used by policy' "$tomoyo/stat" | tr -s ' ')"
