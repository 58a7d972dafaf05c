package fleet

import (
	"bytes"
	"crypto/ecdh"
	"encoding/json"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
)

// FuzzStatus feeds announcements to the checks a Directory applies: a
// server or lobby announcement that passes them has the bounds the
// Directory relies on.
func FuzzStatus(f *testing.F) {
	for _, s := range []string{
		`{"id":"abc","name":"eu-1","types":["arena"],"addrs":["127.0.0.1:7777"],"capacity":256,"players":3,"reserved":4,"games":1,"tickP99Ms":2.5,"tickBudgetMs":16.6,"intervalMs":500,"seq":9}`,
		`{"id":"a.b","types":["arena"],"addrs":["x:1"],"capacity":1,"intervalMs":500}`,
		`{"id":"abc","types":[],"addrs":[],"capacity":-1,"intervalMs":0}`,
		`{"tag":"abcd","url":"http://127.0.0.1:8080","intervalMs":1000,"seq":1}`,
		`{"tag":"ABCD","url":"ftp://x","intervalMs":1000}`,
		`{`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var st Status
		if decode(b, &st) == nil && st.check() == nil {
			if st.ID == "" || len(st.Types) == 0 || len(st.Types) > MaxTypes || len(st.Addrs) == 0 || len(st.Addrs) > MaxAddrs ||
				st.Capacity < 0 || st.Players < 0 || st.Reserved < 0 || st.interval() <= 0 || st.interval() > time.Minute {
				t.Fatalf("checked status out of bounds: %+v", st)
			}
			_ = st.Load() + float64(st.Free())
		}
		var ls LobbyStatus
		if decode(b, &ls) == nil && ls.check() == nil && (len(ls.Tag) != TagLen || ls.URL == "") {
			t.Fatalf("checked lobby out of bounds: %+v", ls)
		}
	})
}

// FuzzReserve feeds reservation requests to a Member: whatever the bytes,
// it answers, and it reserves seats only for a well-formed request that
// fits.
func FuzzReserve(f *testing.F) {
	for _, s := range []string{
		`{"gameId":"7","type":"arena","seats":2,"holdMs":30000,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"7","type":"arena","seats":2,"holdMs":30000}`,                                                           // no lobby key
		`{"gameId":"7","type":"arena","seats":2,"holdMs":30000,"lobbyKey":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`, // low order
		`{"gameId":"7","type":"arena","seats":2,"holdMs":30000,"lobbyKey":"CQ=="}`,
		`{"gameId":"7","release":true}`,
		`{"gameId":"7","type":"arena","seats":9,"holdMs":30000,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"0","type":"arena","seats":1,"holdMs":30000,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"7","type":"chess","seats":1,"holdMs":30000,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"7","type":"arena","seats":-3,"holdMs":-1,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"18446744073709551615","type":"arena","seats":8,"holdMs":600000,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		`{"gameId":"7","type":"arena","seats":1,"holdMs":18446744103710,"lobbyKey":"CQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`, // wraps to 30 s as a Duration
		`{`, ``,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1e9, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &Member{id: "srv", cfg: MemberConfig{Types: []string{"arena"}, Addrs: []string{"a:1"}, Capacity: 8, Interval: time.Second,
			LobbyGrants: 120, Load: func() Load { return Load{} }, Logger: quiet, Now: func() time.Time { return now }},
			holds: map[uint64]*hold{}, lobbies: map[string]*grantWindow{}}
		g, answer := m.reserve("lobby", b)
		st := m.Status()
		var req Request
		decoded := json.Unmarshal(b, &req) == nil && len(b) <= MaxMessage
		if decoded && req.Release {
			if answer || st.Reserved != 0 {
				t.Fatalf("release %q answered (%v) or reserved %d seats", b, answer, st.Reserved)
			}
			return
		}
		_, _, sealErr := sealTokenKey(tickwire.Key{}, req.LobbyKey, "srv", 1)
		ok := decoded && req.GameID != 0 && req.Type == "arena" && req.Seats >= 1 && req.Seats <= 8 &&
			req.HoldMs >= minHold.Milliseconds() && req.HoldMs <= maxHold.Milliseconds() && len(req.LobbyKey) == x25519Len && sealErr == nil
		if !answer || ok != (g.Error == "") || ok != (len(g.SealedKey) == SealedKeyLen) {
			t.Fatalf("request %q answered %+v", b, g)
		}
		if ok && st.Reserved != req.Seats || !ok && st.Reserved != 0 {
			t.Fatalf("request %q: %d seats reserved", b, st.Reserved)
		}
	})
}

// FuzzOpenTokenKey feeds a lobby's key opener with a grant's server key
// and sealed key: whatever the bytes it returns an error or the key, and
// only a grant sealed to this lobby, server and game opens.
func FuzzOpenTokenKey(f *testing.F) {
	priv, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	key := tickwire.Key{1, 2, 3}
	ephPub, sealed, err := sealTokenKey(key, priv.PublicKey().Bytes(), "srv", 9)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ephPub, sealed, uint64(9)) // testdata holds more: short, low-order, flipped
	f.Fuzz(func(t *testing.T, ephPub, sealed []byte, gameID uint64) {
		got, err := openTokenKey(priv, ephPub, sealed, "srv", gameID)
		if err != nil {
			if got != (tickwire.Key{}) {
				t.Fatalf("a failed open returned a key")
			}
			return
		}
		if got != key || gameID != 9 {
			t.Fatalf("opened %x for game %d", got, gameID)
		}
		if _, err := openTokenKey(priv, ephPub, sealed, "other", gameID); err == nil {
			t.Fatal("a key sealed for one server opened for another")
		}
	})
}
