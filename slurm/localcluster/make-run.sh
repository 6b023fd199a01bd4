#!/usr/bin/env bash
# make run: the main job on the embedded default. Starts the local Slurm
# cluster (four slurmd on loopback), has each node replay a recorded node
# (fixtures/nodes) and nccl-tests replay runs recorded on a real 2 x H200
# node (fixtures/nccl-tests), submits the full validation with
# `gdrcheck submit --wait`, and prints the tables and where the reports are.
# The cluster keeps running afterwards, for a look with sinfo and
# scontrol; `slurm/localcluster/cluster.sh stop` ends it.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${RUN_OUT:-$top/out/run}
state=${GDRCHECK_SLURM_STATE:-/tmp/gdrcheck-slurm}
bin=$top/bin/gdrcheck
cluster=$top/slurm/localcluster/cluster.sh

[ -x "$bin" ] || { echo "make-run: $bin missing (make build)" >&2; exit 2; }
mkdir -p "$out"

# The stand-in nccl-tests, linked under every name the job runs.
fake=$out/nccl-tests
rm -rf "$fake" && mkdir -p "$fake/recordings"
(cd "$top" && go build -o "$fake/nccl-tests" ./fixtures/fakebin/nccl-tests)
for b in all_reduce all_gather sendrecv; do ln -s nccl-tests "$fake/${b}_perf"; done
rec=$top/fixtures/nccl-tests
ln -s "$rec/all_reduce_perf-h200x2-nv18-mpi-np2-direct-cumem.txt" "$fake/recordings/all_reduce-direct.txt"
ln -s "$rec/all_reduce_perf-h200x2-nv18-mpi-np2-p2p-disabled-shm.txt" "$fake/recordings/all_reduce-p2p-disabled.txt"
ln -s "$rec/all_reduce_perf-h200x2-nv18-mpi-np2-p2p-shm-disabled-socket.txt" "$fake/recordings/all_reduce-p2p-shm-disabled.txt"
ln -s "$rec/all_gather_perf-h200x2-nv18-direct-p2p.txt" "$fake/recordings/all_gather-direct.txt"
ln -s "$rec/sendrecv_perf-h200x2-nv18-direct-p2p.txt" "$fake/recordings/sendrecv-direct.txt"

"$cluster" install
"$cluster" start --nodes 4 --state-dir "$state" >/dev/null
node=$top/fixtures/nodes/h200x2-nv18-vm.ttar
cat > "$state/nodes.env" <<ENV
# make run: every node replays the recorded 2 x H200 node.
* GDRCHECK_HOST_ROOT=$node
* GDRCHECK_FAKE_NCCL_DIR=$fake/recordings
ENV
# shellcheck disable=SC1091
. "$state/env.sh"

echo "make run: 4-node job on the local Slurm cluster; nodes replay $node, nccl-tests replays fixtures/nccl-tests"
exec "$bin" submit -N 4 -p gpu --out "$out" --nccl-tests-dir "$fake" --wait --poll 1s
