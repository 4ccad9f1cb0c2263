#!/bin/sh
# Loads the planted program (plant.bpf.o) and attaches it to
# security_inode_create, then shows that it runs: one file created must add
# one call to its counter. Run by the lab as root in /lab/config.
set -eu

bpftool=/usr/sbin/bpftool
bpffs=/sys/fs/bpf
dir=$bpffs/lsmpmon-plant
mounted() { awk -v d="$1" -v t="$2" '$2 == d && $3 == t { m = 1 } END { exit !m }' /proc/mounts; }
mounted "$bpffs" bpf || mount -t bpf bpf "$bpffs"
[ ! -e "$dir" ] || { echo "setup: $dir already exists: the plant is already loaded" >&2; exit 1; }
mkdir -p "$dir/links"

"$bpftool" prog loadall plant.bpf.o "$dir/progs" pinmaps "$dir/maps"
./lsmpmon-bpf-attach "$dir/progs/planted_inode_create" "$dir/links/planted_inode_create"

# The counter, from the object's .bss map as bpftool shows it with its BTF.
bss=$(ls -d "$dir"/maps/*bss* 2>/dev/null | head -1 || true)
[ -n "$bss" ] || { echo "setup: no .bss map pinned under $dir/maps: $(ls "$dir/maps")" >&2; exit 1; }
calls() {
    "$bpftool" -j map dump pinned "$bss" | grep -o '"calls": *[0-9]*' | grep -o '[0-9]*$' || true
}
before=$(calls)
[ -n "$before" ] || { echo "setup: no calls counter in $bss: $("$bpftool" map dump pinned "$bss")" >&2; exit 1; }
probe=/tmp/lsmpmon-plant-probe
: > "$probe"
rm -f "$probe"
after=$(calls)
[ -n "$after" ] && [ "$after" -eq $((before + 1)) ] || {
    echo "setup: the plant counted $before then $after calls around one file created, not one more" >&2
    exit 1
}
echo "setup: planted fexit/security_inode_create attached; one file created, one call counted ($after)"
