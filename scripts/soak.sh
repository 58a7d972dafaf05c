#!/usr/bin/env bash
# soak.sh: a long run of one server and many bots on loopback, optionally
# beside a load that saturates every core, that ends with a verdict: every
# player still connected, every reliable echo back exactly once, no desync,
# and the hiccups the bots lived through (sessions lost, rejoined).
#
#   scripts/soak.sh [-d DURATION] [-headless N] [-full N] [-busy]
#
# -busy runs a busy loop per core beside the run (what a build does to a
# shared machine). The binaries are built into a temporary directory; the
# server's log and the bots' summaries are kept there and named at the end.
set -euo pipefail

duration=15m
headless=64
full=8
busy=0
while [ $# -gt 0 ]; do
	case "$1" in
	-d) duration="$2"; shift 2 ;;
	-headless) headless="$2"; shift 2 ;;
	-full) full="$2"; shift 2 ;;
	-busy) busy=1; shift ;;
	*) echo "soak.sh: unknown argument $1 (use -d DURATION, -headless N, -full N, -busy)" >&2; exit 2 ;;
	esac
done

dir=$(mktemp -d /tmp/tickwire-soak.XXXXXX)
cd "$(dirname "$0")/.."
go build -o "$dir/" ./cmd/tickwire-server ./cmd/tickwire-bot

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

"$dir/tickwire-server" -listen 127.0.0.1:0 -http 127.0.0.1:0 -admin 127.0.0.1:0 -dev-join \
	-max-players $((headless + full + 16)) -key-file "$dir/server.key" >"$dir/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	http=$(sed -n 's/.*msg="serving HTTP" addr=\([^ ]*\).*/\1/p' "$dir/server.log" | head -1)
	[ -n "$http" ] && break
	sleep 0.1
done
if [ -z "${http:-}" ]; then
	echo "soak.sh: the server did not start:" >&2
	cat "$dir/server.log" >&2
	exit 1
fi

if [ "$busy" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		pids+=($!)
	done
fi

start=$(date +%s)
"$dir/tickwire-bot" -server "http://$http" -n "$headless" -headless -duration "$duration" -json -progress 1m \
	>"$dir/headless.json" 2>"$dir/headless.log" &
hb=$!
"$dir/tickwire-bot" -server "http://$http" -n "$full" -duration "$duration" -json -progress 1m \
	>"$dir/full.json" 2>"$dir/full.log" &
fb=$!
status=0
wait "$hb" || status=1
wait "$fb" || status=1
took=$(($(date +%s) - start))

field() { grep -o "\"$2\":[^,}]*" "$dir/$1.json" | head -1 | cut -d: -f2; }
p50() { grep -o "\"$2\":{\"p50\":[0-9.]*" "$dir/$1.json" | head -1 | sed 's/.*://'; }
echo "soak: $duration, $headless headless and $full full bots$([ "$busy" = 1 ] && echo ", beside $(nproc) busy loops"), took ${took}s"
for b in headless full; do
	echo "  $b: connected $(field $b connected)/$(field $b clients), disconnects $(field $b disconnects)," \
		"reliable sent $(field $b reliable_sent) lost $(field $b reliable_lost) duplicates $(field $b reliable_duplicates)," \
		"desyncs $(field $b desyncs), sessions lost $(field $b interruptions), rejoined $(field $b rejoins)," \
		"rejoin p50 $(p50 $b rejoin_ms) ms max $(field $b rejoin_max_ms) ms, joined again as new $(field $b new_players)"
done
echo "  server: $(grep -c 'msg="client interrupted"' "$dir/server.log") interruptions, $(grep -c 'msg="players rejoined"' "$dir/server.log") rejoins," \
	"$(grep -c 'msg="player left"' "$dir/server.log") leaves, $(grep -c 'server loop stalled' "$dir/server.log") loop stalls"
echo "  logs and summaries: $dir"
if [ "$status" != 0 ]; then
	echo "soak: FAILED (a bot's run failed: see its summary)"
	exit 1
fi
echo "soak: ok"
