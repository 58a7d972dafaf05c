package peerhost

import (
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
)

// mode is what a Player does its own way for a state-sync game
// (game.Client; game.Host with a warm standby replaying the host's
// steps) and for a commits game (commits.Client; commits.Relay, whose
// warm standby is a client whose worlds hold what the relay needs).
type mode interface {
	// attach attaches the game's client to session c.
	attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error)
	// resume readies the game's client to go on on another session.
	resume()
	// resumeFailed ends a game's client waiting to resume.
	resumeFailed(r proto.DisconnectReason)
	// serve makes srv's handler a host of the game with hooks mig.
	serve(srv *tickwire.Server, mig *hostMigration) error
	// hostStats fills in the host's counters (on the server's loop).
	hostStats(st *Stats)
	// standbyTick is the tick this peer's warm standby holds, to
	// acknowledge (ok false: nothing to acknowledge). With p.mu held.
	standbyTick() (tick uint32, epoch migrate.Epoch, ok bool)
	// takeOver readies this peer's standby to become the game on the
	// host serve starts next, in place of the host of epoch lost: it
	// returns the tick the game resumes from, and adopt, which makes it
	// the running game there (on the server's loop). With p.mu held.
	takeOver(now time.Time, lost migrate.Epoch) (at uint32, adopt func(m adoption) error, err error)
	// standbyEnd drops this peer's standby: the host of epoch no longer
	// feeds it. With p.mu held.
	standbyEnd(epoch migrate.Epoch)
	// standbyFrame takes a standby state or step frame from the host.
	// With p.mu held.
	standbyFrame(t proto.FrameType, b []byte, tickRate int) error
}

// adoption is what a promoted peer's host adopts its game with.
type adoption struct {
	epoch uint32
	self  uint16
	addr  string
	grace time.Duration
	hold  time.Duration // a state-sync game's (game.Migration.Hold)
	// lost is the lost host; gone holds it and the candidates the
	// election passed over, for whom a state-sync game does not hold
	// its tick. A commits relay awaits the passed-over candidates like
	// any player (commands of theirs may still come from the others'
	// buffers): without that hold two players' records differed in
	// TestPeerCommitsRelayAndSuccessorDie.
	lost uint16
	gone []uint16
}

// orNoHandler is h, or a handler that drops everything.
func orNoHandler(h tickwire.Handler) tickwire.Handler {
	if h == nil {
		return noHandler{}
	}
	return h
}

// serve makes handler, a host of the game h with these hooks (or made
// with err), srv's handler; the players' stream messages go to
// streamHandler.
func (m *hostMigration) serve(srv *tickwire.Server, handler tickwire.Handler, h hosted, streamHandler tickwire.Handler, err error) error {
	if err != nil {
		return err
	}
	m.h, m.handler = h, orNoHandler(streamHandler)
	srv.Handle(handler)
	return nil
}
