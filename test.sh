#!/usr/bin/env bash
# Runs every tickwire test on a Debian/Ubuntu machine with Go installed:
# installs the tools the tests drive (tshark, chromium, tc, nft) with apt-get when
# they are missing and Zig from its npm package, then runs gofmt, go vet,
# staticcheck, go test, the race detector over the packages under the server
# and a short run of every fuzz target.
#
#   ./test.sh                  everything (what CI runs)
#   FUZZTIME=60s ./test.sh     longer fuzzing
#   SKIP_FUZZ=1 ./test.sh      no fuzzing
set -euo pipefail
cd "$(dirname "$0")"

FUZZTIME=${FUZZTIME:-3s}
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Each step's heading gives the seconds since the start, so a slow step
# shows in any log.
start=$SECONDS
step() { printf '\n== %s (at %ds)\n' "$*" $((SECONDS - start)); }

# Tools the tests drive. Package name for apt-get : command to look for.
# nftables builds the NATs of the NAT traversal tests (internal/natlab).
tools=(tshark:tshark chromium:chromium iproute2:tc nftables:nft)
missing=()
for t in "${tools[@]}"; do
	command -v "${t#*:}" >/dev/null 2>&1 || missing+=("${t%%:*}")
done
if ((${#missing[@]})); then
	step "installing ${missing[*]}"
	sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	"${sudo[@]}" apt-get update
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
# Zig 0.11.0 for the C ABI's Zig tests, from its npm package into
# ~/.cache/tickwire (instant once there).
step "zig"
TICKWIRE_ZIG=$(scripts/install-zig.sh)
export TICKWIRE_ZIG

# The tests fail instead of skipping when a tool is missing.
export TICKWIRE_REQUIRE_TOOLS=1

step gofmt
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step staticcheck
go run "$STATICCHECK" ./...

step "go test"
go test -count=1 $(go list ./... | grep -v /cmd/e2e)

# The end-to-end tests run real processes (servers, bots, netem, browsers)
# in real time: alone, not beside the other packages' tests, which would
# take the cores their timing needs; for several minutes, more than go
# test's default 10-minute limit on a busy machine.
step "go test (end to end)"
go test -count=1 -parallel 3 -timeout 30m ./cmd/e2e

# The race detector over the packages under the server (about a minute
# and a half on 2 cores); the root package and the end-to-end tests take longer
# under it: go test -race . ./cmd/e2e by hand.
step "go test -race (packages under the server)"
if [ "$(go env CGO_ENABLED)" = 1 ] && command -v "$(go env CC)" >/dev/null; then
	# -short: the race detector looks for unsynchronised access, which
	# the long statistical runs (skipped in -short) add nothing to; the
	# docs test runs commands, not server code.
	go test -race -short -count=1 $(go list ./deltacomp ./interest ./internal/... | grep -v /internal/doccmd) ./reliability ./sim ./udp/... ./proto ./migrate ./replay ./webgate ./lobby ./relay ./fleet/...
else
	echo "(skipped: -race needs cgo and a C compiler)"
fi

if [ -z "${SKIP_FUZZ:-}" ]; then
	step "fuzz ($FUZZTIME per target)"
	grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
		dir=$(dirname "$file")
		for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
			printf -- '-- %s %s: ' "$dir" "$name"
			if out=$(go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$dir" 2>&1); then
				echo "$out" | grep -o 'execs: [0-9]*' | tail -n 1
			elif ! grep -q 'Failing input written' <<<"$out" && grep -q '^    context deadline exceeded$' <<<"$out"; then
				# Go 1.26's fuzz coordinator can report its own -fuzztime
				# deadline as a failure when a worker is slow to stop
				# (golang/go#75804, fixed in Go 1.27). A real finding
				# writes its input to testdata/fuzz and fails above.
				echo "$out" | grep -o 'execs: [0-9]*' | tail -n 1 | tr '\n' ' '
				echo "(stopped by the toolchain's fuzztime race golang/go#75804; no failing input)"
			else
				echo FAILED; echo "$out"; exit 1
			fi
		done
	done
fi

step "all tests passed"
