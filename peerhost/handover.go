package peerhost

import (
	"errors"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
)

// A host that quits hands its game over instead of ending it
// (docs/MIGRATION.md): it stops ticking after tick T, when its warm
// standby has been sent every step up to T on its reliable channel, and
// sends every other player a hand-over (the control proto.ControlHandOver:
// the successor, T, its epoch) on the same channel, after those steps.
// A player who hears it declares the host gone at once and runs the
// election it would run after the host's silence; the standby, which
// holds T by then, promotes exactly at T. The host waits for its players
// to leave it for the successor (their Disconnect of reason host
// migration is the acknowledgement), at most HandOverTimeout, then ends
// the sessions still open with that reason, so that a player who missed
// the hand-over elects at once too.

// HandOverTimeout bounds how long a host that quits waits for its
// players to acknowledge its hand-over.
const HandOverTimeout = 500 * time.Millisecond

// handOver is a hand-over under way on the host.
type handOver struct {
	tick     uint32
	deadline time.Time
	done     chan struct{} // closed once every player left, or the deadline passed
}

// errHandOver is a hand-over control a player refuses: it names a
// successor or an epoch other than those of the roster it follows.
var errHandOver = errors.New("peerhost: hand-over of another epoch, or naming another successor than the roster's")

// startHandOver stops the game at its last tick and sends the hand-over
// to every player but the host's own. It reports false, and does
// nothing, when there is nobody warm to hand the game to (no standby,
// or one that never acknowledged a step): the game then ends with the
// host. done is closed when the hand-over is over. Call it from the
// server's loop.
func (m *hostMigration) startHandOver(now time.Time) (done <-chan struct{}, ok bool) {
	w := m.primary()
	if m.down || m.handing != nil || w == nil || !w.acked {
		return nil, false
	}
	if _, ok := m.h.running(m.cfg.Game); !ok {
		return nil, false
	}
	m.flushCopies() // the successor holds every copy made
	ps := w.c.Players()
	succ, ok := m.roster.Member(ps[0])
	if !ok {
		return nil, false
	}
	ho := &handOver{tick: m.tick(), deadline: now.Add(HandOverTimeout), done: make(chan struct{})}
	ctl := proto.ControlFrame{Code: proto.ControlHandOver, Player: succ.Slot, Tick: ho.tick, Arg: uint64(m.cfg.Epoch), Text: []byte(succ.Addr)}
	b, err := ctl.Append(m.buf[:0])
	if err != nil {
		return nil, false
	}
	m.buf = b
	m.handing = ho
	m.stats.HandOverTick = ho.tick
	for _, c := range m.conns() {
		if !carries(c, m.cfg.Self) && c.SendFrame(b) == nil {
			c.Flush() // now, not with the next tick: no tick comes
		}
	}
	m.log.Info("host hands the game over", "game", m.cfg.Game, "epoch", m.cfg.Epoch, "tick", ho.tick, "successor", succ.Slot)
	return ho.done, true
}

// handOverDue ends the hand-over once every player but the host's own
// left, or at its deadline: the sessions still open end with reason
// host migration.
func (m *hostMigration) handOverDue(now time.Time) {
	ho := m.handing
	if ho == nil || isClosed(ho.done) {
		return
	}
	var open []*tickwire.Conn
	for _, c := range m.conns() {
		if !carries(c, m.cfg.Self) {
			open = append(open, c)
		}
	}
	if len(open) > 0 && now.Before(ho.deadline) {
		return
	}
	m.stats.HandOverUnacked = uint64(len(open))
	for _, c := range open {
		c.Close(proto.DisconnectHostMigrate)
	}
	close(ho.done)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// handOver hands the game this peer hosts to its successor, if it has a
// warm one, and waits until the players took it (at most
// HandOverTimeout, and a little more for the server's loop).
func (p *Player) handOver() {
	p.mu.Lock()
	srv, mig := p.srv, p.mig
	p.mu.Unlock()
	if mig == nil {
		return
	}
	var done <-chan struct{}
	ok := false
	srv.Do(func() { done, ok = mig.startHandOver(srv.Now()) })
	if !ok {
		return
	}
	p.event(Event{Kind: EventHandedOver, Epoch: mig.cfg.Epoch, Slot: mig.cfg.Self})
	t := time.NewTimer(2 * HandOverTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-srv.Done():
	case <-t.C:
	}
}

// heardHandOver takes the host's hand-over (arrived at now): if it names
// the successor the followed roster names, with its epoch, the host is
// gone now and the election starts at once.
func (p *Player) heardHandOver(now time.Time, ctl *proto.ControlFrame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.follower.Following()
	w, _, ok := migrate.Elect(r, nil)
	if p.follower.Electing() {
		return nil // the host was found gone already
	}
	if !ok || migrate.Epoch(ctl.Arg) != r.Epoch || w.Slot != ctl.Player {
		return errHandOver
	}
	p.stats.HandOvers++
	p.handOverTick = ctl.Tick
	p.follower.HostGone(now)
	p.wake()
	return nil
}
