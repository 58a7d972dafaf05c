package e2e

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/tickwire/tickwire/internal/doccmd"
)

// readmeCommand returns the README's command of program that has every
// flag of want, failing the test if there is none.
func readmeCommand(t *testing.T, program string, want ...string) doccmd.Command {
	t.Helper()
	cmds, err := doccmd.Find(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if c.File == "README.md" && c.Program == program && !slices.ContainsFunc(want, func(f string) bool { return !slices.Contains(c.Args, f) }) {
			return c
		}
	}
	t.Fatalf("README.md has no %s command with %q", program, want)
	return doccmd.Command{}
}

// TestReadmeLoad: the README's load (500 headless bots) fits the
// README's server for the bots: the server's -max-players admits the
// bots' players (-n times -players, default 1), where the default 256
// refused 244 of them. Then a real run with the README's flags against
// that server, with more bots than the default admits: 300, not 500 (500
// clients and the server on this 2-core machine, shared with other
// builds, reach a 1 s round trip and lose echoes in 5 s, which says
// nothing about the README), on free loopback ports instead of :7777 and
// :8080 (another program may hold them) and for 5 s instead of 30 s.
// Every bot must connect: none is refused for a full server.
func TestReadmeLoad(t *testing.T) {
	server := readmeCommand(t, "tickwire-server", "-dev-join", "-max-players")
	load := readmeCommand(t, "tickwire-bot", "500", "-headless")
	t.Logf("server: %v\nload: %v", server, load)
	maxPlayers, n, players := flagInt(t, server, "-max-players", 256), flagInt(t, load, "-n", 0), flagInt(t, load, "-players", 1)
	if n*players > maxPlayers {
		t.Fatalf("%v runs %d players, %v admits %d", load, n*players, server, maxPlayers)
	}

	key := filepath.Join(t.TempDir(), "server.key")
	srv := start(t, "tickwire-server", append(slices.Clone(server.Args),
		"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-webtransport", "", "-key-file", key)...)
	addr := srv.await(t, `msg="serving HTTP" addr=(\S+)`)
	const bots300 = 300 // more than the default -max-players
	sum, code := bots(t, append(slices.Clone(load.Args), "-n", strconv.Itoa(bots300), "-duration", "5s", "-server", "http://"+addr)...)
	t.Logf("summary: %+v, exit %d", sum, code)
	if sum.Clients != bots300 || sum.Connected != sum.Clients || sum.Desyncs != 0 {
		t.Errorf("%d of %d clients connected, %d desyncs", sum.Connected, sum.Clients, sum.Desyncs)
	}
}

// flagInt is the value of an integer flag of c, or def without it.
func flagInt(t *testing.T, c doccmd.Command, name string, def int) int {
	t.Helper()
	i := slices.Index(c.Args, name)
	if i < 0 {
		return def
	}
	if i+1 == len(c.Args) {
		t.Fatalf("%v: %s has no value", c, name)
	}
	v, err := strconv.Atoi(c.Args[i+1])
	if err != nil {
		t.Fatalf("%v: %s: %v", c, name, err)
	}
	return v
}
