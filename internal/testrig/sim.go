package testrig

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// SimServe serves s on addr of network n, through wrap if it is set (an
// impairment), and returns the function that closes s and reports
// Serve's error to t.
func SimServe(t testing.TB, n *udptest.Network, addr string, s *tickwire.Server, wrap func(net.PacketConn) net.PacketConn) (stop func()) {
	t.Helper()
	pc := listen(t, n, addr, wrap)
	done := make(chan error, 1)
	go func() { done <- s.Serve(udp.FromPacketConn(pc)) }()
	return func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// SimDial dials tok with layer from address from of network n, through
// wrap if it is set, within 5 s.
func SimDial(t testing.TB, n *udptest.Network, from string, wrap func(net.PacketConn) net.PacketConn, tok *tickwire.ConnectToken, layer tickwire.ClientLayer) *tickwire.Client {
	t.Helper()
	pc := listen(t, n, from, wrap)
	d := tickwire.Dialer{Game: layer, Conn: udp.FromPacketConn(pc)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// listen opens addr of n, through wrap if it is set.
func listen(t testing.TB, n *udptest.Network, addr string, wrap func(net.PacketConn) net.PacketConn) net.PacketConn {
	t.Helper()
	c, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		return wrap(c)
	}
	return c
}

// State is a copy of a world's state: its entities and their records.
type State struct {
	IDs     []proto.NetworkID
	Records []byte
}

// Copy copies a snapshot's state.
func Copy(ids []proto.NetworkID, records []byte) State {
	return State{slices.Clone(ids), slices.Clone(records)}
}

// Equal reports whether a and b hold the same entities and records.
func (a State) Equal(b State) bool {
	return slices.Equal(a.IDs, b.IDs) && bytes.Equal(a.Records, b.Records)
}

// History is a server handler that records a game's state after every
// server tick, the state the tick's packets replicate: hang it on a game
// host's Config.Handler. Engine returns the game's engine (nil while it
// does not run); States is written and read on the server's loop.
type History struct {
	Engine func() *sim.Server
	States map[uint32]State
}

func (*History) Connected(*tickwire.Conn)                            {}
func (*History) Message(*tickwire.Conn, *tickwire.Message)           {}
func (*History) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

// Tick records the engine's state at its tick.
func (h *History) Tick(time.Time, uint32) {
	if eng := h.Engine(); eng != nil {
		s := eng.Snapshot()
		h.States[s.Tick] = Copy(s.IDs, s.Records)
	}
}

// Replica reports on client i of a WaitSynced: whether its stats are as
// wanted (with them in status when not), and its replica's tick and
// state.
type Replica func(i int) (ready bool, status string, tick uint32, state State)

// WaitSynced polls, in virtual time, until each of n clients is ready
// and holds a replica equal to the state srv's game had at the
// replica's tick (hist, a History's States, read on srv's loop); it
// fails t, naming what, after 10 s.
func WaitSynced(t testing.TB, what string, srv *tickwire.Server, hist map[uint32]State, n int, client Replica) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, why := true, ""
		for i := range n {
			ready, status, tick, cl := client(i)
			if !ready {
				ok, why = false, fmt.Sprintf("client %d stats %s", i, status)
				break
			}
			var sv State
			var held bool
			srv.Do(func() { sv, held = hist[tick] })
			if !held || !cl.Equal(sv) {
				ok, why = false, fmt.Sprintf("client %d replica at tick %d (%d entities) differs from the server's (%d entities, recorded %v)",
					i, tick, len(cl.IDs), len(sv.IDs), held)
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in sync after 10 s: %s", what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stater is what ReplicaOf reads: a game client's replica.
type Stater interface {
	State(f func(snap *deltacomp.Snapshot))
}

// ReplicaOf copies the replica g holds, with its tick.
func ReplicaOf(g Stater) (tick uint32, s State) {
	g.State(func(snap *deltacomp.Snapshot) {
		tick, s = snap.Tick, Copy(snap.IDs, snap.Records)
	})
	return tick, s
}
