#!/bin/sh
# An example workload for `lsmpmon lab run --workload` (and `bench --workload`):
# 50 new files written and read back, with the shell's builtins only, so that
# it runs under every shipped policy (busybox sh in the guest; the policies let
# the workload create, write and read files in the benchmark's directory, its
# working directory here). Each run's names are new: every run creates.
i=0
while [ $i -lt 50 ]; do
    echo "line $i" > "f$$.$i"
    read -r l < "f$$.$i"
    [ "$l" = "line $i" ] || { echo "f$$.$i holds '$l'" >&2; exit 1; }
    i=$((i + 1))
done
