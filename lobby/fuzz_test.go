package lobby

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// FuzzSocketMessages feeds arbitrary client messages from three sockets
// into the lobby and checks that nothing panics and the rooms stay sound:
// sizes within limits, unique names, seats and sockets pointing at each
// other, no empty room listed.
func FuzzSocketMessages(f *testing.F) {
	for _, seed := range []string{
		`{"op":"create","name":"g","player":"Bob","maxPlayers":2}` + "\n" + `{"op":"join","room":"R","player":"Alice"}` + "\n" +
			`{"op":"ready"}` + "\n" + `{"op":"ready"}` + "\n" + `{"op":"chat","text":"hi"}`,
		`{"op":"create","name":"p","player":"Bob","hosting":"peer","hostPort":7777}` + "\n" + `{"op":"ready"}` + "\n" +
			`{"op":"join","room":"R","player":"bob"}` + "\n" + `{"op":"leave"}` + "\n" + `{"op":"unready"}`,
		`{"op":"ready","room":"x"}` + "\n" + `{"op":"join",` + "\n" + `[1]` + "\n" + `{"op":"create","name":"","player":"\u0007"}`,
		`{"op":"create","name":"g","player":"A","maxPlayers":1}` + "\n" + `{"op":"create","name":"g","player":"B","maxPlayers":3}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := New(Config{Logger: slog.New(slog.DiscardHandler), MaxMessageBytes: 512, MaxRoomsPerType: 3,
			Registerer: prometheus.NewRegistry(),
			Servers:    []GameServer{{Addrs: []string{testServerAddr}, Key: testKey}},
			Types:      []GameType{{Name: "demo", MinPlayers: 2, MaxPlayers: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		typ := l.types["demo"]
		var socks []*socket
		for range 3 {
			s := &socket{l: l, typ: typ, out: make(chan outMsg, 1<<12)}
			s.ctx, s.cancel = context.WithCancel(context.Background())
			l.mu.Lock()
			l.sockets[s] = struct{}{}
			typ.watchers[s] = struct{}{}
			l.unlock()
			socks = append(socks, s)
		}
		o := origin{remote: netip.MustParseAddr("192.0.2.7"), host: "lobby.test"}
		for i, msg := range bytes.Split(data, []byte("\n")) {
			if len(msg) > l.cfg.MaxMessageBytes {
				continue // the reader answers these before decoding
			}
			// "R" stands for the newest room, so joins can hit.
			l.mu.Lock()
			if n := len(typ.rooms); n > 0 {
				msg = bytes.ReplaceAll(msg, []byte(`"R"`), []byte(`"`+typ.rooms[n-1].id+`"`))
			}
			l.unlock()
			s := socks[i%len(socks)]
			l.handleMessage(s, o, websocket.MessageText, msg)
			for len(s.out) > 0 {
				<-s.out
			}
			checkInvariants(t, l)
		}
	})
}

func checkInvariants(t *testing.T, l *Lobby) {
	t.Helper()
	l.mu.Lock()
	defer l.unlock()
	for _, typ := range l.order {
		if len(typ.rooms) > l.cfg.MaxRoomsPerType {
			t.Fatalf("%d rooms, limit %d", len(typ.rooms), l.cfg.MaxRoomsPerType)
		}
		for _, r := range typ.rooms {
			if l.rooms[r.id] != r {
				t.Fatalf("room %s listed but not indexed", r.id)
			}
			if len(r.players) == 0 || len(r.players) > r.maxPlayers || r.maxPlayers > typ.MaxPlayers {
				t.Fatalf("room %s has %d players, max %d", r.id, len(r.players), r.maxPlayers)
			}
			names := map[string]bool{}
			for _, s := range r.players {
				key := strings.ToLower(s.name)
				if names[key] {
					t.Fatalf("room %s has %q twice", r.id, s.name)
				}
				names[key] = true
				if s.room != r || l.seats[s.id] != s {
					t.Fatalf("seat %q does not point back at room %s", s.name, r.id)
				}
				if s.sock != nil && s.sock.seat != s {
					t.Fatalf("seat %q's socket is not on it", s.name)
				}
			}
		}
	}
	if len(l.rooms) != len(l.order[0].rooms) {
		t.Fatalf("%d rooms indexed, %d listed", len(l.rooms), len(l.order[0].rooms))
	}
	for s := range l.sockets {
		_, watching := s.typ.watchers[s]
		if s.seat != nil && (watching || s.seat.room == nil || s.seat.sock != s) {
			t.Fatalf("socket seated as %q is watching=%v or its seat has no room", s.seat.name, watching)
		}
		if s.seat == nil && !watching && !s.closed {
			t.Fatal("an open socket neither seated nor watching")
		}
	}
}
