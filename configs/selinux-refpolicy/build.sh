#!/bin/sh
# Runs on the host (spec.toml host_build) in a private copy of this directory:
# builds Debian's reference policy (selinux-policy-default) plus lsmpmon_lab
# offline, into a private store, and keeps what the guest needs.
set -eu
name=lsmpmon-refpolicy
pkg=/usr/share/selinux/default

# The module, compiled with the reference policy's interfaces (selinux-policy-dev).
make -s -f /usr/share/selinux/devel/Makefile lsmpmon_lab.pp

# The same modules, priority and disabled set as Debian's postinst installs
# (selinux-policy-default 2:2.20221101-9), then ours; -p ROOT: a private store
# and policy tree, -n: do not load anything into the host's kernel.
args=""
for m in $(cat $pkg/.modules); do args="$args -i $pkg/$m.pp.bz2"; done
for m in amtu bugzilla cobbler condor cyphesis git ksmtuned likewise livecd nessus \
	numad oddjob openca soundserver thunderbird updfstab usernetctl; do
	args="$args -d $m"
done
mkdir -p root/var/lib/selinux/$name root/etc/selinux
# shellcheck disable=SC2086
semodule -p "$PWD/root" -s $name -n -X 100 $args -X 400 -i lsmpmon_lab.pp

cp root/etc/selinux/$name/policy/policy.33 .
cp root/etc/selinux/$name/contexts/files/file_contexts .
cp /etc/selinux/default/contexts/files/file_contexts.subs_dist .
rm -rf root tmp lsmpmon_lab.pp
