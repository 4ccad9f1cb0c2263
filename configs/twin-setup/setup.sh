#!/bin/sh
# Leaves the kernel's allocators as a policy load would (slab objects made and
# freed, dentries and inodes cached, then dropped), with no module to check
# anything. Run by the lab as root in /lab/config.
set -eu
dir=/tmp/lsmpmon-twin
mkdir "$dir"
i=0
while [ "$i" -lt 4000 ]; do
    : > "$dir/f$i"
    i=$((i + 1))
done
n=$(ls "$dir" | wc -l)
rm -rf "$dir"
[ "$n" -eq 4000 ] || { echo "setup: made $n files, not 4000" >&2; exit 1; }
echo "setup: made and removed $n files in $dir"
