#!/bin/sh
# The weekly validation from cron (gdrcheck.cron): one job over
# GDRCHECK_NODES nodes of GDRCHECK_PARTITION with every default suite,
# failed nodes drained (Reason "gdrcheck: ..."; `gdrcheck undrain` resumes
# them), compared with the last job that passed. A job that passes becomes
# the new last-pass.
#
# Environment: GDRCHECK (default gdrcheck), GDRCHECK_JOBS (job directories,
# on a shared filesystem; default /shared/gdrcheck/jobs), GDRCHECK_NODES
# (default 16), GDRCHECK_PARTITION (default gpu), GDRCHECK_SUBMIT_ARGS (more
# `gdrcheck submit` flags, e.g. --nccl-tests-dir /opt/nccl-tests/build).
#
# Exit codes are gdrcheck submit --wait's: 0 passed, 1 a check failed or a
# regression since last-pass, 2 a node could not be judged.
set -eu

gdrcheck=${GDRCHECK:-gdrcheck}
jobs=${GDRCHECK_JOBS:-/shared/gdrcheck/jobs}
last=$jobs/last-pass
mkdir -p "$jobs"

set -- submit -N "${GDRCHECK_NODES:-16}" -p "${GDRCHECK_PARTITION:-gpu}" --out "$jobs" --drain-on-fail --wait
if [ -e "$last/results.json" ]; then
	set -- "$@" --compare-to "$last"
fi
status=0
# GDRCHECK_SUBMIT_ARGS is a list of flags: split on purpose.
# shellcheck disable=SC2086
"$gdrcheck" "$@" ${GDRCHECK_SUBMIT_ARGS:-} >"$jobs/.weekly.out" || status=$?
cat "$jobs/.weekly.out"
# submit prints "submitted job ID; results in DIR" first.
job=$(sed -n 's/^submitted job [^;]*; results in //p' "$jobs/.weekly.out")
rm -f "$jobs/.weekly.out"
if [ "$status" -eq 0 ] && [ -n "$job" ]; then
	ln -sfn "$job" "$last"
	echo "weekly: $job passed; it is the new last-pass"
fi
exit "$status"
