#!/usr/bin/env bash
# Runs Strata's test suite on a fresh Debian machine with Go: installs what
# the tests need (kcat, Chromium, MinIO), then vets and tests every package (race
# detector on), and runs each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kcat >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq kcat >/dev/null
	else
		echo "kcat is missing; install it with: sudo apt-get install -y kcat" >&2
	fi
fi
# Debian's Chromium, which the web console's browser test drives headless
# (internal/e2e/console_test.go fails without it).
if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null
	else
		echo "chromium is missing; install it with: sudo apt-get install -y chromium" >&2
	fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# A real MinIO server for the object-store tests (internal/miniotest runs
# it; those tests fail without it). The version is DESIGN.md §4's. On a
# machine with an empty module cache the install takes about four minutes.
# GOBIN is pinned to where the tests look, $(go env GOPATH)/bin.
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
gopath_bin="$(go env GOPATH | cut -d: -f1)/bin"
if ! command -v minio >/dev/null 2>&1 && [ ! -x "$gopath_bin/minio" ]; then
	echo "installing MinIO ($MINIO_MODULE) into $gopath_bin" >&2
	GOBIN="$gopath_bin" go install "$MINIO_MODULE"
fi

go vet ./...
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
fuzz ./agent/metadata/ FuzzReadObjects
fuzz ./agent/kafka/ FuzzHandleRequest
fuzz ./membership/ FuzzDecodeMeta
fuzz ./membership/ FuzzDecodeMessage
