#!/usr/bin/env bash
# Runs Strata's test suite on a fresh Debian machine with Go: installs what
# the tests need, then vets and tests every package (race detector on), and
# runs each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kcat >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq kcat >/dev/null
	else
		echo "kcat is missing; install it with: sudo apt-get install -y kcat" >&2
	fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
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
