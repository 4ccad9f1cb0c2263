#!/usr/bin/env bash
# The atlas: every configuration under configs/ on every kernel lsmpmon
# knows (5.10, 6.1, 6.12, 7.3 and the Smack kernel 6.1-smack), the paper
# ops, traced, submitted as one Slurm job array to a one-node cluster this
# script starts on 127.0.0.1 (munged, slurmctld, slurmd from Debian 12, every
# file in a temporary directory, stopped and removed at the end), then
# merged into results/atlas with its Markdown and HTML pages.
#
#   scripts/atlas.sh [OUT]        (default OUT: results/atlas; run as root)
#
# Each cell runs as ATLAS_DRAWS layout draws (default 5), the first
# ATLAS_TRACE_DRAWS of them (default 1) traced op by op: overheads need
# many draws, hook costs and calls per op one.
#
# Environment: ATLAS_KERNELS, ATLAS_CONFIGS, ATLAS_OPS, ATLAS_SAMPLES, ATLAS_DRAWS,
# ATLAS_TRACE_DRAWS, ATLAS_PARALLEL narrow or widen the matrix; SLURM_CONF set =
# use that cluster instead.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/atlas}
kernels=${ATLAS_KERNELS:-5.10,6.1,6.12,7.3,6.1-smack}
# Every configuration shipped, in the tables' order (the binary's: `lab configs`)
# but the AVC sweep's (selinux-avc*) and the avtab study's (selinux-avtab*), which serve
# those studies (results/avc-sweep, results/avtab-slots), not the matrix.
configs=${ATLAS_CONFIGS:-}
samples=${ATLAS_SAMPLES:-3}
draws=${ATLAS_DRAWS:-5}
trace_draws=${ATLAS_TRACE_DRAWS:-1}
ops=${ATLAS_OPS:-paper}
parallel=${ATLAS_PARALLEL:-$(nproc)}

[ "$(id -u)" = 0 ] || { echo "atlas: run as root (the lab boots guests and Slurm runs its tasks as root)" >&2; exit 2; }
[ ! -e "$out/cells" ] || { echo "atlas: $out already holds cells: move it away first" >&2; exit 2; }
cargo build --release --quiet
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bin=$(find "$bin" -path '*/release/lsmpmon' -type f -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2)

# Short: munge's socket path must fit a sockaddr_un.
work=$(mktemp -d /tmp/lsmpmon-atlas.XXXXXX)
# The tasks run this copy: rebuilding the tree during the run changes nothing.
install -m 0755 "$bin" "$work/lsmpmon"
[ -n "$configs" ] || configs=$("$work/lsmpmon" lab configs | grep -v '^selinux-av[ct]' | paste -sd,)

stop_cluster() {
    [ -n "${own_cluster:-}" ] || return 0
    scancel --full -u root 2>/dev/null || true
    for _ in $(seq 60); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
    # Each is waited for: slurmctld writes its state on the way out, and
    # removing the directory under it fails the script after a good run.
    local pid
    for d in slurmd slurmctld munged; do
        [ -f "$work/$d.pid" ] || continue
        pid=$(cat "$work/$d.pid")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    done
}
trap 'stop_cluster; rm -rf "$work/state" "$work/spool" "$work"/munge.*' EXIT

start_cluster() {
    own_cluster=1
    mkdir -p "$work/state" "$work/spool"
    mungekey -c -k "$work/munge.key"
    munged --key-file="$work/munge.key" --socket="$work/munge.sock" \
        --pid-file="$work/munged.pid" --log-file="$work/munged.log" \
        --seed-file="$work/munge.seed" --force
    local ports mem
    ports=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])')
    mem=$(awk '/MemTotal/ {print int($2/1024*9/10)}' /proc/meminfo)
    cat >"$work/slurm.conf" <<EOF
ClusterName=lsmpmonatlas
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=${ports% *}
SlurmdPort=${ports#* }
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=lab Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF=$work/slurm.conf
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    for _ in $(seq 120); do
        [ "$(sinfo -h -o %t)" = idle ] && return 0
        sleep 0.5
    done
    echo "atlas: the node did not become idle: see $work/slurmd.log" >&2
    exit 1
}

[ -n "${SLURM_CONF:-}" ] || start_cluster
batch=$work/results
started=$(date +%s)
echo "atlas: $kernels × $configs, $draws draws ($trace_draws traced), $samples samples, $parallel at once ($(date -u +%FT%TZ))"
"$work/lsmpmon" lab submit --slurm --kernels "$kernels" --configs "$configs" --ops "$ops" \
    --draws "$draws" --trace --trace-draws "$trace_draws" --samples "$samples" \
    --max-parallel "$parallel" --results "$batch" ||
    echo "atlas: some cells did not pass (listed above)" >&2
ended=$(date +%s)
echo "atlas: all tasks ended after $((ended - started)) s"
"$work/lsmpmon" lab merge "$out" "$batch"
rm -rf "$out/logs" # console logs stay on the machine that ran them
"$work/lsmpmon" report "$out" --format markdown -o "$out/README.md"
"$work/lsmpmon" report "$out" --format html -o "$out/report.html"
echo "atlas: $out ($(ls "$out/cells" | wc -l) cells, $(( $(date +%s) - started )) s in all)"
