#!/usr/bin/env bash
# cluster.sh: a real Slurm cluster on loopback for gdrcheck's tests and `make run`.
#
# One slurmctld and N slurmd (node1..nodeN) run on 127.0.0.1, each slurmd with
# `slurmd -N nodeK` and its own port (Debian's slurm-wlm is built with
# --enable-multiple-slurmd). A private munged serves the cluster on a socket in
# the state dir, so nothing under /etc is read or written. See README.md.
#
#   cluster.sh install
#   cluster.sh start  [--nodes N] [--state-dir DIR] [--port P] [--timeout S]
#                     [--health-program CMD] [--health-interval S] [--health-node-state STATE]
#                     [--prolog CMD] [--epilog CMD] [--prolog-flags FLAGS] [--prolog-epilog-timeout S]
#                     [--scheduler-parameters PARAMS]
#   cluster.sh stop   [--state-dir DIR]
#   cluster.sh status [--state-dir DIR]
#   cluster.sh env    [--state-dir DIR]
#
# `start` prints the environment a caller needs as KEY=VALUE lines on stdout
# (progress goes to stderr) and writes DIR/env.sh, which exports the same.
set -euo pipefail

readonly DEFAULT_STATE_DIR=/tmp/gdrcheck-slurm
readonly DEFAULT_NODES=4
readonly DEFAULT_PORT=16817 # slurmctld; slurmd nodeK listens on PORT+K
readonly DEFAULT_TIMEOUT=30 # seconds for the nodes to become idle
readonly PARTITION=gpu

state_dir=${GDRCHECK_SLURM_STATE:-$DEFAULT_STATE_DIR}
nodes=$DEFAULT_NODES
port=${GDRCHECK_SLURM_PORT:-$DEFAULT_PORT}
timeout=$DEFAULT_TIMEOUT
# The health loop's hooks (README.md, "The health loop"): empty means none.
health_program="" health_interval="" health_node_state="" prolog="" epilog="" prolog_flags="" prolog_epilog_timeout="" scheduler_parameters=""

