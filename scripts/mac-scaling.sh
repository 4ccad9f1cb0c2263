#!/bin/sh
# The reference MACs' two scaling curves (BENCHMARKS.md, 'Label, path and
# inode: the reference MACs'), as lab runs of none and mac-label/-path/-inode,
# one results directory per point:
#   path depth: `lab run --bench-dir` puts the benchmark's files DEPTH
#               directories deep (/d1/.../dDEPTH, on the guest's root);
#   rules:      copies of the mac-* configurations (a --config-dir, searched
#               first) with a `pad_rules` file: `lsmpmon mac setup` adds that many rules
#               naming other files, so the policy has RULES rules in all.
# Usage: scripts/mac-scaling.sh [KERNEL [OUT]]
# Environment: DEPTHS ("1 4 16"), RULES ("10 100 1000"),
#   OPS ("stat,open_close,create_0k"), SAMPLES (5), LSMPMON (the binary).
set -eu
kernel=${1:-6.1}
out=${2:-results/mac-scaling-$kernel}
lsmpmon=${LSMPMON:-target/x86_64-unknown-linux-gnu/release/lsmpmon}
ops=${OPS:-stat,open_close,create_0k}
samples=${SAMPLES:-5}
configs=none,mac-label,mac-path,mac-inode
root=$(cd "$(dirname "$0")/.." && pwd)

run() { # RESULTS [lab options]
    results=$1
    shift
    "$lsmpmon" lab run --kernels "$kernel" --configs "$configs" --ops "$ops" \
        --samples "$samples" --jobs 1 --results "$results" "$@"
}

for depth in ${DEPTHS:-1 4 16}; do
    dir="" i=1
    while [ "$i" -le "$depth" ]; do
        dir="$dir/d$i"
        i=$((i + 1))
    done
    run "$out/depth-$depth" --bench-dir "$dir"
done

in_policy=$(grep -c '^deny' "$root/configs/mac-path/policy.mac")
for rules in ${RULES:-10 100 1000}; do
    if [ "$rules" -lt "$in_policy" ]; then
        echo "mac-scaling: $rules rules is fewer than the policy's own $in_policy" >&2
        exit 2
    fi
    tmp=$(mktemp -d)
    for m in label path inode; do
        cp -r "$root/configs/mac-$m" "$tmp/"
        echo $((rules - in_policy)) > "$tmp/mac-$m/pad_rules"
    done
    run "$out/rules-$rules" --config-dir "$tmp"
    rm -rf "$tmp"
done
python3 "$root/scripts/mac_curves.py" "$out"
