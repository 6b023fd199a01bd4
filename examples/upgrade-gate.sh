#!/bin/sh
# The shell steps of the upgrade gate, as the example pipelines
# (Jenkinsfile, .gitlab-ci.yml) run them on a canary node:
#
#   upgrade-gate.sh before    the quick gate before the upgrade
#   upgrade-gate.sh after     the same gate after it
#   upgrade-gate.sh compare   gdrcheck compare of the two: the table on
#                             stdout, compare.xml (JUnit), compare.html
#                             and compare.md next to the runs
#
# Environment: GDRCHECK (the binary, default gdrcheck on PATH), GATE_DIR
# (default gdrcheck-gate), GATE_SUITES (default topology,kernel,bar1; add
# collectives,negative where nccl-tests is installed), GATE_ARGS (more
# `gdrcheck run` flags, e.g. --nccl-tests-dir /opt/nccl-tests/build).
#
# Exit codes are gdrcheck's: 0 passed / nothing regressed, 1 a check
# failed / a regression, 2 the node or the input could not be judged.
set -eu

gdrcheck=${GDRCHECK:-gdrcheck}
dir=${GATE_DIR:-gdrcheck-gate}
suites=${GATE_SUITES:-topology,kernel,bar1}

case ${1:-} in
before | after)
	mkdir -p "$dir"
	# GATE_ARGS is a list of flags: split on purpose.
	# shellcheck disable=SC2086
	exec "$gdrcheck" run --suites "$suites" --out "$dir/$1" ${GATE_ARGS:-}
	;;
compare)
	status=0
	"$gdrcheck" compare "$dir/before" "$dir/after" || status=$?
	# Bad input (2) leaves nothing to render.
	[ "$status" -le 1 ] || exit "$status"
	"$gdrcheck" compare "$dir/before" "$dir/after" --format junit --out "$dir/compare.xml" || [ $? -le 1 ]
	"$gdrcheck" compare "$dir/before" "$dir/after" --format html --out "$dir/compare.html" || [ $? -le 1 ]
	"$gdrcheck" compare "$dir/before" "$dir/after" --format markdown --out "$dir/compare.md" || [ $? -le 1 ]
	exit "$status"
	;;
*)
	echo "usage: upgrade-gate.sh before|after|compare" >&2
	exit 2
	;;
esac