log() { printf 'localcluster: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

usage() {
	cat <<EOF
usage: ${0##*/} install
       ${0##*/} start  [--nodes N] [--state-dir DIR] [--port P] [--timeout S]
                       [--health-program CMD] [--health-interval S] [--health-node-state STATE]
                       [--prolog CMD] [--epilog CMD] [--prolog-flags FLAGS] [--prolog-epilog-timeout S]
                       [--scheduler-parameters PARAMS]
       ${0##*/} stop   [--state-dir DIR]
       ${0##*/} status [--state-dir DIR]
       ${0##*/} env    [--state-dir DIR]

state dir: \$GDRCHECK_SLURM_STATE or $DEFAULT_STATE_DIR
port:      \$GDRCHECK_SLURM_PORT or $DEFAULT_PORT (slurmctld; slurmd nodeK uses PORT+K)
EOF
}

parse_flags() {
	while (($# > 0)); do
		case $1 in
		--nodes) nodes=${2:?--nodes needs a value} && shift ;;
		--nodes=*) nodes=${1#*=} ;;
		--state-dir) state_dir=${2:?--state-dir needs a value} && shift ;;
		--state-dir=*) state_dir=${1#*=} ;;
		--port) port=${2:?--port needs a value} && shift ;;
		--port=*) port=${1#*=} ;;
		--timeout) timeout=${2:?--timeout needs a value} && shift ;;
		--timeout=*) timeout=${1#*=} ;;
		--health-program) health_program=${2:?--health-program needs a value} && shift ;;
		--health-interval) health_interval=${2:?--health-interval needs a value} && shift ;;
		--health-node-state) health_node_state=${2:?--health-node-state needs a value} && shift ;;
		--prolog) prolog=${2:?--prolog needs a value} && shift ;;
		--epilog) epilog=${2:?--epilog needs a value} && shift ;;
		--prolog-flags) prolog_flags=${2:?--prolog-flags needs a value} && shift ;;
		--prolog-epilog-timeout) prolog_epilog_timeout=${2:?--prolog-epilog-timeout needs a value} && shift ;;
		--scheduler-parameters) scheduler_parameters=${2:?--scheduler-parameters needs a value} && shift ;;
		-h | --help) usage && exit 0 ;;
		*) usage >&2 && die "unknown argument \"$1\"" ;;
		esac
		shift
	done
	[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got \"$nodes\""
	[[ $port =~ ^[1-9][0-9]*$ ]] || die "--port must be a positive integer, got \"$port\""
	((port + nodes < 65536)) || die "--port $port + $nodes nodes is past 65535"
	[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer, got \"$timeout\""
	[[ -z $health_interval || $health_interval =~ ^[1-9][0-9]*$ ]] || die "--health-interval must be a positive integer, got \"$health_interval\""
	[[ -z $prolog_epilog_timeout || $prolog_epilog_timeout =~ ^[1-9][0-9]*$ ]] || die "--prolog-epilog-timeout must be a positive integer, got \"$prolog_epilog_timeout\""
	# One slurm.conf word each: a state or flag list has no spaces.
	[[ $health_node_state =~ ^[A-Za-z,_]*$ ]] || die "--health-node-state \"$health_node_state\": want Slurm's states, e.g. ANY or IDLE,CYCLE"
	[[ $prolog_flags =~ ^[A-Za-z,_]*$ ]] || die "--prolog-flags \"$prolog_flags\": want Slurm's flags, e.g. Alloc,Contain"
	[[ $scheduler_parameters =~ ^[A-Za-z0-9,_=]*$ ]] || die "--scheduler-parameters \"$scheduler_parameters\": want Slurm's parameters, e.g. nohold_on_prolog_fail"
	[[ -z $health_program || -n $health_interval ]] || die "--health-program needs --health-interval"
	local c
	for c in "$health_program" "$prolog" "$epilog"; do
		[[ $c != *$'\n'* ]] || die "a hook command must be one line"
	done
	# slurm.conf has no quoting for paths; the munge socket must fit in sun_path.
	[[ $state_dir != *[[:space:]]* ]] || die "state dir \"$state_dir\" must not contain spaces"
	[[ $state_dir == /* ]] || state_dir=$PWD/$state_dir
	state_dir=${state_dir%/}
	((${#state_dir} < 80)) || die "state dir \"$state_dir\" is too long for a unix socket path"
	conf=$state_dir/slurm.conf
	run=$state_dir/run
	logs=$state_dir/log
	munge_dir=$state_dir/munge
	munge_socket=$munge_dir/munge.socket
}

# ---------------------------------------------------------------- install

readonly PACKAGES=(slurm-wlm slurmctld slurmd slurm-client munge)
readonly PROGRAMS=(slurmctld slurmd sinfo srun sbatch scontrol squeue scancel munged munge)

installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]; }

have_programs() {
	local p
	for p in "${PROGRAMS[@]}"; do
		command -v "$p" >/dev/null || return 1
	done
}

cmd_install() {
	have_programs && return 0
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		installed "$p" || missing+=("$p")
	done
	((${#missing[@]} > 0)) || die "packages ${PACKAGES[*]} are installed but not all of ${PROGRAMS[*]} are on PATH"
	((EUID == 0)) || die "installing ${missing[*]} needs root"
	command -v apt-get >/dev/null || die "apt-get not found: install ${missing[*]} by hand"
	log "installing ${missing[*]}"
	local out
	out=$(mktemp)
	export DEBIAN_FRONTEND=noninteractive
	local apt=(apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold "${missing[@]}")
	if ! "${apt[@]}" >"$out" 2>&1; then
		log "apt-get install failed, running apt-get update and retrying"
		if ! { apt-get update -q && "${apt[@]}"; } >>"$out" 2>&1; then
			cat "$out" >&2
			rm -f "$out"
			die "apt-get install ${missing[*]} failed"
		fi
	fi
	rm -f "$out"
}

# ---------------------------------------------------------------- processes

# pid_of FILE COMM prints the pid in FILE if that process is alive and its
# command name is COMM; a stale pid file (or a reused pid) prints nothing.
pid_of() {
	local file=$1 comm=$2 pid
	[[ -r $file ]] || return 1
	read -r pid 2>/dev/null <"$file" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	local c
	read -r c 2>/dev/null </proc/"$pid"/comm || return 1
	[[ $c == "$comm" ]] && alive "$pid" || return 1
	printf '%s\n' "$pid"
}

# alive PID: the process exists and is not a zombie (a daemon whose parent
# has exited waits for init to reap it, and init in a container may not).
alive() {
	local stat
	read -r stat 2>/dev/null </proc/"$1"/stat || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# stop_pid PID NAME sends TERM, waits up to 10s, then KILL.
stop_pid() {
	local pid=$1 name=$2 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 200; i++)); do
		alive "$pid" || return 0
		sleep 0.05
	done
	log "$name (pid $pid) ignored TERM for 10s, killing it"
	kill -KILL "$pid" 2>/dev/null || true
}

# kill_tree PID kills PID and all its descendants.
kill_tree() {
	local child
	kill -STOP "$1" 2>/dev/null || return 0
	for child in $(ps -o pid= --ppid "$1"); do
		kill_tree "$child"
	done
	kill -KILL "$1" 2>/dev/null || true
}

# port_open PORT: something listens on 127.0.0.1:PORT. ss does not connect
# (a probe connection is an error line in slurmctld.log); /dev/tcp does.
port_open() {
	if command -v ss >/dev/null; then
		[[ -n $(ss -ltnH "sport = :$1" 2>/dev/null) ]]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

# slurm runs a client command against this cluster only.
slurm() { SLURM_CONF=$conf "$@"; }

# port_taken PORT: a socket holds PORT, listening or as the local end of a
# connection (an outgoing one inside the ephemeral range may hold it; slurmd
# then cannot bind it). TIME-WAIT does not count: slurmd binds with
# SO_REUSEADDR.
port_taken() {
	if command -v ss >/dev/null; then
		[[ -n $(ss -tanH "sport = :$1" 2>/dev/null | grep -v '^TIME-WAIT') ]]
	else
		port_open "$1"
	fi
}

ctld_up() {
	local cport
	pid_of "$run/slurmctld.pid" slurmctld >/dev/null || return 1
	# Client commands wait up to MessageTimeout for a controller that does
	# not answer: check the port first so status and stop do not hang.
	cport=$(sed -n 's/^SlurmctldPort=//p' "$conf" 2>/dev/null) || return 1
	[[ -n $cport ]] && port_open "$cport"
}

# stepd_pids prints slurmstepd processes that belong to this cluster (their
# environment carries our SLURM_CONF, inherited from our slurmd).
stepd_pids() {
	local d pid
	local comm
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		read -r comm 2>/dev/null <"$d/comm" || continue
		[[ $comm == slurmstepd ]] || continue
		grep -qzxF "SLURM_CONF=$conf" "$d/environ" 2>/dev/null && printf '%s\n' "$pid"
	done
	return 0
}

# ---------------------------------------------------------------- stop

cmd_stop() {
	[[ -d $state_dir ]] || return 0
	lock
	stop_cluster
}

# stop_cluster [keep-munged]
stop_cluster() {
	local pid f name jobs keep_munged=${1:-}
	if ctld_up; then
		jobs=$(slurm squeue -h -o %A 2>/dev/null || true)
		if [[ -n $jobs ]]; then
			log "cancelling jobs: $(paste -sd' ' <<<"$jobs")"
			# shellcheck disable=SC2086 # one job id per word
			slurm scancel $jobs 2>/dev/null || true
			for _ in {1..50}; do
				[[ -z $(slurm squeue -h -t running,completing -o %A 2>/dev/null) ]] && break
				sleep 0.1
			done
		fi
	fi
	# slurmd and slurmctld take a second or two each to shut down: in parallel.
	for f in "$run"/slurmd-*.pid "$run/slurmctld.pid"; do
		[[ -e $f ]] || continue
		name=${f##*/}
		name=${name%.pid}
		if pid=$(pid_of "$f" "${name%%-*}"); then
			log "stopping ${name/-/ } (pid $pid)"
			stop_pid "$pid" "${name/-/ }" &
		fi
	done
	wait
	# A slurmstepd outlives a slurmd killed before its jobs ended.
	for pid in $(stepd_pids); do
		log "killing leftover slurmstepd (pid $pid) and its processes"
		kill_tree "$pid"
	done
	# munged is ours: it serves only this state dir's socket.
	if [[ $keep_munged != keep-munged ]] && pid=$(pid_of "$munge_dir/munged.pid" munged); then
		log "stopping munged (pid $pid)"
		stop_pid "$pid" munged
	fi
	rm -f "$run"/*.pid
}

# ---------------------------------------------------------------- start

lock() {
	mkdir -p "$state_dir"
	exec 9>"$state_dir/.lock"
	flock -w 120 9 || die "another cluster.sh holds $state_dir/.lock"
}

write_config() {
	local cpus k
	# Every node claims 16 CPUs whatever this host has, so a job step can
	# start one rank per GPU of an 8-GPU node (srun refuses more tasks
	# than CPUs); config_overrides lets slurmd register with that.
	cpus="CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1"
	{
		cat <<EOF
# Written by gdrcheck slurm/localcluster/cluster.sh on every start; edits are lost.
ClusterName=gdrcheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_socket
CredType=cred/munge
PlugStackConfig=$state_dir/plugstack.conf

StateSaveLocation=$state_dir/ctld
SlurmdSpoolDir=$state_dir/spool/%n
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd-%n.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroups, no systemd: works in containers and VMs.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SlurmdParameters=config_overrides
# Node-specific environment for job steps, from nodes.env (see README.md).
TaskProlog=$state_dir/taskprolog.sh

SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2

# Generous for daemons on a busy CI machine, short for job ends.
SlurmctldTimeout=300
SlurmdTimeout=300
MessageTimeout=20
InactiveLimit=0
Waittime=0
KillWait=2
OverTimeLimit=0
MinJobAge=3600

NodeName=DEFAULT $cpus State=UNKNOWN
EOF
		for ((k = 1; k <= nodes; k++)); do
			printf 'NodeName=node%d NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d\n' "$k" $((port + k))
		done
		printf 'PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n' "$PARTITION"
		hook_config
	} >"$conf.tmp"
	mv "$conf.tmp" "$conf"
	: >"$state_dir/plugstack.conf"

	# TaskProlog output lines "export NAME=VALUE" reach the task's environment.
	cat >"$state_dir/taskprolog.sh" <<EOF
#!/bin/sh
# Written by cluster.sh. Prints "export NAME=VALUE" for each nodes.env line
# whose first field is this task's node (\$SLURMD_NODENAME) or "*".
echo "export SLURM_CONF=$conf"
[ -r "$state_dir/nodes.env" ] || exit 0
while read -r node assign; do
	case "\$node" in '' | '#'*) continue ;; esac
	if [ "\$node" = "\$SLURMD_NODENAME" ] || [ "\$node" = '*' ]; then
		echo "export \$assign"
	fi
done <"$state_dir/nodes.env"
EOF
	chmod 0755 "$state_dir/taskprolog.sh"

	printf 'export SLURM_CONF=%s\n' "$conf" >"$state_dir/env.sh"
}

# hook_config prints the health loop's slurm.conf lines, each hook through
# a wrapper (write_hook): slurmd runs HealthCheckProgram, Prolog and Epilog
# with an environment of its own making and no arguments.
hook_config() {
	if [[ -n $health_program ]]; then
		write_hook health "$health_program"
		printf 'HealthCheckProgram=%s\nHealthCheckInterval=%s\n' "$state_dir/hook-health.sh" "$health_interval"
		[[ -z $health_node_state ]] || printf 'HealthCheckNodeState=%s\n' "$health_node_state"
	fi
	if [[ -n $prolog ]]; then
		write_hook prolog "$prolog"
		printf 'Prolog=%s\n' "$state_dir/hook-prolog.sh"
	fi
	if [[ -n $epilog ]]; then
		write_hook epilog "$epilog"
		printf 'Epilog=%s\n' "$state_dir/hook-epilog.sh"
	fi
	[[ -z $prolog_flags ]] || printf 'PrologFlags=%s\n' "$prolog_flags"
	[[ -z $prolog_epilog_timeout ]] || printf 'PrologEpilogTimeout=%s\n' "$prolog_epilog_timeout"
	[[ -z $scheduler_parameters ]] || printf 'SchedulerParameters=%s\n' "$scheduler_parameters"
	return 0
}

# write_hook NAME CMD writes DIR/hook-NAME.sh: it exports SLURM_CONF and
# the nodes.env lines of its node ($SLURMD_NODENAME, which slurmd sets for
# all three hooks), as the TaskProlog does for tasks, then runs CMD (one
# line of shell words, the caller's). Its output goes to
# DIR/log/hook-NAME-NODE.log, since slurmd keeps none of it.
write_hook() {
	local name=$1 cmd=$2
	cat >"$state_dir/hook-$name.sh.tmp" <<EOF
#!/bin/sh
# Written by cluster.sh: the $name hook of slurm.conf.
export SLURM_CONF=$conf
# slurmd gives its hooks no PATH; scontrol and squeue are on this one.
export PATH="\${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}"
if [ -r "$state_dir/nodes.env" ]; then
	while read -r node assign; do
		case "\$node" in '' | '#'*) continue ;; esac
		if [ "\$node" = "\$SLURMD_NODENAME" ] || [ "\$node" = '*' ]; then
			export "\$assign"
		fi
	done <"$state_dir/nodes.env"
fi
exec >>"$logs/hook-$name-\${SLURMD_NODENAME:-unknown}.log" 2>&1
echo "== \$(date -u +%FT%T) $name on \${SLURMD_NODENAME:-?} job \${SLURM_JOB_ID:--}"
exec $cmd
EOF
	chmod 0755 "$state_dir/hook-$name.sh.tmp"
	mv "$state_dir/hook-$name.sh.tmp" "$state_dir/hook-$name.sh"
}

start_munged() {
	if pid_of "$munge_dir/munged.pid" munged >/dev/null &&
		munge --socket="$munge_socket" -n >/dev/null 2>&1; then
		return 0
	fi
	mkdir -p "$munge_dir"
	# munged wants its socket dir open to all (x) and not writable by others;
	# the key itself is 0600.
	chmod 0755 "$munge_dir"
	if [[ ! -s $munge_dir/munge.key ]]; then
		log "creating munge key $munge_dir/munge.key"
		(umask 077 && head -c 1024 /dev/urandom >"$munge_dir/munge.key")
	fi
	rm -f "$munge_socket" "$munge_socket.lock"
	munged --socket="$munge_socket" --key-file="$munge_dir/munge.key" \
		--pid-file="$munge_dir/munged.pid" --log-file="$munge_dir/munged.log" \
		--seed-file="$munge_dir/munged.seed" </dev/null >>"$munge_dir/munged.log" 2>&1 9>&- ||
		die "munged did not start, see $munge_dir/munged.log"
	munge --socket="$munge_socket" -n >/dev/null ||
		die "munged does not answer on $munge_socket, see $munge_dir/munged.log"
}

# daemon LOG CMD... starts a self-daemonizing Slurm daemon with no inherited
# descriptors: a caller reading our stdout (Go's exec) must see EOF, and the
# lock on fd 9 must not outlive this script.
daemon() {
	local out=$1
	shift
	SLURM_CONF=$conf "$@" </dev/null >>"$out" 2>&1 9>&-
}

elapsed() { # elapsed T0 [T1] prints the seconds from T0 to T1 (or now), both $EPOCHREALTIME
	local then=${1/[.,]/} now=${2:-$EPOCHREALTIME}
	now=${now/[.,]/}
	printf '%d.%01d' $(((now - then) / 1000000)) $(((now - then) / 100000 % 10))
}

wait_for() { # wait_for SECONDS DESCRIPTION CMD...: polls CMD every 0.1s
	local secs=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	while ((SECONDS < deadline)); do
		"$@" && return 0
		sleep 0.1
	done
	log "timed out after ${secs}s waiting for $what"
	return 1
}

nodes_idle() {
	local idle
	idle=$(slurm sinfo -h -N -p "$PARTITION" -o '%N %T' 2>/dev/null | grep -c ' idle$') || true
	((idle == nodes))
}

# fail_start MESSAGE shows what went wrong (sinfo, the logs of slurmctld and
# of every node that is not idle), stops what was started and exits.
fail_start() {
	log "error: $1"
	local states="" name f
	if ctld_up; then
		states=$(slurm sinfo -h -N -o '%N %T %E' 2>/dev/null) || true
		log "sinfo -N:"
		printf '%s\n' "$states" >&2
	fi
	for f in "$logs/slurmctld.log" "$logs"/slurmd-*.log; do
		[[ -s $f ]] || continue
		name=${f##*/slurmd-}
		name=${name%.log}
		if [[ $f == */slurmd-* ]]; then
			grep -q "^$name idle " <<<"$states" && continue
			pid_of "$run/slurmd-$name.pid" slurmd >/dev/null || log "slurmd $name is not running"
		fi
		log "--- last lines of $f"
		# mpi/pmix complains on every start when libpmix is absent: noise.
		grep -v 'pmix\|MPI: Cannot create context' "$f" | tail -n 5 >&2 || true
	done
	stop_cluster
	die "$1; logs are in $logs"
}

cmd_start() {
	((EUID == 0)) || die "start needs root (slurmd runs jobs as their users)"
	have_programs || die "Slurm or munge is missing; run \"$0 install\""
	lock
	local t0=$EPOCHREALTIME
	# Restart from clean state: stop whatever a previous run left behind and
	# forget its jobs and node states (a drained node stays drained otherwise).
	stop_cluster keep-munged
	local t1=$EPOCHREALTIME p
	for ((p = port; p <= port + nodes; p++)); do
		! port_taken "$p" || die "port $p on 127.0.0.1 is in use ($(ss -tanpH "sport = :$p" 2>/dev/null | awk '{print $1, $NF}' | head -1)); pick another with --port"
	done
	rm -rf "$state_dir/ctld" "$state_dir/spool" "$logs.prev"
	[[ ! -d $logs ]] || mv "$logs" "$logs.prev"
	mkdir -p "$state_dir/ctld" "$run" "$logs"
	for ((p = 1; p <= nodes; p++)); do mkdir -p "$state_dir/spool/node$p"; done
	write_config
	printf 'nodes=%d\nport=%d\n' "$nodes" "$port" >"$state_dir/cluster.state"
	start_munged

	daemon "$logs/slurmctld.log" slurmctld -f "$conf" ||
		fail_start "slurmctld did not start"
	wait_for "$timeout" "slurmctld on port $port" ctld_up ||
		fail_start "slurmctld is not answering on 127.0.0.1:$port"
	for ((p = 1; p <= nodes; p++)); do
		daemon "$logs/slurmd-node$p.log" slurmd -f "$conf" -N "node$p" &
	done
	for ((p = 1; p <= nodes; p++)); do
		wait -n || fail_start "a slurmd did not start"
	done
	wait_for "$timeout" "$nodes idle nodes" nodes_idle ||
		fail_start "nodes did not become idle in ${timeout}s"
	log "$nodes nodes idle in partition $PARTITION after $(elapsed "$t1")s (stopping the old one took $(elapsed "$t0" "$t1")s); state in $state_dir"
	cmd_env
}

cmd_env() {
	[[ -r $conf ]] || die "no cluster in $state_dir (run start)"
	printf 'SLURM_CONF=%s\n' "$conf"
}

# ---------------------------------------------------------------- status

cmd_status() {
	local ok=0 pid f name
	if pid=$(pid_of "$munge_dir/munged.pid" munged); then
		echo "munged     running (pid $pid)"
	else
		echo "munged     stopped"
	fi
	if pid=$(pid_of "$run/slurmctld.pid" slurmctld); then
		echo "slurmctld  running (pid $pid)"
	else
		echo "slurmctld  stopped"
		ok=1
	fi
	local want=0
	[[ -r $state_dir/cluster.state ]] && want=$(sed -n 's/^nodes=//p' "$state_dir/cluster.state")
	for ((f = 1; f <= want; f++)); do
		name=node$f
		if pid=$(pid_of "$run/slurmd-$name.pid" slurmd); then
			printf 'slurmd     %s running (pid %s)\n' "$name" "$pid"
		else
			printf 'slurmd     %s stopped\n' "$name"
			ok=1
		fi
	done
	if ctld_up; then
		slurm sinfo -N -o '%N %P %T %E' || ok=1
	fi
	((want > 0)) || ok=1
	return "$ok"
}

main() {
	local cmd=${1:-}
	[[ -n $cmd ]] || {
		usage >&2
		exit 2
	}
	shift
	case $cmd in
	install) cmd_install ;;
	start) parse_flags "$@" && cmd_start ;;
	stop) parse_flags "$@" && cmd_stop ;;
	status) parse_flags "$@" && cmd_status ;;
	env) parse_flags "$@" && cmd_env ;;
	-h | --help | help) usage ;;
	*)
		usage >&2
		exit 2
		;;
	esac
}

main "$@"
