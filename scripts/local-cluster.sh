#!/usr/bin/env bash
# Runs the three-agent cluster of docker-compose.yml as local processes, for
# machines without Docker: one MinIO server holding the bucket the agents
# share, and agents 1, 2 and 3 joining each other by gossip. Everything
# listens on 127.0.0.1 only.
#
#   scripts/local-cluster.sh up        build strata, start MinIO and the agents, wait until ready
#   scripts/local-cluster.sh down      stop the processes `up` started (by their recorded PIDs)
#   scripts/local-cluster.sh status    show what runs and whether it is ready
#
# and, for internal/clustertopo's comparison with docker-compose.yml:
#
#   scripts/local-cluster.sh print-agents        the agent ids, one a line
#   scripts/local-cluster.sh print-flags N|minio the arguments agent N (or MinIO) is started with, one a line
#   scripts/local-cluster.sh print-env N|minio   the variables agent N (or MinIO) gets beyond the caller's
#
# The work directory (LOCAL_CLUSTER_DIR, default .local-cluster/ in the
# repository) holds the strata binary, MinIO's data, each agent's data
# directory, and the PID and log files. Ports may be moved with
# LOCAL_CLUSTER_KAFKA_PORTS, LOCAL_CLUSTER_HTTP_PORTS and
# LOCAL_CLUSTER_GOSSIP_PORTS (three space-separated ports each, for agents 1,
# 2 and 3), LOCAL_CLUSTER_MINIO_PORT and LOCAL_CLUSTER_MINIO_CONSOLE_PORT.
# The defaults are the host ports of docker-compose.yml, and every setting
# below mirrors it: internal/clustertopo fails when the two disagree.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${LOCAL_CLUSTER_DIR:-$repo/.local-cluster}
[[ $work == /* ]] || work=$PWD/$work
read -r -a kafka_ports <<<"${LOCAL_CLUSTER_KAFKA_PORTS:-19092 19093 19094}"
read -r -a http_ports <<<"${LOCAL_CLUSTER_HTTP_PORTS:-19644 19645 19646}"
read -r -a gossip_ports <<<"${LOCAL_CLUSTER_GOSSIP_PORTS:-17946 17947 17948}"
minio_port=${LOCAL_CLUSTER_MINIO_PORT:-9000}
minio_console_port=${LOCAL_CLUSTER_MINIO_CONSOLE_PORT:-9001}

# The settings docker-compose.yml also has.
agents=(1 2 3)
bucket=strata
prefix=cluster
region=us-east-1
minio_user=strata
minio_password=strata-secret

# The MinIO version scripts/test.sh installs (docs/design.md §4's).
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c

# Bounded waits, in seconds.
ready_timeout=60
stop_timeout=40

check_ports() {
	if [ "$2" -ne "${#agents[@]}" ]; then
		echo "local-cluster: $1 names $2 ports; want ${#agents[@]}, one per agent" >&2
		exit 2
	fi
}
check_ports LOCAL_CLUSTER_KAFKA_PORTS "${#kafka_ports[@]}"
check_ports LOCAL_CLUSTER_HTTP_PORTS "${#http_ports[@]}"
check_ports LOCAL_CLUSTER_GOSSIP_PORTS "${#gossip_ports[@]}"

# agent_flags N prints agent N's flags, one a line. docker-compose.yml gives
# the same flags; only addresses and the data directory differ, because the
# agents share one host here.
agent_flags() {
	local n=$1 i=$(($1 - 1)) join="" j
	for j in "${!agents[@]}"; do
		join+="${join:+,}127.0.0.1:${gossip_ports[j]}"
	done
	printf '%s\n' \
		"--agent-id=$n" \
		"--data-dir=$work/agent-$n" \
		"--store=s3://$bucket/$prefix?endpoint=http://127.0.0.1:$minio_port&region=$region&path-style=true" \
		"--kafka-addr=127.0.0.1:${kafka_ports[i]}" \
		"--advertised-kafka-addr=localhost:${kafka_ports[i]}" \
		"--http-addr=127.0.0.1:${http_ports[i]}" \
		"--gossip-addr=127.0.0.1:${gossip_ports[i]}" \
		"--join=$join"
}

# agent_env prints the variables every agent gets: MinIO's root user as
# the AWS SDK's credentials, and no instance-metadata lookups. (`up` also
# drops the caller's AWS_SESSION_TOKEN and AWS_PROFILE, so a developer's
# own AWS settings are never used.)
agent_env() {
	printf '%s\n' \
		"AWS_ACCESS_KEY_ID=$minio_user" \
		"AWS_SECRET_ACCESS_KEY=$minio_password" \
		"AWS_EC2_METADATA_DISABLED=true"
}

# minio_args prints MinIO's command line after the binary, one argument a
# line.
minio_args() {
	printf '%s\n' server \
		--address "127.0.0.1:$minio_port" \
		--console-address "127.0.0.1:$minio_console_port" \
		"$work/minio"
}

minio_env() {
	printf '%s\n' \
		"MINIO_ROOT_USER=$minio_user" \
		"MINIO_ROOT_PASSWORD=$minio_password"
}

die() {
	echo "local-cluster: $*" >&2
	exit 1
}

check_agent() {
	local n
	for n in "${agents[@]}"; do
		[ "$1" = "$n" ] && return 0
	done
	die "no agent $1 (agents: ${agents[*]})"
}

# http_ready HOST PORT PATH reports whether GET PATH answers 200. Plain bash
# (/dev/tcp), so neither curl nor wget is needed. A subshell, so a refused
# connection fails the function rather than the script.
http_ready() (
	exec 3<>"/dev/tcp/$1/$2" || exit 1
	printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "$3" "$1" "$2" >&3
	IFS= read -r -t 5 status <&3 || exit 1
	[[ $status == HTTP/1.?" 200"* ]]
) 2>/dev/null

# alive PID reports whether process PID runs. A zombie (exited, not yet
# reaped by whoever inherited it) does not.
alive() {
	local stat
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		stat=$(<"/proc/$1/stat") || return 1
		stat=${stat##*) }
		[ "${stat%% *}" != Z ] || return 1
	fi
	return 0
}

# pid_of NAME prints the recorded PID of NAME (minio, agent-1, ...) if that
# process still runs and is the one this work directory started; a PID the
# system has since reused for something else is never reported.
pid_of() {
	local file="$work/$1.pid" pid args
	[ -f "$file" ] || return 1
	pid=$(<"$file")
	[[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
	if [ -r "/proc/$pid/cmdline" ]; then
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	else
		args=$(ps -p "$pid" -o args= 2>/dev/null) || return 1
	fi
	[[ $args == *"$work"* ]] || return 1
	echo "$pid"
}

# stop NAME ends NAME's recorded process: SIGTERM, then SIGKILL after
# stop_timeout seconds.
stop() {
	local name=$1 pid waited=0
	if pid=$(pid_of "$name"); then
		kill -TERM "$pid" 2>/dev/null || true
		while alive "$pid"; do
			if [ "$waited" -ge $((stop_timeout * 10)) ]; then
				echo "local-cluster: $name (pid $pid) still runs ${stop_timeout}s after SIGTERM; killing it" >&2
				kill -KILL "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.1
			waited=$((waited + 1))
		done
		echo "stopped $name (pid $pid)"
	fi
	rm -f "$work/$name.pid"
}

stop_all() {
	local i
	for ((i = ${#agents[@]} - 1; i >= 0; i--)); do
		stop "agent-${agents[i]}"
	done
	stop minio
}

# wait_ready NAME HOST PORT PATH waits up to ready_timeout seconds for
# NAME's readiness endpoint. On failure it shows NAME's log, stops
# everything it started, and exits.
wait_ready() {
	local name=$1 tries=0 pid
	pid=$(<"$work/$name.pid")
	until http_ready "$2" "$3" "$4"; do
		# Whether the process we just started is alive, not pid_of: its
		# command-line check fails in the moment between the fork and the
		# exec of the child, which a loaded machine stretches.
		if ! alive "$pid"; then
			fail "$name exited before it became ready" "$name"
		fi
		if [ "$tries" -ge $((ready_timeout * 10)) ]; then
			fail "$name is not ready after ${ready_timeout}s (http://$2:$3$4)" "$name"
		fi
		sleep 0.1
		tries=$((tries + 1))
	done
}

fail() {
	echo "local-cluster: $1; the end of $work/$2.log:" >&2
	tail -n 40 "$work/$2.log" >&2 || true
	stop_all >&2
	exit 1
}

minio_binary() {
	local gopath_bin
	gopath_bin="$(go env GOPATH | cut -d: -f1)/bin"
	if command -v minio >/dev/null 2>&1; then
		command -v minio
	elif [ -x "$gopath_bin/minio" ]; then
		echo "$gopath_bin/minio"
	else
		echo "installing MinIO ($MINIO_MODULE) into $gopath_bin; this takes a few minutes" >&2
		GOBIN="$gopath_bin" go install "$MINIO_MODULE"
		echo "$gopath_bin/minio"
	fi
}

# without_strata_env prints `-u NAME` for every STRATA_* variable of the
# caller, which `env` then drops: an agent here takes its settings from its
# flags alone, as in docker-compose.yml.
without_strata_env() {
	local name
	for name in $(compgen -e); do
		[[ $name == STRATA_* ]] && printf -- '-u\n%s\n' "$name"
	done
	return 0
}

up() {
	local name n i minio flags envs args unset
	for name in minio "${agents[@]/#/agent-}"; do
		if pid_of "$name" >/dev/null; then
			die "$name already runs (pid $(pid_of "$name")); run: $0 down"
		fi
	done
	mkdir -p "$work"
	# Keep the work directory out of git however it is named.
	[ -f "$work/.gitignore" ] || echo '*' >"$work/.gitignore"

	minio=$(minio_binary)
	echo "building $work/strata"
	(cd "$repo" && go build -o "$work/strata" ./cmd/strata)

	# A top-level directory of a single-drive MinIO data directory is a
	# bucket: making it before the start creates the bucket with no client.
	mkdir -p "$work/minio/$bucket"
	mapfile -t envs < <(minio_env)
	mapfile -t args < <(minio_args)
	env -u MINIO_ACCESS_KEY -u MINIO_SECRET_KEY "${envs[@]}" MINIO_UPDATE=off \
		"$minio" "${args[@]}" </dev/null >"$work/minio.log" 2>&1 &
	echo $! >"$work/minio.pid"
	wait_ready minio 127.0.0.1 "$minio_port" /minio/health/ready
	echo "minio ready on 127.0.0.1:$minio_port (pid $(<"$work/minio.pid"))"

	mapfile -t envs < <(agent_env)
	mapfile -t unset < <(without_strata_env)
	for n in "${agents[@]}"; do
		mapfile -t flags < <(agent_flags "$n")
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE ${unset[@]+"${unset[@]}"} "${envs[@]}" \
			"$work/strata" agent "${flags[@]}" </dev/null >"$work/agent-$n.log" 2>&1 &
		echo $! >"$work/agent-$n.pid"
	done
	for i in "${!agents[@]}"; do
		n=${agents[i]}
		wait_ready "agent-$n" 127.0.0.1 "${http_ports[i]}" /readyz
		echo "agent-$n ready: kafka localhost:${kafka_ports[i]}, http http://127.0.0.1:${http_ports[i]} (pid $(<"$work/agent-$n.pid"))"
	done

	cat <<EOF

The cluster runs. Point a Kafka client at any agent, for example:
  kcat -b localhost:${kafka_ports[0]} -L
  $work/strata topic list --bootstrap localhost:${kafka_ports[0]}
MinIO: http://127.0.0.1:$minio_port (console http://127.0.0.1:$minio_console_port, user $minio_user, password $minio_password), bucket $bucket, prefix $prefix/
Logs and PIDs: $work/*.log, $work/*.pid
Stop it with: $0 down
EOF
}

status() {
	local name i pid state
	for name in minio "${agents[@]/#/agent-}"; do
		if pid=$(pid_of "$name"); then
			if [ "$name" = minio ]; then
				http_ready 127.0.0.1 "$minio_port" /minio/health/ready && state=ready || state="not ready"
			else
				i=$((${name#agent-} - 1))
				http_ready 127.0.0.1 "${http_ports[i]}" /readyz && state=ready || state="not ready"
			fi
			printf '%-8s pid %-8s %s\n' "$name" "$pid" "$state"
		else
			printf '%-8s stopped\n' "$name"
		fi
	done
}

case "${1:-}" in
up) up ;;
down) stop_all ;;
status) status ;;
print-agents) printf '%s\n' "${agents[@]}" ;;
print-flags)
	if [ "${2:-}" = minio ]; then
		minio_args
	else
		check_agent "${2:-}"
		agent_flags "$2"
	fi
	;;
print-env)
	if [ "${2:-}" = minio ]; then
		minio_env
	else
		check_agent "${2:-}"
		agent_env
	fi
	;;
*)
	echo "usage: $0 up|down|status|print-agents|print-flags N|print-flags minio|print-env N|print-env minio" >&2
	exit 2
	;;
esac
