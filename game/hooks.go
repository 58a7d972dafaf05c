package game

import (
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Hooks is the seam through which a layer above acts on a Host's games
// without the Host knowing it: host migration (package peerhost) sends
// the roster and credentials from Tick, feeds its warm standby from
// Stepped, and runs the players' message streams from Frame. The Host
// calls it, never imports what implements it. Every method runs on the
// server's loop goroutine.
type Hooks interface {
	// Tick runs at the start of each server tick, before any game
	// steps. Returning false stops the host for good: no game steps and
	// no game frame goes out again (a host replaced by a successor).
	Tick(now time.Time) bool
	// Stepped runs after each step of game gameID's engine, before
	// anything else reads or changes it.
	Stepped(gameID uint64, eng *sim.Server)
	// Joined runs once c's players are in their game: joined, or resumed
	// into a game adopted after a host migration (Host.Adopt).
	Joined(c *tickwire.Conn, resumed bool)
	// Left runs once c's players have left their game, for reason r,
	// before the game ends if c was its last connection.
	Left(c *tickwire.Conn, r proto.DisconnectReason)
	// Frame receives each frame of c's packets that the Host does not
	// handle itself; frame is valid only during the call. An error
	// counts the frame as bad (HostStats.BadFrames).
	Frame(c *tickwire.Conn, t proto.FrameType, frame []byte) error
}

// Conns appends to dst the connections playing game gameID, in the
// order they joined, and returns it. Call it from the server's loop.
func (h *Host) Conns(gameID uint64, dst []*tickwire.Conn) []*tickwire.Conn {
	if g := h.games[gameID]; g != nil {
		for _, gc := range g.conns {
			dst = append(dst, gc.c)
		}
	}
	return dst
}
