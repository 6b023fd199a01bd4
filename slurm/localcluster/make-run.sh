#!/usr/bin/env bash
# make run: the main job on the embedded default. Starts the local Slurm
# cluster (four slurmd on loopback), has every node replay the node and the
# nccl-tests runs slurm/localcluster/make-run.cluster names, submits the
# full validation with `gdrcheck submit --wait`, and prints the tables and
# where the reports are.
#
#   make-run.sh           the healthy cluster: exit 0
#   make-run.sh --fault   node3 planted with a fault (peer memory missing):
#                         caught, named and drained, exit 1
#   make-run.sh --nodes N the same on N slurmd (both forms; default 4): the
#                         runs across more than 4 nodes replay the 4-node
#                         recordings, as no other exist
#
# The cluster keeps running afterwards, for a look with sinfo and scontrol;
# `slurm/localcluster/cluster.sh stop` ends it.
set -euo pipefail

fault=0 nodes=4
while [ $# -gt 0 ]; do
	case "$1" in
	--fault) fault=1 ;;
	--nodes) nodes=${2:?--nodes needs a count} && shift ;;
	*) echo "make-run: unknown argument $1 (want --fault, --nodes N or nothing)" >&2; exit 2 ;;
	esac
	shift
done
[[ $nodes =~ ^[1-9][0-9]*$ ]] && ((nodes >= 2)) || { echo "make-run: --nodes $nodes: want a count of 2 or more" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${RUN_OUT:-$top/out/run}
[ "$fault" = 1 ] && out=${RUN_OUT:-$top/out/run-fault}
state=${GDRCHECK_SLURM_STATE:-/tmp/gdrcheck-slurm}
bin=$top/bin/gdrcheck
cluster=$top/slurm/localcluster/cluster.sh
spec=$top/slurm/localcluster/make-run.cluster

[ -x "$bin" ] || { echo "make-run: $bin missing (make build)" >&2; exit 2; }
mkdir -p "$out"

# The stand-in nccl-tests, linked under every name the job runs, and its
# recordings: one directory for every node, another for the planted one.
fake=$out/nccl-tests
rm -rf "$fake" && mkdir -p "$fake/recordings" "$fake/recordings-fault"
(cd "$top" && go build -o "$fake/nccl-tests" ./fixtures/fakebin/nccl-tests)
root='' fault_node='' fault_root=''
while read -r kind key file; do
	case "$kind" in
	node) root=$top/$file ;;
	rec)
		ln -s "$top/$file" "$fake/recordings/$key.txt"
		ln -sf "$top/$file" "$fake/recordings-fault/$key.txt"
		op=${key%%-*}
		[ -e "$fake/${op}_perf" ] || ln -s nccl-tests "$fake/${op}_perf"
		;;
	fault-node) fault_node=$key fault_root=$top/$file ;;
	fault-rec)
		[ "$fault" = 1 ] || continue
		# Multi-node runs with the planted node print from the first
		# node, whose recordings must hold them; its own runs are its.
		case "$key" in *-slow) ln -s "$top/$file" "$fake/recordings/$key.txt" ;; esac
		ln -sf "$top/$file" "$fake/recordings-fault/$key.txt"
		;;
	esac
done < <(grep -v '^#' "$spec")
# Runs across more than 4 nodes replay the 4-node recordings.
for ((k = 5; k <= nodes; k++)); do
	for d in recordings recordings-fault; do
		for f in "$fake/$d"/*-n4.txt "$fake/$d"/*-n4-slow.txt; do
			[ -e "$f" ] && ln -sf "$(readlink "$f")" "${f/-n4/-n$k}"
		done
	done
done

"$cluster" install
"$cluster" start --nodes "$nodes" --state-dir "$state" >/dev/null
{
	echo "# make run: written by make-run.sh from make-run.cluster"
	echo "* GDRCHECK_HOST_ROOT=$root"
	echo "* GDRCHECK_FAKE_NCCL_DIR=$fake/recordings"
	if [ "$fault" = 1 ]; then
		echo "* GDRCHECK_FAKE_NCCL_SLOW_NODE=$fault_node"
		echo "$fault_node GDRCHECK_HOST_ROOT=$fault_root"
		echo "$fault_node GDRCHECK_FAKE_NCCL_DIR=$fake/recordings-fault"
	fi
} > "$state/nodes.env"
# shellcheck disable=SC1091
. "$state/env.sh"

if [ "$fault" = 1 ]; then
	echo "make run-fault: $nodes-node job on the local Slurm cluster; every node replays ${root#$top/}, except $fault_node, which replays ${fault_root#$top/} (peer memory missing); nccl-tests replays fixtures/nccl-tests/synthetic" | fold -s -w 120
	exec "$bin" submit -N "$nodes" -p gpu --out "$out" --nccl-tests-dir "$fake" --drain-on-fail --wait --poll 1s
fi
echo "make run: $nodes-node job on the local Slurm cluster; nodes replay ${root#$top/}, nccl-tests replays fixtures/nccl-tests/synthetic" | fold -s -w 120
exec "$bin" submit -N "$nodes" -p gpu --out "$out" --nccl-tests-dir "$fake" --wait --poll 1s
