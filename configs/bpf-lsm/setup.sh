#!/bin/sh
# Loads the BPF LSM policy into the running kernel: bpftool loads policy.bpf.o
# (libbpf relocates it against this kernel's BTF) and pins its programs and
# maps; lsmpmon-bpf-attach attaches each program to its LSM hook and pins the
# link (Debian 12's bpftool cannot attach LSM programs); bpftool fills the map of
# protected objects with the inode numbers of this guest's files.
# Run by the lab as root in /lab/config.
set -eu

bpftool=/usr/sbin/bpftool
bpffs=/sys/fs/bpf
progs=$bpffs/lsmpmon-lab/progs
maps=$bpffs/lsmpmon-lab/maps
links=$bpffs/lsmpmon-lab/links
tracing=/sys/kernel/tracing

grep -qw bpf /sys/kernel/security/lsm || {
    echo "setup: the BPF LSM is not active: /sys/kernel/security/lsm is $(cat /sys/kernel/security/lsm)" >&2
    exit 1
}
mounted() { awk -v d="$1" -v t="$2" '$2 == d && $3 == t { m = 1 } END { exit !m }' /proc/mounts; }
mounted "$bpffs" bpf || mount -t bpf bpf "$bpffs"
mounted "$tracing" tracefs || mount -t tracefs tracefs "$tracing"
if [ -e "$bpffs/lsmpmon-lab" ]; then
    echo "setup: $bpffs/lsmpmon-lab already exists: a policy is already loaded" >&2
    exit 1
fi
mkdir -p "$bpffs/lsmpmon-lab" "$links"

# Load: every program pinned under $progs (by its function name), every map
# under $maps (the protected-objects map as $maps/protected).
"$bpftool" prog loadall policy.bpf.o "$progs" pinmaps "$maps"

# Attach: one pinned link per program.
n=0
for p in "$progs"/*; do
    ./lsmpmon-bpf-attach "$p" "$links/${p##*/}"
    n=$((n + 1))
done

# The protected objects, keyed as the kernel sees them: (s_dev, i_ino).
# stat gives the user-space encoding of st_dev; the kernel's is MAJOR << 20 | MINOR.
le() { # VALUE BYTES: the value as little-endian hex bytes
    v=$1 i=0
    while [ "$i" -lt "$2" ]; do
        printf '%02x ' $(((v >> (8 * i)) & 255))
        i=$((i + 1))
    done
}
protect() { # PATH WHAT
    ino=$(stat -c %i "$1")
    udev=$(stat -c %d "$1")
    major=$(((udev >> 8) & 0xfff))
    minor=$(((udev & 0xff) | ((udev >> 12) & 0xfff00)))
    kdev=$(((major << 20) | minor))
    # shellcheck disable=SC2046 # the bytes are separate words on purpose
    "$bpftool" map update pinned "$maps/protected" \
        key hex $(le "$ino" 8) $(le "$kdev" 4) 00 00 00 00 \
        value hex $(le "$2" 4)
    echo "setup: protected $1 (dev $kdev, inode $ino): $3"
}
protect "$LAB_SECRET" 1 "no open"
protect "$(dirname "$LAB_SECRET")" 2 "no name created, removed or renamed"

# bpf_printk writes to the trace buffer only while tracing is on.
echo 1 > "$tracing/tracing_on"

# Proof that it is loaded: one LSM link per program, and the map as filled.
attached=$("$bpftool" link show | grep -c 'attach_type lsm_mac' || true)
if [ "$attached" -ne "$n" ] || [ "$n" -eq 0 ]; then
    echo "setup: $n programs loaded but $attached LSM links attached:" >&2
    "$bpftool" link show >&2
    exit 1
fi
entries=$("$bpftool" -j map dump pinned "$maps/protected" | grep -o '"key":\[' | wc -l)
[ "$entries" -eq 2 ] || {
    echo "setup: the protected map has $entries entries, expected 2:" >&2
    "$bpftool" map dump pinned "$maps/protected" >&2
    exit 1
}
echo "setup: BPF LSM policy loaded: $n programs attached ($(ls "$progs" | tr '\n' ' ')), $entries protected objects"
