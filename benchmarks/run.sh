#!/usr/bin/env bash
# benchmarks/run.sh reruns issue 7's benchmark matrix against Strata and
# its peers (kfake, NATS JetStream with defaults and with sync_interval:
# always), then regenerates benchmarks/README.md and its plots from the
# results with benchmarks/cmd/strata-bench-report.
#
#   benchmarks/run.sh                  # the full matrix, 3 runs each (~15-20 min on 2 cores)
#   RUNS=5 DURATION=10s benchmarks/run.sh
#   SMOKE=1 benchmarks/run.sh          # seconds: one tiny run per system, README to a temp dir
#   SCENARIOS=security RUNS=3 DURATION=5s benchmarks/run.sh   # SASL_SSL against plaintext alone
#   SCENARIOS=transactions RUNS=3 DURATION=5s benchmarks/run.sh   # transactional produce alone
#   SCENARIOS=compaction RUNS=5 DURATION=10s benchmarks/run.sh    # the log cleaner on against off
#   SCENARIOS=diskless RUNS=3 DURATION=5s benchmarks/run.sh       # classic against diskless topics, and their PUTs
#
# Settings (environment):
#   RUNS       runs per system and scenario (3)
#   DURATION   length of each timed produce phase (5s)
#   NOTES      a file of free text placed in the README (what the machine was doing)
#   RESULTS    where the JSON result lines go (benchmarks/results.jsonl)
#   STRATA_BIN a built strata binary (e.g. from a clean checkout while the
#              working tree is being edited); empty builds ./cmd/strata
#   SMOKE=1    one run of a few tiny scenarios, results and report written
#              to a new temporary directory (printed, left for reading)
#   SCENARIOS  all (the default): the whole matrix, whose results replace
#              RESULTS; security: only the SASL_SSL-against-plaintext pair
#              (one agent's two listeners), whose results replace the
#              pair's earlier lines in RESULTS, the rest kept;
#              transactions: only transactional produce against the same
#              workload without transactions (Strata and kfake), likewise;
#              compaction: only a keyed workload on a compacted topic, an
#              agent with the log cleaner against one without, likewise;
#              diskless: only classic against diskless topics on one
#              agent on MinIO, with the diskless runs' PUTs, likewise
#
# RESULTS starts each invocation's lines with the command that made them
# ({"command": ...}); the README quotes every command in the file.
#
# Every system runs as a process of its own on loopback, with its data
# under $TMPDIR (set TMPDIR to put it on another disk). Processes are
# stopped by the PIDs the harness started. Runs within a scenario alternate
# between systems, so drift on a shared machine hits each alike.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
RESULTS=${RESULTS:-benchmarks/results.jsonl}
NOTES=${NOTES:-}
SMOKE=${SMOKE:-}
SCENARIOS=${SCENARIOS:-all}
case $SCENARIOS in
all | security | transactions | compaction | diskless) ;;
*)
	echo "SCENARIOS=$SCENARIOS: want all, security, transactions, compaction or diskless" >&2
	exit 2
	;;
esac
scenarios_prefix=
[[ $SCENARIOS != all ]] && scenarios_prefix="SCENARIOS=$SCENARIOS "
# SCENARIOS comes first, so that a later invocation of the same subset
# finds this one's command line by its start and replaces it.
command_line="$scenarios_prefix${STRATA_BIN:+STRATA_BIN=$STRATA_BIN }RUNS=$RUNS DURATION=$DURATION${SMOKE:+ SMOKE=1} benchmarks/run.sh"

bin=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-run-XXXXXX")
trap 'rm -rf "$bin"' EXIT
if [[ -n ${STRATA_BIN:-} ]]; then
	cp "$STRATA_BIN" "$bin/strata"
else
	go build -o "$bin/strata" ./cmd/strata
fi
go build -o "$bin/strata-bench" ./benchmarks/cmd/strata-bench
go build -o "$bin/strata-bench-report" ./benchmarks/cmd/strata-bench-report
go build -o "$bin/kfake-server" ./benchmarks/cmd/kfake-server
go build -o "$bin/jetstream-server" ./benchmarks/cmd/jetstream-server

template=benchmarks/README.tmpl.md
out=benchmarks/README.md
if [[ -n $SMOKE ]]; then
	smoke_dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-smoke-XXXXXX")
	RESULTS=$smoke_dir/results.jsonl
	out=$smoke_dir/README.md
	RUNS=1
