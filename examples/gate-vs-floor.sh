#!/bin/bash
# gate-vs-floor.sh: the quick gate beside nvidia-smi -q and the cuInit floor
# on this node, RUNS times each, interleaved, with the median and the range.
# The floor is `gdrcheck debug cuinit`: the same binary loading libcuda and
# calling cuInit, nothing else. The target: gate <= floor + 0.1 s.
#
#   examples/gate-vs-floor.sh [-n RUNS] [GDRCHECK [RUN FLAGS...]]
#
# Needs bash, date +%N and awk; writes the gate's reports under a temporary
# directory it removes.
set -u
runs=7
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
bin=${1:-gdrcheck}; shift || true
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# secs CMD...: the command's wall time in seconds; its output is dropped,
# its exit status recorded.
secs() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null 2>&1
	echo $? >>"$tmp/rc.$label"
	e=$(date +%s%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", (e - s) / 1e9 }'
}

for i in $(seq "$runs"); do
	label=cuinit secs "$bin" debug cuinit >>"$tmp/cuinit"
	label=smi secs nvidia-smi -q >>"$tmp/smi"
	label=gate secs "$bin" run --suites topology,kernel,bar1 --out "$tmp/reports" "$@" >>"$tmp/gate"
done

# stats FILE: median, min and max of one number per line.
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'; }
report() {
	read -r med lo hi < <(stats "$tmp/$2")
	printf '%-28s median %s s, range %s-%s s, exit codes %s\n' "$1" "$med" "$lo" "$hi" "$(sort -u "$tmp/rc.$3" | tr '\n' ' ')"
}
report "gdrcheck debug cuinit" cuinit cuinit
report "nvidia-smi -q" smi smi
report "quick gate" gate gate
read -r floor _ < <(stats "$tmp/cuinit")
read -r gate _ < <(stats "$tmp/gate")
awk -v g="$gate" -v f="$floor" 'BEGIN { d = g - f; printf "gate - floor: %.3f s (target <= 0.100 s): %s\n", d, (d <= 0.1 ? "within" : "over") }'
