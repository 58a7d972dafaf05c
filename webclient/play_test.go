package webclient

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/webgate"
)

// server runs an arena server behind a gateway with a WebSocket
// endpoint, on loopback.
func server(t *testing.T) (tickwire.Key, *webgate.Conn, string) {
	t.Helper()
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	u, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := webgate.New(u, webgate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	host, err := game.NewHost(srv, func(uint64) (game.Game, error) { return arena.NewGame(10), nil },
		game.Config{SendEffects: arena.SendShots})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle(host)
	go srv.Serve(gate)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(gate.WebSocketHandler(nil))
	t.Cleanup(hs.Close)
	return key, gate, "ws" + strings.TrimPrefix(hs.URL, "http")
}

// wsPlayer connects a Player over a WebSocket, as the page does.
func wsPlayer(t *testing.T, key tickwire.Key, url string, client uint64, slot uint16) *Player {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	pipe := NewPipe(func(b []byte) { ws.Write(context.Background(), websocket.MessageBinary, b) })
	go func() {
		defer pipe.Close()
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			pipe.Push(b)
		}
	}()
	tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: client, Players: []uint16{slot},
		ServerAddrs: []string{"game.example:7777"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Dial(ctx, tok.String(), pipe)
	if err != nil {
		t.Fatalf("dial over a WebSocket: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// find returns the sprite of player slot in f.
func find(f Frame, slot uint16) (Sprite, bool) {
	for _, s := range f.Bodies {
		if s.Kind == "player" && s.Player == slot {
			return s, true
		}
	}
	return Sprite{}, false
}

// TestPlayOverWebSocket: two players on the arena over the gateway's
// WebSocket path; each moves, each sees the other move, a shot comes back
// as the server judged it, nothing desyncs.
func TestPlayOverWebSocket(t *testing.T) {
	key, gate, url := server(t)
	a := wsPlayer(t, key, url, 1, 1)
	b := wsPlayer(t, key, url, 2, 2)
	a.SetInput(127, 0, 0, arena.FireRay)
	b.SetInput(0, 127, 0, 0)

	var start [3]Sprite // each as the other first saw it
	moved := func(viewer *Player, slot uint16) bool {
		f := viewer.Frame(time.Now())
		s, ok := find(f, slot)
		if !ok {
			return false
		}
		if start[slot].Kind == "" {
			start[slot] = s
			return false
		}
		return s.X-start[slot].X > 2 || s.Y-start[slot].Y > 2 // metres
	}
	deadline := time.Now().Add(30 * time.Second)
	for !moved(b, 1) || !moved(a, 2) {
		if time.Now().After(deadline) {
			t.Fatalf("the players did not see each other move: %+v / %+v", a.Frame(time.Now()).Net, b.Frame(time.Now()).Net)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var server, predicted bool
	for !server || !predicted {
		for _, s := range a.Frame(time.Now()).Shots {
			server = server || s.Server
			predicted = predicted || !s.Server
		}
		if time.Now().After(deadline) {
			t.Fatalf("shots: server's %v, predicted %v", server, predicted)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range []*Player{a, b} {
		f := p.Frame(time.Now())
		if !f.Net.Ready || f.Net.Desyncs != 0 || f.Net.RTT <= 0 || f.Net.Frames == 0 {
			t.Errorf("player %d overlay %+v", p.Slot(), f.Net)
		}
		if own, ok := find(f, p.Slot()); !ok || !own.Own {
			t.Errorf("player %d does not see itself as its own: %+v", p.Slot(), own)
		}
	}
	if st := gate.Stats()[webgate.WebSocket]; st.Open != 2 || st.PacketsIn == 0 || st.PacketsOut == 0 {
		t.Errorf("gateway %+v", st)
	}
}
