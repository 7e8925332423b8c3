#!/usr/bin/env bash
# Starts a private one-node Slurm cluster in DIR for tests and trials: no root, no munge
# (auth/none, so loopback only), no cgroups, ports P and P+1 (random by default), state in DIR.
# Prints the slurm.conf path: `export SLURM_CONF=$(scripts/slurm-up.sh DIR)`.
# Exit 77: this host cannot run it (hostname not loopback, Slurm absent), 1: it failed to start.
# Stop it with scripts/slurm-down.sh DIR. Design and pitfalls: ARCHITECTURE.md, section Sweeps.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [PORT]" >&2; exit 2; }
for c in slurmctld slurmd sinfo; do
    command -v "$c" >/dev/null || { echo "$c not found (apt-get install slurmctld slurmd slurm-client)" >&2; exit 77; }
done
D=$(mkdir -p "$1" && cd "$1" && pwd); P=${2:-$(shuf -i 20000-60000 -n 1)}; H=$(hostname -s)
# The daemons bind the address of the host name (NoInAddrAny): it must be loopback, both for
# safety (auth/none trusts any uid a client claims) and because clients dial that address.
A=$(getent ahostsv4 "$H" | awk 'NR==1{print $1}')
case "$A" in 127.*) ;; *) echo "hostname $H resolves to '${A:-nothing}', not loopback" >&2; exit 77;; esac
mkdir -p "$D"/{state,spool,log}
# The node's CPUs, sockets and cores as slurmd sees them, under the host's name; RealMemory
# dropped so that a busy machine is not drained for having less free memory than detected.
NODE=$(slurmd -C | head -1 | sed -e "s/^NodeName=[^ ]*/NodeName=$H/" -e 's/ RealMemory=[0-9]*//')
cat > "$D/slurm.conf" <<CONF
ClusterName=dlptest
SlurmctldHost=$H
SlurmctldPort=$P
SlurmdPort=$((P+1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/none
CredType=cred/none
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
$NODE
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf
slurmctld && slurmd
# The daemons exit 0 even when they die right after forking: wait for the node to be idle.
for _ in $(seq 100); do
    [ "$(timeout 2 sinfo -h -o %T 2>/dev/null)" = idle ] && { echo "$SLURM_CONF"; exit 0; }
    sleep 0.1
done
echo "slurm did not come up; see $D/log" >&2
exit 1
