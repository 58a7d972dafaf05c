package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != ":7777" || o.http != ":8080" || o.admin != "127.0.0.1:8081" || o.game != "arena" || o.tick != 60 || o.publicAddr != "127.0.0.1:7777" {
		t.Fatalf("defaults: %+v", o)
	}
}

// -all-avatars follows -max-players unless given: players² avatar
// updates are fine for a browser game of a few, not for 1,000.
func TestFlagsAllAvatars(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-max-players", "1000"}, false},
		{[]string{"-max-players", "1000", "-all-avatars"}, true},
		{[]string{"-all-avatars=false"}, false},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.allAvatars != c.want {
			t.Errorf("%q: all avatars %v, want %v", c.args, o.allAvatars, c.want)
		}
	}
}

func TestFlagsTrustedProxies(t *testing.T) {
	o, err := parseFlags([]string{"-trusted-proxies", "10.1.2.3/8, 192.0.2.1,::1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(o.trustedProxies); got != "[10.0.0.0/8 192.0.2.1/32 ::1/128]" {
		t.Errorf("-trusted-proxies parsed as %s", got)
	}
}

func TestFlagsDevJoin(t *testing.T) {
	for _, args := range [][]string{
		{"-dev-join", "-http", "127.0.0.1:8080"},
		{"-dev-join", "-http", "[::1]:8080"},
		{"-dev-join", "-http", "localhost:0"},
		{"-dev-join", "-join-secret", "0123456789abcdef"},
	} {
		if o, err := parseFlags(args, io.Discard); err != nil || !o.devJoin {
			t.Errorf("%v: %v", args, err)
		}
	}
	// A secret file others can read is refused.
	file := filepath.Join(t.TempDir(), "join.secret")
	os.WriteFile(file, []byte("0123456789abcdef"), 0o644)
	_, err := parseFlags([]string{"-dev-join", "-join-secret-file", file}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+file) {
		t.Errorf("world-readable secret file: %v", err)
	}
}

func TestFlagsRelay(t *testing.T) {
	o, err := parseFlags([]string{"-game", "relay", "-relay-input-size", "8", "-relay-max-state", "1048576", "-relay-state-timeout", "500ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.relayInputSize != 8 || o.relayMaxState != 1<<20 || o.relayStateTimeout != 500*time.Millisecond {
		t.Errorf("%+v", o)
	}
	if o, err = parseFlags([]string{"-game", "relay"}, io.Discard); err != nil || o.relayMaxState != 4<<20 || o.relayStateTimeout != 2*time.Second {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

func TestFlagsRejected(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-listen", "nonsense"}, "-listen"},
		{[]string{"-listen", ":99999"}, "port"},
		{[]string{"-http", "x"}, "-http"},
		{[]string{"-admin", "x"}, "-admin"},
		{[]string{"-http", ":9000", "-admin", ":9000"}, "own address"},
		{[]string{"-admin", "", "-pprof"}, "-pprof"},
		{[]string{"-session-timeout", "100ms"}, "-session-timeout"},
		{[]string{"-session-timeout", "2m"}, "-session-timeout"},
		{[]string{"-session-timeout", "2s", "-interrupt", "3s"}, "-interrupt"},
		{[]string{"-rejoin-grace", "2h"}, "-rejoin-grace"},
		{[]string{"-rejoin-grace", "-1s"}, "-rejoin-grace"},
		{[]string{"-demo", "65"}, "-demo"},
		{[]string{"-demo", "2", "-game", "swarm"}, "-demo"},
		{[]string{"-webtransport", "nonsense"}, "-webtransport"},
		{[]string{"-max-http-conns", "0"}, "-max-http-conns"},
		{[]string{"-max-http-conns-per-addr", "0"}, "-max-http-conns-per-addr"},
		{[]string{"-max-http-conns", "10", "-max-http-conns-per-addr", "11"}, "-max-http-conns-per-addr"},
		{[]string{"-trusted-proxies", "10.0.0.0/8,proxy.local"}, `"proxy.local" is not an IP address or CIDR`},
		{[]string{"-dev-join"}, "-join-secret"},                      // on :8080, every interface
		{[]string{"-dev-join", "-http", "0.0.0.0:8080"}, "loopback"}, // the same
		{[]string{"-dev-join", "-http", ""}, "-http, which is off"},
		{[]string{"-join-secret", "0123456789abcdef"}, "give -dev-join"},
		{[]string{"-join-rate", "5"}, "-join-rate only apply"},
		{[]string{"-dev-join", "-join-secret", "short"}, "at least 16"},
		{[]string{"-dev-join", "-join-secret", "0123456789abcdef", "-join-secret-file", "f"}, "not both"},
		{[]string{"-dev-join", "-join-secret-file", "/nonexistent/secret"}, "-join-secret-file"},
		{[]string{"-dev-join", "-http", "127.0.0.1:8080", "-join-burst", "0"}, "-join-burst"},
		{[]string{"-game", "chess"}, "not embedded"},
		{[]string{"-tick", "0"}, "-tick"},
		{[]string{"-tick", "1000"}, "-tick"},
		{[]string{"-max-rewind", "2s"}, "-max-rewind"},
		{[]string{"-max-rewind", "-1ms"}, "-max-rewind"},
		{[]string{"-snapshot-interval", "0"}, "-snapshot-interval 0 out of range"},
		{[]string{"-snapshot-interval", "9"}, "-snapshot-interval 9 out of range"},
		{[]string{"-game", "swarm", "-snapshot-interval", "2"}, "arena only"},
		{[]string{"-game", "swarm", "-relay-max-state", "2048", "-relay-input-size", "8"}, "-relay-input-size, -relay-max-state apply to -game relay only"},
		{[]string{"-game", "relay", "-relay-input-size", "342"}, "-relay-input-size 342 out of range 0..341"},
		{[]string{"-game", "relay", "-relay-max-state", "1000"}, "-relay-max-state 1000 out of range"},
		{[]string{"-game", "relay", "-relay-max-state", "16777217"}, "-relay-max-state 16777217 out of range"},
		{[]string{"-game", "relay", "-relay-state-timeout", "10ms"}, "-relay-state-timeout 10ms out of range"},
		{[]string{"-game", "relay", "-record", "replays"}, "-game relay runs none"},
		{[]string{"-max-players", "0"}, "-max-players"},
		{[]string{"-log-level", "loud"}, "-log-level"},
		{[]string{"-key-file", ""}, "-key-file"},
		{[]string{"-game-id", "0"}, "-game-id"},
		{[]string{"-token-ttl", "1ms"}, "-token-ttl"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"-tick", "fast"}, "invalid value"},
		{[]string{"-listen", "", "-http", ""}, "nothing to serve"},
		{[]string{"-listen", "", "-dev-join", "-http", "127.0.0.1:8080"}, "lobby only"},
		{[]string{"-nats", "http://x:4222"}, "nats://host:port"},
		{[]string{"-nats", "nats://"}, "nats://host:port"},
		{[]string{"-nats", "nats://a:4222", "-nats-listen", ":4222"}, "give one of them"},
		{[]string{"-nats-listen", ":4222"}, "-nats-server-token-file"},
		{[]string{"-nats", "nats://a:4222"}, "separate processes"},
		{[]string{"-nats-listen", ":4222", "-nats-server-token-file", "/nonexistent", "-nats-token-file", "/x"}, "-nats-lobby-token-file"},
		{[]string{"-nats-server-token-file", "/x"}, "give -nats-listen"},
		{[]string{"-nats-nkey-file", "/x"}, "give -nats"},
		{[]string{"-nats-listen", ":4222", "-nats-server-token-file", "/nonexistent/token"}, "-nats-server-token-file"},
		{[]string{"-http", "", "-nats-listen", ":4222"}, "-http (the lobby) is off"},
		{[]string{"-nats-listen", "x"}, "-nats-listen"},
		{[]string{"-nats-token-file", "/nonexistent"}, "give -nats"},
		{[]string{"-public-url", "ftp://x"}, "-public-url"},
		{[]string{"-public-url", "http://x/lobby"}, "-public-url"},
		{[]string{"-public-url", "http://x", "-http", ""}, "lobby, which is off"},
		{[]string{"-http", "", "-nats", "nats://a:4222", "-nats-token-file", "/nonexistent/token"}, "-nats-token-file"},
	}
	for _, c := range cases {
		var stderr strings.Builder
		_, err := parseFlags(c.args, &stderr)
		if err == nil {
			t.Errorf("%v: accepted", c.args)
			continue
		}
		if msg := err.Error() + stderr.String(); !strings.Contains(msg, c.want) {
			t.Errorf("%v: message %q does not mention %q", c.args, msg, c.want)
		}
	}
}

// TestRecordFlag: -record makes each game's recorder a file of its own
// in the directory, created if needed, named by the game and its id.
func TestRecordFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replays")
	o, err := parseFlags([]string{"-game", "swarm", "-record", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w, err := o.recorder()(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "swarm-game7-*.replay")); len(m) != 1 || m[0] != w.Path() {
		t.Fatalf("files %v, recorder's %s", m, w.Path())
	}
	if o, _ := parseFlags(nil, io.Discard); o.recorder() != nil {
		t.Fatal("a recorder without -record")
	}
}
