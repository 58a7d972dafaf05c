package fleet

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// refusals collects the permission violations NATS reports to nc.
func refusals(nc *nats.Conn) <-chan error {
	ch := make(chan error, 16)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			ch <- err
		}
	})
	return ch
}

// refused waits for NATS to refuse what, whose subject must appear in
// the refusal.
func refused(t *testing.T, ch <-chan error, what, subject string) {
	t.Helper()
	select {
	case err := <-ch:
		if !strings.Contains(err.Error(), subject) {
			t.Fatalf("%s: refused %v, want a refusal of %s", what, err, subject)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: NATS let it through", what)
	}
}

// TestRoles: with the embedded server's roles (Authorizer), a game
// server's credentials cannot read another server's grants or any
// reply, cannot announce under another id and cannot reserve seats; a
// lobby's cannot announce a server nor ask in another lobby's name; and
// whoever reads the bus anyway (a connection allowed everything) finds
// no token key in a grant: it is sealed to the lobby that asked.
func TestRoles(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	a := f.server("a", 10, "arena")
	f.server("b", 10, "arena")
	waitFor(t, "two servers", func() bool { return len(d.Servers()) == 2 })

	// Server b's credentials.
	bnc, bc := f.as(RoleServer)
	bErr := refusals(bnc)
	for _, subj := range []string{">", "_INBOX.>", DefaultPrefix + ".alloc." + a.ID() + ".*", DefaultPrefix + ".servers.*"} {
		if _, err := bnc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		refused(t, bErr, "a server subscribing to "+subj, subj)
	}
	forged, _ := json.Marshal(Status{ID: a.ID(), Name: "a", Types: []string{"arena"}, Addrs: []string{"203.0.113.9:1"},
		Capacity: 1000, IntervalMs: 50, Seq: 1 << 60})
	for _, subj := range []string{DefaultPrefix + ".servers." + a.ID(), DefaultPrefix + ".servers.evil"} {
		if err := bnc.Publish(subj, forged); err != nil {
			t.Fatal(err)
		}
		refused(t, bErr, "a server announcing on "+subj, subj)
	}
	req, _ := json.Marshal(Request{GameID: 5, Type: "arena", Seats: 10, HoldMs: 600_000, LobbyKey: bytes.Repeat([]byte{9}, 32)})
	for _, subj := range []string{DefaultPrefix + ".alloc." + a.ID() + "." + bc.ID(), DefaultPrefix + ".alloc." + a.ID() + "." + d.cfg.ID} {
		if err := bnc.PublishRequest(subj, bnc.NewRespInbox(), req); err != nil {
			t.Fatal(err)
		}
		refused(t, bErr, "a server reserving seats on "+subj, subj)
	}

	// A lobby's credentials.
	lnc, _ := f.as(RoleLobby)
	lErr := refusals(lnc)
	if err := lnc.Publish(DefaultPrefix+".servers.evil", forged); err != nil {
		t.Fatal(err)
	}
	refused(t, lErr, "a lobby announcing a server", DefaultPrefix+".servers.evil")
	if err := lnc.PublishRequest(DefaultPrefix+".alloc."+a.ID()+"."+d.cfg.ID, lnc.NewRespInbox(), req); err != nil {
		t.Fatal(err)
	}
	refused(t, lErr, "a lobby asking in another's name", d.cfg.ID)
	if _, err := lnc.SubscribeSync(inboxPrefix(d.cfg.ID) + ".>"); err != nil {
		t.Fatal(err)
	}
	refused(t, lErr, "a lobby reading another's inbox", inboxPrefix(d.cfg.ID))

	// A reader of everything sees the grant, and no key in it.
	spy := f.conn()
	grants, err := spy.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	al, err := d.Allocate(t.Context(), "arena", 77, 2, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if al.ID == a.ID() && al.Key != a.key || al.ID != a.ID() && al.Key == a.key {
		t.Fatal("the lobby opened a key that is not its server's")
	}
	msg, err := grants.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var g Grant
	if err := json.Unmarshal(msg.Data, &g); err != nil || g.Error != "" {
		t.Fatalf("the grant: %s, %v", msg.Data, err)
	}
	if bytes.Contains(msg.Data, al.Key[:]) || bytes.Contains(msg.Data, []byte(al.Key.String())) {
		t.Fatal("the token key travels in clear")
	}
	other, _ := ecdh.X25519().GenerateKey(rand.Reader)
	if _, err := openTokenKey(other, g.ServerKey, g.SealedKey, al.ID, 77); err == nil {
		t.Fatal("another key opened the grant")
	}
	if d.Stats().BadAnnouncements != 0 || len(d.Servers()) != 2 {
		t.Fatalf("the directory took a forgery: %+v", d.Stats())
	}
}

// TestLobbyBoundsAndRelease: a server grants one lobby at most
// LobbyGrants reservations a minute (another lobby still gets seats),
// and a lobby's Release gives its seats back at once.
func TestLobbyBoundsAndRelease(t *testing.T) {
	f := newTestFleet(t)
	d1, d2 := f.directory(), f.directory()
	nc, c := f.as(RoleServer)
	m, err := Join(nc, MemberConfig{ID: c.ID(), Name: "s", Types: []string{"arena"}, Addrs: []string{"127.0.0.1:1"}, Capacity: 100,
		LobbyGrants: 3, Interval: 50 * time.Millisecond, Logger: quiet, Now: f.clk.now, Load: func() Load { return Load{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	waitFor(t, "the server", func() bool { return len(d1.Servers()) == 1 && len(d2.Servers()) == 1 })

	var got []*Allocation
	for i := range 3 {
		al, err := d1.Allocate(t.Context(), "arena", uint64(i+1), 2, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, al)
	}
	if _, err := d1.Allocate(t.Context(), "arena", 4, 2, 30*time.Second); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "last minute") {
		t.Fatalf("a fourth reservation in a minute: %v", err)
	}
	if _, err := d2.Allocate(t.Context(), "arena", 5, 2, 30*time.Second); err != nil {
		t.Fatalf("another lobby: %v", err)
	}
	if st := m.Status(); st.Reserved != 8 {
		t.Fatalf("%d seats reserved, want 8", st.Reserved)
	}
	// Another lobby cannot release the first one's seats: its release
	// is handled before its next request on the same subscription.
	d2.Release(got[0])
	if _, err := d2.Allocate(t.Context(), "arena", 6, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); st.Reserved != 10 || m.Stats().Released != 0 {
		t.Fatalf("%d seats reserved after another lobby's release, want 10", st.Reserved)
	}
	d1.Release(got[1])
	waitFor(t, "the release", func() bool { return m.Stats().Released == 1 })
	if st := m.Status(); st.Reserved != 8 {
		t.Fatalf("%d seats reserved after one release, want 8", st.Reserved)
	}
	f.clk.add(time.Minute)
	waitFor(t, "a heartbeat", func() bool { return healthy(d1)["s"] })
	if _, err := d1.Allocate(t.Context(), "arena", 7, 2, 30*time.Second); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
}
