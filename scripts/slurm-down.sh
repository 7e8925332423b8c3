#!/usr/bin/env bash
# Stops the cluster that scripts/slurm-up.sh DIR started: cancels its jobs, asks both daemons
# to shut down, and kills them (TERM, then KILL) if their pid files outlive 5 seconds.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
D=$(cd "$1" 2>/dev/null && pwd) || exit 0
export SLURM_CONF=$D/slurm.conf
[ -f "$SLURM_CONF" ] || exit 0
timeout 5 scancel --user="$(id -un)" 2>/dev/null
timeout 5 scontrol shutdown 2>/dev/null
for sig in none TERM KILL; do
    for _ in $(seq 50); do
        [ -e "$D/slurmctld.pid" ] || [ -e "$D/slurmd.pid" ] || exit 0
        sleep 0.1
    done
    [ "$sig" = none ] && continue
    for f in "$D/slurmctld.pid" "$D/slurmd.pid"; do
        [ -e "$f" ] && kill -"$sig" "$(cat "$f")" 2>/dev/null
        [ "$sig" = KILL ] && rm -f "$f"
    done
done
exit 0
