package lobby

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// testServerAddr is the game server address the test lobbies know.
const testServerAddr = "127.0.0.1:7777"

// testKey is the test game server's token key.
var testKey = tickwire.Key{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// newTestLobby serves a lobby over real HTTP on loopback. A zero cfg gets
// one game server at testServerAddr running every type, and no
// per-address limits: most tests play many players from one address.
func newTestLobby(t testing.TB, cfg Config, setup ...func(*Lobby)) (*Lobby, *httptest.Server) {
	t.Helper()
	if cfg.Servers == nil {
		cfg.Servers = []GameServer{{Addrs: []string{testServerAddr}, Key: testKey}}
	}
	for _, r := range []*RateLimit{&cfg.CreateRate, &cfg.GlobalCreateRate, &cfg.JoinRate, &cfg.ChatRate} {
		if *r == (RateLimit{}) {
			*r = NoRateLimit
		}
	}
	for _, n := range []*int{&cfg.MaxRoomsPerAddr, &cfg.MaxSocketsPerAddr} {
		if *n == 0 {
			*n = -1
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(l)
	}
	srv := httptest.NewServer(l)
	t.Cleanup(func() {
		l.Close()
		srv.Close()
	})
	return l, srv
}

// newAdminServer serves l's operator pages over real HTTP on loopback.
func newAdminServer(t testing.TB, l *Lobby) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(l.Admin())
	t.Cleanup(srv.Close)
	return srv
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wsClient is a test player on the WebSocket protocol.
type wsClient struct {
	t     *testing.T
	c     *websocket.Conn
	rooms []RoomInfo // the room list the lobby sent on connect
}

// wsMsg is any lobby-to-client message.
type wsMsg struct {
	Type       string          `json:"type"`
	Code       string          `json:"code"`
	Error      string          `json:"error"`
	RetryAfter int             `json:"retryAfter"`
	Event      string          `json:"event"`
	Seat       string          `json:"seat"`
	Player     string          `json:"player"`
	Room       json.RawMessage `json:"room"`
	Rooms      []RoomInfo      `json:"rooms"`
	From       string          `json:"from"`
	Text       string          `json:"text"`
	Assignment *Assignment     `json:"assignment"`
}

func (m wsMsg) room(t *testing.T) RoomInfo {
	t.Helper()
	var r RoomInfo
	if err := json.Unmarshal(m.Room, &r); err != nil {
		t.Fatalf("message %q has no room: %v", m.Type, err)
	}
	return r
}

func dialWS(t *testing.T, srv *httptest.Server, gameType string) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/games/" + gameType + "/ws"
	c, _, err := websocket.Dial(testCtx(t), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	w := &wsClient{t: t, c: c}
	w.rooms = w.expect("rooms").Rooms
	return w
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		b = mustJSON(v)
	}
	if err := w.c.Write(testCtx(w.t), websocket.MessageText, b); err != nil {
		w.t.Fatal(err)
	}
}

// next reads the next message.
func (w *wsClient) next() (wsMsg, error) {
	_, b, err := w.c.Read(testCtx(w.t))
	if err != nil {
		return wsMsg{}, err
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		w.t.Fatalf("lobby sent bad JSON %q: %v", b, err)
	}
	return m, nil
}

// expect reads messages until one of type typ (skipping room and rooms
// updates of other types), failing on an unexpected error message.
func (w *wsClient) expect(typ string) wsMsg {
	w.t.Helper()
	for {
		m, err := w.next()
		if err != nil {
			w.t.Fatalf("waiting for %q: %v", typ, err)
		}
		if m.Type == typ {
			return m
		}
		if m.Type == "error" || m.Type == "assigned" {
			w.t.Fatalf("waiting for %q, got %+v", typ, m)
		}
	}
}

// expectRoom reads room updates until cond holds for one.
func (w *wsClient) expectRoom(cond func(RoomInfo) bool) RoomInfo {
	w.t.Helper()
	for {
		m := w.expect("room")
		if r := m.room(w.t); cond(r) {
			return r
		}
	}
}

// expectClose reads until the socket closes and returns the close status.
func (w *wsClient) expectClose() websocket.StatusCode {
	w.t.Helper()
	for {
		_, err := w.next()
		if err != nil {
			s := websocket.CloseStatus(err)
			if s == -1 && !errors.Is(err, io.EOF) {
				w.t.Fatalf("socket ended without a close frame: %v", err)
			}
			return s
		}
	}
}

// openToken opens a token's sealed part with key, as the game server
// does, and returns its private fields.
func openToken(t *testing.T, key tickwire.Key, tok *tickwire.ConnectToken) proto.TokenPrivate {
	t.Helper()
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	req := tok.Request()
	ad := proto.TokenAdditionalData(nil, req.KeyID, req.GameID, req.Expires)
	plain, err := aead.Open(nil, req.TokenNonce[:], req.SealedToken[:], ad)
	if err != nil {
		t.Fatalf("token for game %d does not open with the key: %v", tok.GameID, err)
	}
	priv, _, err := proto.ParseTokenPrivate(plain)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// checkAssignments checks a game's assignments against each other: one
// game id and address, distinct slots 1..n and client ids, and tokens that
// parse from their text form, name the game and address and open with key
// to the same client id and slot.
func checkAssignments(t *testing.T, key tickwire.Key, wantAddr string, as ...*Assignment) {
	t.Helper()
	slots := map[uint16]bool{}
	clients := map[uint64]bool{}
	for i, a := range as {
		if a == nil {
			t.Fatalf("player %d has no assignment", i)
		}
		if a.GameID == 0 || a.GameID != as[0].GameID {
			t.Errorf("player %d: game id %d, player 0 has %d", i, a.GameID, as[0].GameID)
		}
		if a.Host != as[0].Host || a.Port != as[0].Port {
			t.Errorf("player %d: host %s port %d, player 0 has %s %d", i, a.Host, a.Port, as[0].Host, as[0].Port)
		}
		if got := a.Addrs[len(a.Addrs)-1]; got != wantAddr {
			t.Errorf("player %d: addrs %v, want them to end with %s", i, a.Addrs, wantAddr)
		}
		if a.Slot < 1 || int(a.Slot) > len(as) || slots[a.Slot] {
			t.Errorf("player %d: slot %d not a fresh one of 1..%d", i, a.Slot, len(as))
		}
		slots[a.Slot] = true
		if clients[a.ClientID] {
			t.Errorf("player %d: client id %d repeated", i, a.ClientID)
		}
		clients[a.ClientID] = true

		tok, err := tickwire.ParseConnectToken(a.Token.String())
		if err != nil {
			t.Fatalf("player %d: token does not parse: %v", i, err)
		}
		if tok.GameID != a.GameID || !reflect.DeepEqual(tok.ServerAddrs, a.Addrs) ||
			tok.ClientID != a.ClientID || !reflect.DeepEqual(tok.Players, []uint16{a.Slot}) {
			t.Errorf("player %d: token names game %d addrs %v client %d players %v; assignment says %d %v %d [%d]",
				i, tok.GameID, tok.ServerAddrs, tok.ClientID, tok.Players, a.GameID, a.Addrs, a.ClientID, a.Slot)
		}
		if GameTypeFromUserData(tok.UserData) != a.Type {
			t.Errorf("player %d: token user data names type %q, want %q", i, GameTypeFromUserData(tok.UserData), a.Type)
		}
		if !tok.Expires.After(time.Now()) {
			t.Errorf("player %d: token already expired at %v", i, tok.Expires)
		}
		priv := openToken(t, key, tok)
		if priv.ClientID != a.ClientID || priv.PlayerCount != 1 || priv.Players[0] != a.Slot {
			t.Errorf("player %d: sealed part says client %d players %v, want %d [%d]",
				i, priv.ClientID, priv.Players[:priv.PlayerCount], a.ClientID, a.Slot)
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func dialWSURL(t *testing.T, base, gameType string) *wsClient {
	t.Helper()
	return dialWS(t, &httptest.Server{URL: base}, gameType)
}