fi
partial=$RESULTS.partial
json_string() {
	local s=${1//\\/\\\\}
	printf '"%s"' "${s//\"/\\\"}"
}
printf '{"command":%s,"start":"%s"}\n' "$(json_string "$command_line")" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$partial"
ran=() # the scenarios this invocation ran

# bench SCENARIO TARGETS [strata-bench flags...]: runs one scenario on the
# given systems, appending its JSON lines to the partial results.
bench() {
	local scenario=$1 targets=$2
	shift 2
	ran+=("$scenario")
	echo "== $scenario on $targets ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
	"$bin/strata-bench" --strata-bin "$bin/strata" --peer-bin-dir "$bin" \
		--scenario "$scenario" --target "$targets" --runs "$RUNS" \
		--record-bytes 1024 --linger 0 "$@" >>"$partial" ||
		echo "== $scenario failed; the report shows what was measured before it" >&2
}

all=strata,kfake,jetstream,jetstream-sync
peers=strata,kfake,jetstream

# security SECONDS: SASL_SSL against plaintext (issue 20) on one agent
# with both listeners (strata-bench's strata-security target: the systems
# strata-plaintext and strata-sasl-ssl, runs alternating), with
# produce-acks-all's workload for throughput and paced-20000's for p99.
# A ratio near 1 is what it measures, so a discarded warm-up round on the
# fresh agent keeps its start out of whichever listener would run first.
security() {
	bench security-produce-acks-all strata-security --warmup-runs 1 --acks all --partitions 1 --producers 1 --duration "$1"
	bench security-paced-20000 strata-security --warmup-runs 1 --mode e2e --acks all --rate 20000 --duration "$1"
}

# transactions SECONDS: issue 21's row. Closed loop, one producer, one
# partition, acks=all, committing every 100 records, on Strata and kfake;
# then the same workload without transactions, so that the cost of the
# commits reads off one invocation.
transactions() {
	bench txn-produce strata,kfake --acks all --partitions 1 --producers 1 --txn-records 100 --duration "$1"
	bench txn-baseline strata,kfake --acks all --partitions 1 --producers 1 --duration "$1"
}

# compaction SECONDS: issue 22's row. paced-20000's rate, acks=all, one
# partition, with every record one of 10,000 keys in turn on a compacted
# topic of 4 MiB segments: each key is rewritten twice a second, so the
# cleaner, which never touches the active segment, has sealed segments to
# clean all through the run. strata-bench's strata-compaction target is
# two agents, with the cleaner (strata-cleaner) and without
# (strata-no-cleaner), runs alternating; a discarded warm-up round on each
# keeps their start out of the ratio. Produce mode, without a tail
# consumer: the cleaner may remove a record a lagging consumer has not yet
# read, which the harness would count as lost. Both agents look for dirty
# logs every 100 ms instead of Kafka's 15 s (--log-cleaner-backoff), so that
# the cleaner starts on each run's fresh topic within the run.
compaction() {
	bench compaction-paced-20000 strata-compaction --warmup-runs 1 --mode produce --acks all --rate 20000 \
		--keys 10000 --compact --duration "$1" --strata-arg=--log-cleaner-backoff=100ms
}

# diskless SECONDS: issue 34's rows. strata-bench's strata-diskless
# target is one agent with its defaults and its store on a MinIO process
# on loopback, run as two systems whose runs alternate: strata-classic
# creates each run's topic classic (replication factor 1, answered after
# the local fsync), strata-diskless with diskless.enable=true (answered
# once the batch's commit object is PUT and committed; the write buffer
# is cut every 250 ms or at 8 MiB, the defaults). One agent serves both,
# so that the topic's mode is the only difference; a discarded warm-up
# round on each keeps the agent's start, and the creation of
# __diskless_state on the first diskless topic, out of the measured runs.
# Throughput: a closed loop over 8 partitions from 4 producers, so that
# the write buffer batches many partitions' batches into each object.
# Each producer keeps 10,000 records (10 MB) unacknowledged and, being
# idempotent, up to 5 Produce requests in flight, so about 40 MB are
# under way, below the agent's 64 MiB --diskless-buffer-max-bytes:
# throughput is that window over the commit time, not one request per
# interval (1/latency), and the buffer is cut by size as well as by time.
# Latency: paced-5000's workload (one partition, one producer) with a
# tail consumer. Every run counts the store's PUTs, the commit objects
# and the commit times of its timed phase, from the agent's /metrics.
# About two minutes at RUNS=3 DURATION=5s.
diskless() {
	bench diskless-produce-p8-x4 strata-diskless --warmup-runs 1 --acks all --partitions 8 --producers 4 \
		--max-buffered-records 10000 --duration "$1"
	bench diskless-paced-5000 strata-diskless --warmup-runs 1 --mode e2e --acks all --rate 5000 --duration "$1"
}

if [[ $SCENARIOS == security ]]; then
	security "$([[ -n $SMOKE ]] && echo 1s || echo "$DURATION")"
elif [[ $SCENARIOS == transactions ]]; then
	transactions "$([[ -n $SMOKE ]] && echo 1s || echo "$DURATION")"
elif [[ $SCENARIOS == compaction ]]; then
	compaction "$([[ -n $SMOKE ]] && echo 1s || echo "$DURATION")"
elif [[ $SCENARIOS == diskless ]]; then
	diskless "$([[ -n $SMOKE ]] && echo 1s || echo "$DURATION")"
elif [[ -n $SMOKE ]]; then
	bench produce-acks-all "$all" --acks all --duration 1s --max-buffered-records 100
	bench paced-1000 "$peers" --mode e2e --acks all --rate 1000 --duration 1s
	bench connections-100 "$peers" --mode e2e --acks all --rate 1000 --connections 100 --duration 1s
	security 1s
	transactions 1s
	compaction 1s
	diskless 1s
else
	"$bin/strata-bench" --target= --limits 3s --runs "$RUNS" >>"$partial"
	# Closed loop: throughput. One partition and one producer first, the
	# row the throughput targets read.
	bench produce-acks-all "$all" --acks all --partitions 1 --producers 1 --duration "$DURATION"
	bench produce-acks-1 strata,kfake --acks 1 --partitions 1 --producers 1 --duration "$DURATION"
	bench produce-acks-all-p8 "$peers" --acks all --partitions 8 --producers 1 --duration "$DURATION"
	bench produce-acks-all-x4 "$peers" --acks all --partitions 1 --producers 4 --duration "$DURATION"
	bench produce-acks-all-p8-x4 "$peers" --acks all --partitions 8 --producers 4 --duration "$DURATION"
	# Open loop with a tail consumer: latency at fixed loads, for the
	# latency-vs-throughput curves; 20,000/s is the target's load.
	# jetstream-sync keeps up with none of these (see produce-acks-all),
	# so it runs only at 500/s.
	bench paced-500 "$all" --mode e2e --acks all --rate 500 --duration "$DURATION"
	for rate in 5000 20000 40000; do
		bench "paced-$rate" "$peers" --mode e2e --acks all --rate "$rate" --duration "$DURATION"
	done
	# paced-5000's workload with 1,000 idle client connections held open
	# besides it, each asking for Metadata (JetStream: a PING) every 3 s:
	# does a system keep its latency while it holds them? The report
	# compares it with paced-5000. The harness needs about 1,100 open
	# files, and so does each system; it checks both before the run.
	bench connections-1000 "$peers" --mode e2e --acks all --rate 5000 --connections 1000 --duration "$DURATION"
	# Catch-up from the local log: fill 200,000 records (205 MB), then a
	# new consumer reads them from offset 0.
	bench catchup-local "$peers" --mode catchup --acks all --records 200000 --producers 2 --drain-timeout 120s
	# Catch-up from MinIO: the same 200,000 records with the agent's store
	# on a MinIO process the harness starts, read once every sealed 4 MiB
	# segment is uploaded and deleted locally; cold (the first read) and
	# warm (a second read, timed). Short tiering and retention intervals
	# only shorten the wait before the read.
	for temp in cold warm; do
		warm=()
		[[ $temp == warm ]] && warm=(--warm)
		bench "catchup-minio-$temp" strata-minio --mode catchup-store --acks all --records 200000 --producers 2 \
			--drain-timeout 180s --strata-arg=--tiering-interval=200ms --strata-arg=--retention-check-interval=200ms "${warm[@]}"
	done
	# Three agents, replication factor 3, the produce-acks-all workload.
	bench rf3-acks-all strata-cluster --replication-factor 3 --acks all --duration "$DURATION"
	# Many partitions: one producer spread over 1,000 of them.
	bench partitions-1000 strata,kfake --acks all --partitions 1000 --duration "$DURATION" --drain-timeout 120s
	# Object-store cost with default settings: over 1 GiB in, so that the
	# 1 GiB default segment seals and is uploaded; PUTs counted until the
	# count stands still for 5 s.
	RUNS=1 bench store-cost strata --acks all --records 1200000 --producers 4 --upload-settle 5s --drain-timeout 180s
	security "$DURATION"
	transactions "$DURATION"
	compaction "$DURATION"
	diskless "$DURATION"
fi

if [[ $SCENARIOS == all || ! -f $RESULTS ]]; then
	mv "$partial" "$RESULTS"
else
	# Keep every line but the earlier results of the scenarios just run
	# and the command line of an earlier invocation of this subset, then
	# append this invocation's.
	drop=(-e "{\"command\":\"$scenarios_prefix")
	for s in "${ran[@]}"; do
		drop+=(-e "\"scenario\":\"$s\"")
	done
	{ grep -v -F "${drop[@]}" "$RESULTS" || true; } >"$RESULTS.kept"
	cat "$RESULTS.kept" "$partial" >"$RESULTS"
	rm "$RESULTS.kept" "$partial"
fi
notes_flag=()
[[ -n $NOTES ]] && notes_flag=(--notes "$NOTES")
"$bin/strata-bench-report" --in "$RESULTS" --template "$template" --out "$out" "${notes_flag[@]}"
echo "wrote $out from $RESULTS" >&2
if [[ -n $SMOKE ]]; then
	ls -l "$smoke_dir" >&2
fi
