#!/usr/bin/env bash
# benchmarks/idle-fetches.sh prints the inter-agent Fetch requests of an
# idle cluster (issue 33's target: a follower of an RF 3 topic of 1,000
# partitions sends at most 1/50 of its partitions' count a second). It
# starts three agents on loopback sharing a file:// store, creates one
# topic of PARTITIONS partitions at replication factor 3, waits until no
# partition is under-replicated, and counts the Fetch requests each agent
# receives, as leader, over 10 s: with a fetch session per follower and
# leader, that is two long polls a second per follower, whatever the
# partition count.
#
#   benchmarks/idle-fetches.sh                     # builds ./cmd/strata
#   STRATA_BIN=/path/strata PARTITIONS=2000 benchmarks/idle-fetches.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PARTITIONS=${PARTITIONS:-1000}
run=$(mktemp -d "${TMPDIR:-/tmp}/strata-idle-fetches-XXXXXX")
pids=()
cleanup() {
	[[ ${#pids[@]} -gt 0 ]] && kill "${pids[@]}" 2>/dev/null && wait "${pids[@]}" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
bin=${STRATA_BIN:-}
if [[ -z $bin ]]; then
	bin=$run/strata
	go build -o "$bin" ./cmd/strata
fi
for i in 0 1 2; do
	join=()
	[[ $i -gt 0 ]] && join=(--join 127.0.0.1:19960)
	"$bin" agent --agent-id "$i" --data-dir "$run/d$i" --store "file://$run/store" \
		--kafka-addr "127.0.0.1:1910$i" --http-addr "127.0.0.1:1920$i" --gossip-addr "127.0.0.1:1996$i" \
		"${join[@]}" >"$run/log$i" 2>&1 &
	pids+=($!)
	sleep 2
done
sleep 5
"$bin" --bootstrap 127.0.0.1:19100 topic create idle --partitions "$PARTITIONS" --replication-factor 3
metric() { # metric NAME-PREFIX: the sum of its samples on each agent
	for i in 0 1 2; do
		curl -s "http://127.0.0.1:1920$i/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $NF} END {printf "%d ", s}'
	done
}
for _ in $(seq 1 150); do
	[[ $(metric 'strata_under_replicated_partitions ') == "0 0 0 " ]] && break
	sleep 2
done
echo "under-replicated partitions per agent: $(metric 'strata_under_replicated_partitions ')"
sleep 5
before=($(metric 'strata_kafka_requests_total{api="1"'))
sleep 10
after=($(metric 'strata_kafka_requests_total{api="1"'))
total=0
for i in 0 1 2; do
	n=$((after[i] - before[i]))
	total=$((total + n))
	echo "agent $i received $n Fetch requests in 10 s"
done
# Each agent follows the partitions it does not lead: two thirds of them.
awk -v t="$total" -v p="$PARTITIONS" 'BEGIN {
	per = t / 3 / 10; follows = p * 2 / 3
	printf "per follower: %.1f requests/s while following %d partitions: 1/%.0f of them a second (target: at most 1/50)\n", per, follows, follows / per
}'
