#!/usr/bin/env bash
# Runs Strata's test suite on a fresh Debian machine with Go: installs what
# the tests need (kcat, Chromium, iproute2, MinIO), then vets and tests
# every package (race detector on), and runs each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."

# need CMD PACKAGE installs Debian's PACKAGE when CMD is missing and this
# runs as root (apt-get update once), and says how otherwise; the tests
# that use CMD fail, not skip, without it.
updated=
need() {
	command -v "$1" >/dev/null 2>&1 && return
	apt_install "$1" "$2"
}
# need_python_module MODULE PACKAGE is need for a module of Debian's
# /usr/bin/python3 (where Debian's python3-* packages install), whichever
# python3 is first on PATH.
need_python_module() {
	/usr/bin/python3 -c "import $1" >/dev/null 2>&1 && return
	apt_install "the Python module $1" "$2"
}
apt_install() {
	if [ "$(id -u)" != 0 ]; then
		echo "$1 is missing; install it with: sudo apt-get install -y $2" >&2
		return
	fi
	[ -n "$updated" ] || { apt-get update -qq; updated=1; }
	apt-get install -y -qq "$2" >/dev/null
}
need kcat kcat         # the kcat end-to-end tests
need chromium chromium # the web console's browser test (internal/e2e/console_test.go)
need ip iproute2       # network namespaces for the chaos harness's cuts (internal/netns)
# confluent-kafka-python and kafkajs (internal/e2e/clients_test.go); the
# kafkajs test fetches kafkajs itself with npm ci.
need_python_module confluent_kafka python3-confluent-kafka
# kafka-python, one of the clients reading a cleaned compacted topic and a
# diskless one (internal/e2e/compact_clients_test.go, diskless_clients_test.go).
need_python_module kafka python3-kafka
need node nodejs
need npm npm

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# A real MinIO server for the object-store tests (internal/miniotest runs
# it; those tests fail without it). The version is docs/design.md §4's. On a
# machine with an empty module cache the install takes about four minutes.
# GOBIN is pinned to where the tests look, $(go env GOPATH)/bin.
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
gopath_bin="$(go env GOPATH | cut -d: -f1)/bin"
if ! command -v minio >/dev/null 2>&1 && [ ! -x "$gopath_bin/minio" ]; then
	echo "installing MinIO ($MINIO_MODULE) into $gopath_bin" >&2
	GOBIN="$gopath_bin" go install "$MINIO_MODULE"
fi

go vet ./...
# The agent must keep building where it is not tested: OS calls live in
# per-OS files (internal/vfs), and these catch one that slips out.
GOOS=darwin go build ./...
GOOS=darwin go vet ./internal/vfs/
GOOS=windows go build -o /dev/null ./cmd/... # no strata.exe left behind
go test -race -count=1 -timeout 20m ./...

# Fuzz targets, a few seconds each (their seed corpora already ran above).
# The budget is a count of executions, not a duration: with -fuzztime as a
# duration, Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" at the deadline and no failing input
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-20000x}" "$1"; }
fuzz ./agent/log/ FuzzRecovery
fuzz ./agent/log/batch/ FuzzValidate
fuzz ./agent/log/batch/ FuzzRecordsSection
fuzz ./agent/log/producers/ FuzzDecode
fuzz ./agent/metadata/ FuzzReadObjects
fuzz ./agent/txn/ FuzzDecodeRecord
fuzz ./agent/kafka/ FuzzHandleRequest
fuzz ./membership/ FuzzDecodeMeta
fuzz ./membership/ FuzzDecodeMessage
fuzz ./internal/scram/ FuzzConversation
fuzz ./internal/scram/ FuzzParsePlain
fuzz ./internal/oauthbearer/ FuzzParseClientResponse
fuzz ./internal/oauthbearer/ FuzzValidate
fuzz ./internal/oauthbearer/ FuzzParseJWKS
fuzz ./internal/scram/ FuzzParseBootstrap
fuzz ./tiering/sharedobj/ FuzzDecodeHeader
fuzz ./agent/batchcoord/ FuzzDecodeRun
fuzz ./agent/disklesswire/ FuzzDecode
