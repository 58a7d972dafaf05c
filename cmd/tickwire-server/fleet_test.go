package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/fleet/embedded"
	"github.com/tickwire/tickwire/lobby"
)

// TestSingleMachineFleet is the default mode: the lobby allocates its
// games through the NATS embedded in the process to the process's own
// game server, whose token key opens the tokens, and whose announcements
// move a reserved seat to a player when the player connects.
func TestSingleMachineFleet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan addrs, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0",
			"-key-file", filepath.Join(t.TempDir(), "k"), "-max-players", "8", "-npcs", "10"}, &logs, ready)
	}()
	var a addrs
	select {
	case a = <-ready:
	case code := <-exit:
		t.Fatalf("exited %d: %s", code, logs.String())
	}
	lc := &lobby.Client{BaseURL: "http://" + a.http.String()}
	seat, err := lc.Create(ctx, "arena", lobby.CreateRequest{Name: "solo", Player: "p", Hosting: lobby.ServerHosted})
	if err != nil {
		t.Fatal(err)
	}
	if err := seat.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// A room that never starts fails here with the server's log, not at
	// go test's timeout.
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	as, err := seat.Assignment(actx)
	if err != nil {
		t.Fatalf("assignment: %v\n%s", err, logs.String())
	}
	if as.Addrs[0] != a.udp.String() {
		t.Fatalf("assigned to %v, want this process's game server %v", as.Addrs, a.udp)
	}
	dial(t, as.Token) // the handshake proves the token opens with the server's key

	// The fleet on the dashboard: one healthy server whose reserved seat
	// became a connected player.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var st struct {
			Fleet []struct {
				Name              string
				Healthy           bool
				Players, Reserved int
			}
		}
		if err := json.Unmarshal([]byte(get(t, "http://"+a.admin.String()+"/api/stats")), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Fleet) != 1 || !st.Fleet[0].Healthy || st.Fleet[0].Name != a.udp.String() {
			t.Fatalf("fleet on the dashboard: %+v", st.Fleet)
		}
		if st.Fleet[0].Players == 1 && st.Fleet[0].Reserved == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet shows %+v, want 1 player and no seat reserved", st.Fleet[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "fleet: seats reserved") {
		t.Error("no reservation in the log")
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
}

// TestFleetShutdownWithoutNATS: a game server whose NATS has gone stops
// within 2 s of being told to (its leave message is not waited for).
func TestFleetShutdownWithoutNATS(t *testing.T) {
	token := "0123456789abcdef0123"
	tokenFile := filepath.Join(t.TempDir(), "nats.token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := fleet.Authorizer("", map[fleet.Role]string{fleet.RoleServer: token})
	e, err := embedded.Start(embedded.Config{Listen: "127.0.0.1:0", MaxPayload: fleet.MaxMessage,
		Authorize: func(tok, id string) (embedded.Permissions, bool) {
			if tok == "watcher-watcher-watcher" {
				return embedded.Permissions{Subscribe: []string{">"}}, true
			}
			p, ok := auth(tok, id)
			return embedded.Permissions(p), ok
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	watcher, err := fleet.NewCredentials(fleet.RoleLobby, "watcher-watcher-watcher")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect("test", watcher.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan *nats.Msg, 64)
	if _, err := nc.ChanSubscribe(fleet.DefaultPrefix+".servers.*", heard); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-listen", "127.0.0.1:0", "-http", "", "-admin", "", "-public-addr", "127.0.0.1:7777",
			"-key-file", filepath.Join(t.TempDir(), "k"), "-nats", e.URL(), "-nats-token-file", tokenFile}, &logs, nil)
	}()
	select {
	case <-heard:
	case code := <-exit:
		t.Fatalf("exited %d: %s", code, logs.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the server did not announce itself: %s", logs.String())
	}
	nc.Close()
	e.Close() // NATS is gone

	start := time.Now()
	cancel()
	select {
	case code := <-exit:
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("stopped %v after the signal, want at most 2 s", took.Round(time.Millisecond))
		}
		if code != 0 {
			t.Errorf("exit %d: %s", code, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after the signal: %s", logs.String())
	}
}
