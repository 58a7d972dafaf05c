package peerhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
)

// A hiccup is not a leave, in a peer-hosted game too. A player whose own
// path is cut hears its host go silent exactly as if the host had died:
// it cannot tell the two apart, so it runs the election like everyone
// else would. But it does not burn its bridges: it leaves the host's
// session as a timeout (not as a player who followed a successor), so
// the host keeps its slots for the rejoin grace, and while the election
// goes on it keeps trying to come back to that host with the session's
// rejoin credential (Config.RejoinTimeout). Whichever answers first
// takes the game:
//
//   - a successor that answers has promoted: the host is gone for
//     everyone, and the player follows it, as fast as it ever did;
//   - the host that answers the rejoin was alive all along: the player
//     is back in its own slots under the same epoch, its game.Client
//     keeps its engine (a rejoin attach), and the others saw it
//     interrupted and back;
//   - a player the election names promotes at once, as fast as ever,
//     but its promotion holds only once a player follows it, or once
//     the host did not answer its rejoin for RejoinTimeout; until then
//     it sends nothing of its own message stream to its own host, and
//     if the host answers the rejoin, the player goes back to it and
//     gives its promotion up (nobody else knew of it).
//
// When the election finds nobody to take over while the player still
// tries to rejoin, it tries the others again (it may have struck them
// off for its own silence); it ends with migrate.ErrNoHost only once
// its attempts to rejoin the host are over too.

// DefaultRejoinTimeout is Config.RejoinTimeout's default: the longest
// hiccup of its own path a player rides out when nobody took the game
// over (the host keeps a silent player's session for its
// tickwire.Config.Timeout, 10 s, and its slots for the rejoin grace
// after that).
const DefaultRejoinTimeout = 15 * time.Second

// errAttached is a session the game cannot take: it plays on another
// (a rejoin and a successor answered both; the first took the game).
var errAttached = errors.New("peerhost: the game plays on another session")

// hostLoss is the time between losing the host and playing again: on a
// successor, on this peer's own promoted host, or back on the host.
type hostLoss struct {
	ctx    context.Context // ends with the loss: dials for it stop
	cancel context.CancelFunc
	// rejoining is closed when the attempts to rejoin the host are over
	// (nil: none were made).
	rejoining chan struct{}
	// handOverTick is the last tick of a host that handed the game over
	// (0: it went silent).
	handOverTick uint32
}

// promotion is this peer's own promotion to host, on srv. It holds
// once a player follows it, or the host it lost did not answer the
// rejoin (hold); until then this peer may be the one cut off, so its
// own player's stream (own, once dialled) waits, and a rejoin of the
// host it had lost takes the game back.
type promotion struct {
	srv      *tickwire.Server
	own      *tickwire.Client
	holds    bool
	streamed bool // own's stream went out
}

// beginLoss starts a loss of the host (with p.mu held) and returns it.
func (p *Player) beginLoss() *hostLoss {
	ctx, cancel := context.WithCancel(context.Background())
	p.loss = &hostLoss{ctx: ctx, cancel: cancel}
	return p.loss
}

// endLoss ends the loss under way, if any (with p.mu held): dials for
// it, a rejoin's included, stop.
func (p *Player) endLoss() {
	if p.loss != nil {
		p.loss.cancel()
		p.loss = nil
	}
}

// leaveHost leaves the host just lost, through session c to it (nil: it
// is gone already) and prepares the game to resume elsewhere. A host
// that handed the game over is gone for good: c ends with reason host
// migration, the acknowledgement it waits for. A host that went
// silent, or timed c out, may be alive, the player's own path cut: c
// ends as a timeout, which keeps the player's slots on the host for its
// rejoin grace (reason host migration would end them, and would make a
// host that hears it from its standby step down), and the player tries
// to come back with c's rejoin credential. A host that ended c for a
// successor is gone: no rejoin.
func (p *Player) leaveHost(now time.Time, loss *hostLoss, c *tickwire.Client, act migrate.Action) {
	p.mu.Lock()
	lost := p.follower.Following().Host
	why := "no word from the host"
	loss.handOverTick = p.handOverTick
	if p.handOverTick != 0 {
		why = fmt.Sprintf("handed over at tick %d", p.handOverTick)
		p.stats.HandOverTick, p.handOverTick = p.handOverTick, 0
	}
	p.mu.Unlock()
	p.mode.resume()
	p.event(Event{Kind: EventHostLost, Time: now, Slot: lost, Epoch: uint32(act.Epoch), Text: why})
	if c == nil {
		return
	}
	rejoin := loss.handOverTick == 0
	if err := c.Err(); err != nil {
		var de *tickwire.DisconnectError
		rejoin = rejoin && errors.As(err, &de) && de.Reason == proto.DisconnectTimeout
	}
	r := proto.DisconnectTimeout
	if !rejoin {
		r = proto.DisconnectHostMigrate
	}
	p.drop(c, r) // a session that ended already stays as it ended
	if tok := c.RejoinToken(); rejoin && tok != nil {
		loss.rejoining = make(chan struct{})
		go p.rejoinHost(loss, tok, lost)
	}
}

