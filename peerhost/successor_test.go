package peerhost

import (
	"errors"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// TestSuccessorCredentials: the credentials a host mints for its
// successor, sent as successor frames and read back by the successor and
// the players, let every player connect to the successor's own server,
// on the successor's own socket, with no lobby involved; a frame whose
// key id does not name its key is refused.
func TestSuccessorCredentials(t *testing.T) {
	sock, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := sock.LocalAddr()
	players := []SuccessorPlayer{{ClientID: 0x90, Players: []uint16{2}}, {ClientID: 0x10, Players: []uint16{3}}}
	sc, err := MintSuccessorCredentials(77, addr.String(), players, 0, [proto.UserDataSize]byte{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wire := func(f proto.SuccessorFrame) proto.SuccessorFrame {
		t.Helper()
		b, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		g, _, err := proto.ParseSuccessorFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	kf := wire(sc.KeyFrame(1, 4))
	key, err := SuccessorKey(&kf)
	if err != nil || key != sc.Key {
		t.Fatalf("successor key: %v", err)
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle(testrig.Echo{})
	testrig.Serve(t, srv, sock)
	for _, p := range players {
		tf, ok := sc.TokenFrame(1, 4, p.Players[0])
		if !ok {
			t.Fatalf("no token for slot %d", p.Players[0])
		}
		tf = wire(tf)
		tok, err := SuccessorToken(&tf)
		if err != nil {
			t.Fatal(err)
		}
		c := testrig.Dial(t, tok, tickwire.Dialer{})
		if got := c.Players(); len(got) != 1 || got[0] != p.Players[0] {
			t.Fatalf("connected as %v, want slot %d", got, p.Players[0])
		}
	}
	if _, ok := sc.TokenFrame(1, 4, 9); ok {
		t.Fatal("a token for a player that has none")
	}
	kf.KeyID++
	if _, err := SuccessorKey(&kf); !errors.Is(err, ErrSuccessorFrame) {
		t.Fatalf("key frame with a wrong key id: %v", err)
	}
	tf, _ := sc.TokenFrame(1, 4, 2)
	if _, err := SuccessorKey(&tf); !errors.Is(err, ErrSuccessorFrame) {
		t.Fatalf("token frame read as a key: %v", err)
	}
	tf.Token = []byte("not a token")
	if _, err := SuccessorToken(&tf); !errors.Is(err, ErrSuccessorFrame) || !errors.Is(err, tickwire.ErrBadToken) {
		t.Fatalf("garbage token: %v", err)
	}
}
