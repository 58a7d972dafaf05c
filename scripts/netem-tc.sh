#!/usr/bin/env bash
# Runs netem profiles with the real kernel qdisc (tc qdisc ... netem) in
# two network namespaces joined by a veth pair, and the same profiles
# through tickwire-netem on loopback, and prints what a probe measured
# through each, so the userspace emulation can be checked against Linux.
#
#   scripts/netem-tc.sh [-spec SPEC] [-up-spec SPEC] [-down-spec SPEC] [-n COUNT] [-- COMMAND ARGS...]
#
#   -spec       netem spec for both directions (default "delay 20ms 5ms loss 2%")
#   -up-spec    namespace A → B (client → server); replaces -spec that way
#   -down-spec  namespace B → A; replaces -spec that way
#   -n          probes to send (default 2000, one per millisecond)
#   COMMAND     instead of the probe, run COMMAND inside namespace A with
#               TW_NETNS_A, TW_NETNS_B, TW_ADDR_A and TW_ADDR_B set (start
#               your server with: ip netns exec "$TW_NETNS_B" ...)
#
# Needs root, iproute2 (ip, tc) and a kernel with sch_netem. Where the
# kernel has no netem qdisc (tc says the qdisc kind is unknown) or the
# namespaces cannot be made, it prints "SKIP: <reason>" and exits 0
# (exit 77 instead with NETEM_TC_STRICT=1).
set -euo pipefail
cd "$(dirname "$0")/.."

spec="delay 20ms 5ms loss 2%"
up_spec="" down_spec="" count=2000
while (($#)); do
	case "$1" in
	-spec) spec=$2; shift 2 ;;
	-up-spec) up_spec=$2; shift 2 ;;
	-down-spec) down_spec=$2; shift 2 ;;
	-n) count=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	*) echo "netem-tc.sh: unknown argument $1 (see -h)" >&2; exit 2 ;;
	esac
done
up_spec=${up_spec:-$spec}
down_spec=${down_spec:-$spec}

skip() {
	echo "SKIP: $*"
	[ -n "${NETEM_TC_STRICT:-}" ] && exit 77
	exit 0
}

for tool in ip tc; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (install iproute2)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"

ns_a="tw-netem-a-$$" ns_b="tw-netem-b-$$"
veth_a="twna$$" veth_b="twnb$$"
veth_a=${veth_a:0:15} veth_b=${veth_b:0:15}
addr_a=10.199.0.1 addr_b=10.199.0.2
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	ip netns del "$ns_a" 2>/dev/null || true
	ip netns del "$ns_b" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$ns_a" 2>/dev/null || skip "cannot create network namespaces (ip netns add failed)"
ip netns add "$ns_b"
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" ||
	skip "cannot create a veth pair"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# Does this kernel have the netem qdisc? (modprobe may load it; without
# modprobe or the module, tc reports the qdisc kind unknown.)
command -v modprobe >/dev/null 2>&1 && modprobe sch_netem 2>/dev/null || true
if ! out=$(ip netns exec "$ns_a" tc qdisc add dev "$veth_a" root netem delay 1ms 2>&1); then
	case "$out" in
	*"qdisc kind is unknown"* | *"Unknown qdisc"* | *"No such file or directory"*)
		skip "this kernel has no sch_netem (tc: ${out//$'\n'/ }); use tickwire-netem instead" ;;
	*) echo "netem-tc.sh: tc qdisc add failed: $out" >&2; exit 1 ;;
	esac
fi
# shellcheck disable=SC2086 # specs are word lists, as tc takes them
ip netns exec "$ns_a" tc qdisc replace dev "$veth_a" root netem $up_spec
# shellcheck disable=SC2086
ip netns exec "$ns_b" tc qdisc replace dev "$veth_b" root netem $down_spec
echo "kernel netem: $ns_a ($addr_a) → $ns_b ($addr_b): $up_spec"
echo "kernel netem: $ns_b → $ns_a: $down_spec"

if (($#)); then
	TW_NETNS_A=$ns_a TW_NETNS_B=$ns_b TW_ADDR_A=$addr_a TW_ADDR_B=$addr_b \
		ip netns exec "$ns_a" "$@"
	exit
fi

bin=$(mktemp -d)
trap 'cleanup; rm -rf "$bin"' EXIT
go build -o "$bin/netem-probe" ./scripts/netem-probe
go build -o "$bin/tickwire-netem" ./cmd/tickwire-netem

# await FILE: wait (up to 10 s) until a background process has printed
# that it is listening.
await() {
	for _ in $(seq 200); do
		grep -q 'listening on' "$1" 2>/dev/null && return
		sleep 0.05
	done
	echo "netem-tc.sh: $1 never said it was listening" >&2
	exit 1
}

ip netns exec "$ns_b" "$bin/netem-probe" -echo "$addr_b:9000" >"$bin/echo-ns.out" & pids+=($!)
await "$bin/echo-ns.out"
printf 'kernel netem     : '
ip netns exec "$ns_a" "$bin/netem-probe" -send "$addr_b:9000" -n "$count"

"$bin/netem-probe" -echo 127.0.0.1:0 >"$bin/echo-lo.out" & pids+=($!)
await "$bin/echo-lo.out"
echo_addr=$(sed -n 's/^listening on //p' "$bin/echo-lo.out")
"$bin/tickwire-netem" -listen 127.0.0.1:0 -upstream "$echo_addr" \
	-up-spec "$up_spec" -down-spec "$down_spec" -seed 1 -stats-interval 0 >"$bin/proxy.out" & pids+=($!)
await "$bin/proxy.out"
proxy_addr=$(sed -n 's/.*listening on \([^,]*\),.*/\1/p' "$bin/proxy.out")
printf 'tickwire-netem   : '
"$bin/netem-probe" -send "$proxy_addr" -n "$count"