// rejoinHost tries to come back to the host lost with rejoin credential
// tok until it answers, it refuses the credential, another session took
// the game, the loss ends otherwise, or RejoinTimeout passes. The
// handshake repeats its request until the host answers: once the path
// is back, the player is within a round trip of its game.
func (p *Player) rejoinHost(loss *hostLoss, tok *tickwire.ConnectToken, host uint16) {
	defer p.wake()
	c, err := p.rejoinAttempts(loss.ctx, tok)
	close(loss.rejoining)
	if err != nil {
		p.log.Info("no rejoin of the host lost", "host", host, "err", err)
		p.hold(nil, loss) // a promotion of this peer's: the host is gone
		return
	}
	p.resend(c)
	p.mu.Lock()
	epoch := p.follower.Following().Epoch
	p.mu.Unlock()
	p.event(Event{Kind: EventRejoined, Epoch: uint32(epoch), Slot: host})
	p.abandon("the host it had lost answered")
}

// rejoinAttempts dials the host lost with tok until it answers, refuses
// the credential for good, another session took the game, or
// RejoinTimeout passes. An attempt lasts until the handshake times out
// (Config.HandshakeTimeout); one that fails sooner (the host full, a
// socket error) is not repeated within rejoinPace.
func (p *Player) rejoinAttempts(ctx context.Context, tok *tickwire.ConnectToken) (*tickwire.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, p.rejoinTimeout())
	defer cancel()
	for {
		began := time.Now()
		c, err := p.dial(ctx, p.dialer(), tok)
		var de *tickwire.DeniedError
		switch {
		case err == nil:
			return c, nil
		case ctx.Err() != nil, errors.Is(err, errAttached), errors.Is(err, ErrClosed),
			errors.As(err, &de) && de.Reason != proto.DenyServerFull && de.Reason != proto.DenyShuttingDown:
			return nil, err
		}
		pace := time.NewTimer(rejoinPace - time.Since(began))
		select {
		case <-ctx.Done():
			pace.Stop()
			return nil, err
		case <-pace.C:
		}
	}
}

// rejoinPace is the shortest time between two rejoin attempts: the
// handshake's own resend interval.
const rejoinPace = 100 * time.Millisecond

// rejoinTimeout is Config.RejoinTimeout or its default.
func (p *Player) rejoinTimeout() time.Duration {
	if p.cfg.RejoinTimeout > 0 {
		return p.cfg.RejoinTimeout
	}
	return DefaultRejoinTimeout
}

// rejoining reports whether attempts to rejoin the host lost are under
// way (with p.mu held).
func (p *Player) rejoining() bool {
	return p.loss != nil && p.loss.rejoining != nil && !isClosed(p.loss.rejoining)
}

// claim decides, in Attach, whether session c, accepted as a, may take
// the game: it may when no session has it, and a rejoin of the host
// lost may take it from this peer's own player on a promotion nobody
// followed. It returns that own session, which the caller closes
// before the game attaches to c. A rejoin that takes the game ends the
// loss and the election at once: nothing else may act on them.
func (p *Player) claim(c *tickwire.Client, a tickwire.Accepted) (own *tickwire.Client, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.err != nil:
		return nil, ErrClosed
	case p.client == nil:
		if p.promo != nil && !a.Rejoined {
			p.own = c // this peer's own player on its promoted host
		}
	case a.Rejoined && p.promo != nil && p.client == p.own:
		own, p.own = p.own, nil
	default:
		return nil, errAttached
	}
	p.client = c
	if a.Rejoined {
		p.endLoss()
		p.follower.Rejoined(a.Time)
		p.stats.Rejoins++
		p.noHost = nil
	}
	return own, nil
}

// provisional reports whether c is this peer's own player on a
// promotion nobody followed yet (with p.mu held): what its own host
// says of rosters and credentials is no news to the player, and what
// the player sends on its stream waits.
func (p *Player) provisional(c *tickwire.Client) bool {
	return p.promo != nil && c != nil && c == p.own
}

// ownDialled records c, this peer's own player on its promotion pr; if
// the promotion holds already, c's stream goes out.
func (p *Player) ownDialled(pr *promotion, c *tickwire.Client) {
	p.mu.Lock()
	pr.own = c
	out := pr.holds && !pr.streamed
	pr.streamed = pr.streamed || out
	p.mu.Unlock()
	if out {
		p.resend(c)
	}
}

// hold makes this peer's promotion on srv (nil: any) during loss (nil:
// any) hold: a player followed it (on the server's loop), or the host it
// lost did not answer, or it made no attempt to rejoin. The loss is
// over, and the own player's stream, held back meanwhile, goes out.
func (p *Player) hold(srv *tickwire.Server, loss *hostLoss) {
	p.mu.Lock()
	pr := p.promo
	if pr == nil || srv != nil && pr.srv != srv || loss != nil && p.loss != loss || p.err != nil ||
		p.client != nil && p.client != p.own {
		p.mu.Unlock()
		return // given up, or the host lost took the game back
	}
	p.promo, p.own = nil, nil
	p.endLoss()
	p.stats.Migrations++
	pr.holds = true
	own := pr.own
	if pr.streamed {
		own = nil
	}
	pr.streamed = pr.streamed || own != nil
	p.mu.Unlock()
	if own != nil {
		p.resend(own)
	}
}

// abandon gives up this peer's promotion that did not hold, if any, for
// the host it had lost: its own player leaves it (unless the rejoin
// took the game from it already), and its server closes.
func (p *Player) abandon(why string) {
	p.mu.Lock()
	pr, own := p.promo, p.own
	p.promo, p.own = nil, nil
	if pr != nil {
		p.stats.Abandoned++
	}
	p.mu.Unlock()
	if pr == nil {
		return
	}
	if own != nil {
		p.drop(own, proto.DisconnectClosed)
	}
	p.stopHost(pr.srv, EventAbandoned, why)
}

// wake makes the supervisor look at the Player's state at once.
func (p *Player) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
