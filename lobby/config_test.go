package lobby

import (
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
)

// TestConfigDefaults: the zero Config offers a peer-hosted "demo"; types
// default from the servers; each bad field is named.
func TestConfigDefaults(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ti := l.typeInfo(l.order[0])
	if len(l.order) != 1 || ti.Name != "demo" || ti.MinPlayers != 2 || ti.MaxPlayers != 8 ||
		len(ti.Hosting) != 1 || ti.Hosting[0] != PeerHosted {
		t.Errorf("zero config type %+v", ti)
	}
	if c := l.cfg; c.MaxRoomsPerType != 100 || c.MaxNameLen != 24 || c.MaxMessageBytes != 4096 || c.SeatTimeout != DefaultSeatTimeout ||
		c.MaxRoomsPerAddr != 5 || c.MaxSocketsPerAddr != 20 || c.IdleTimeout != 10*time.Minute ||
		c.CreateRate != (RateLimit{Every: 10 * time.Second, Burst: 5}) || c.JoinRate != (RateLimit{Every: time.Second, Burst: 10}) ||
		c.ChatRate != (RateLimit{Every: time.Second, Burst: 5}) || len(c.TrustedProxies) != 0 {
		t.Errorf("zero config limits %+v", c)
	}
	l, err = New(Config{Servers: []GameServer{{Addrs: []string{":1"}, Key: testKey, Types: []string{"a", "b"}}}})
	if err != nil || len(l.order) != 2 || l.order[0].Name != "a" || l.order[1].Name != "b" || l.cfg.Servers[0].Name != ":1" {
		t.Errorf("types from servers: %v %+v", err, l)
	}

	key := tickwire.Key{1}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Types: []GameType{{Name: "Bad Name"}}}, "game type name"},
		{Config{Types: []GameType{{Name: strings.Repeat("a", 33)}}}, "game type name"},
		{Config{Types: []GameType{{Name: "a"}, {Name: "a"}}}, "twice"},
		{Config{Types: []GameType{{Name: "a", MinPlayers: 5, MaxPlayers: 4}}}, "out of range"},
		{Config{Servers: []GameServer{{Addrs: []string{":1"}}}}, "no key"},
		{Config{Servers: []GameServer{{Key: key}}}, "addresses"},
		{Config{Servers: []GameServer{{Addrs: []string{"nohost"}, Key: key}}}, "bad address"},
		{Config{Types: []GameType{{Name: "a"}}, Servers: []GameServer{{Addrs: []string{":1"}, Key: key, Types: []string{"b"}}}}, "not in Types"},
		{Config{MaxSockets: -1}, "negative"},
		{Config{JoinRate: RateLimit{Burst: 3}}, "JoinRate"},
		{Config{ChatRate: RateLimit{Every: -time.Second, Burst: 2}}, "ChatRate"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}
