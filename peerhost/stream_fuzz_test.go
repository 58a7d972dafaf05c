package peerhost

import (
	"testing"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// FuzzStreamFrames feeds a player reliable messages of stream frames
// back to back, as a host's batch of standby copies: whatever the bytes,
// it returns an error or takes them, and never panics or loops.
func FuzzStreamFrames(f *testing.F) {
	var b []byte
	b = appendPeerAck(b, 2, proto.PeerAckStandbyRun, 7)
	b = appendPeerAck(b, 2, proto.PeerAckStandbyReceived, 3)
	b = appendPeerMessage(b, proto.PeerMessageFrame{Player: 2, Copy: true, Seq: 4, Channel: 7, Data: []byte("echo")})
	f.Add(b)
	f.Add(appendPeerMessage(nil, proto.PeerMessageFrame{Player: 1, Seq: 1, Channel: 1, Data: []byte("to the player")}))
	f.Add(appendPeerAck(nil, 1, proto.PeerAckFromPlayer, 1))
	f.Add(b[:len(b)-3])
	gc, err := game.NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := NewPlayer(Config{Game: gc})
		if err != nil {
			t.Fatal(err)
		}
		p.players = []uint16{1}
		p.streamFrames(b) // an error is the bad input's answer
	})
}
