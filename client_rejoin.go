package tickwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// Rejoin makes a client come back by itself when its session is lost
// without a leave: when the server goes silent past the timeout, or
// tells the client it timed it out, the client dials the same server
// again with the rejoin credential the server gave it (RejoinToken),
// into the same player slots, within the server's Config.RejoinGrace.
// Its FrameHandler keeps running across: a game.Client keeps its engine
// and gets the game as it stands (Accepted.Rejoined).
type Rejoin struct {
	// Tries bounds the attempts. Default 8.
	Tries int
	// Backoff is the wait before the first attempt, doubled after each
	// failure up to MaxBackoff. Defaults 100 ms and 4 s.
	Backoff, MaxBackoff time.Duration
	// Progress, if set, is told each step, on the client's loop (it must
	// not block or call the Client's blocking methods).
	Progress func(RejoinProgress)
}

// RejoinState says what a RejoinProgress reports.
type RejoinState uint8

const (
	// RejoinLost: the session was lost (Reason); attempts follow.
	RejoinLost RejoinState = iota + 1
	// RejoinTrying: attempt Attempt starts (Err: why the last failed).
	RejoinTrying
	// RejoinDone: the client is back in its slots on a new session.
	RejoinDone
	// RejoinFailed: no attempt succeeded (Err: the last failure); the
	// session ends with Reason, as it would have without Rejoin.
	RejoinFailed
)

var rejoinStateNames = [...]string{RejoinLost: "lost", RejoinTrying: "trying", RejoinDone: "back", RejoinFailed: "failed"}

func (s RejoinState) String() string {
	if s > 0 && int(s) < len(rejoinStateNames) {
		return rejoinStateNames[s]
	}
	return "unknown"
}

// RejoinProgress is one step of an automatic rejoin.
type RejoinProgress struct {
	State   RejoinState
	Attempt int
	Reason  proto.DisconnectReason // what ended the lost session
	Err     error
	// Took is, for RejoinDone and RejoinFailed, the time since the loss.
	Took time.Duration
}

// ErrRejoining is returned by a Client's Send methods while it is
// rejoining (Dialer.Rejoin): the session they would go on is lost.
var ErrRejoining = errors.New("tickwire: rejoining: the session was lost and a new one is not open yet")

// Rejoiner is implemented by a client's FrameHandler that wants to know
// when its session was lost and an automatic rejoin begins (Dialer.Rejoin):
// Lost runs on the client's loop instead of Ender.Ended. The next Attach
// has Accepted.Rejoined set; if every attempt fails, Ender.Ended follows.
type Rejoiner interface {
	Lost(now time.Time, reason proto.DisconnectReason)
}

// RejoinToken returns the newest rejoin credential the server gave this
// client (nil before the first arrived, or if the server gives none):
// Dial it, with a Dialer whose Game is the same layer, to come back into
// the same slots after the session ended without a leave. It names the
// server the client is connected to. Single-use.
func (c *Client) RejoinToken() *ConnectToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rejoinTok == nil {
		return nil
	}
	t := *c.rejoinTok
	return &t
}

// takeRejoin keeps the rejoin credential the server sent (on the loop).
func (c *Client) takeRejoin(f *proto.SuccessorFrame) error {
	tok, err := ParseConnectToken(string(f.Token))
	if err != nil {
		return err
	}
	if tok.ClientID != c.accept.ClientID || tok.GameID != c.token.GameID {
		return fmt.Errorf("tickwire: a rejoin credential for client %d game %d on client %d game %d",
			tok.ClientID, tok.GameID, c.accept.ClientID, c.token.GameID)
	}
	tok.ServerAddrs = []string{c.server.String()}
	tok.rejoin = true
	c.rejoinTok = tok
	return nil
}

// canRejoin reports whether the client rejoins by itself (with c.mu
// held).
func (c *Client) canRejoin() bool {
	return c.rejoinPolicy != nil && c.rejoinTok != nil && !c.closing
}

// rejoin runs the automatic rejoin after the session was lost for r,
// holding no lock, dialling each attempt with dial. It reports whether
// the client is back.
func (c *Client) rejoin(r proto.DisconnectReason, lost time.Time, dial func(context.Context, *ConnectToken) error) bool {
	p := c.rejoinPolicy
	c.mu.Lock()
	if !c.canRejoin() {
		c.mu.Unlock()
		return false
	}
	c.rejoining = true
	if rj, ok := c.sh.frames.(Rejoiner); ok {
		rj.Lost(lost, r)
	}
	c.stats.Interruptions++
	c.report(RejoinProgress{State: RejoinLost, Reason: r})
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stopLoop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := p.Backoff
	var err error
	for attempt := 1; attempt <= p.Tries; attempt++ {
		c.mu.Lock()
		c.report(RejoinProgress{State: RejoinTrying, Attempt: attempt, Reason: r, Err: err})
		tok := c.rejoinTok
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, p.MaxBackoff)
		if err = dial(ctx, tok); err == nil {
			c.mu.Lock()
			c.rejoining = false
			c.stats.Rejoins++
			c.report(RejoinProgress{State: RejoinDone, Attempt: attempt, Reason: r, Took: c.now().Sub(lost)})
			c.mu.Unlock()
			return true
		}
		var de *DeniedError
		if errors.As(err, &de) && de.Reason != proto.DenyServerFull && de.Reason != proto.DenyShuttingDown {
			break // the credential is refused for good
		}
		if ctx.Err() != nil {
			return false
		}
	}
	c.mu.Lock()
	c.rejoining = false
	c.report(RejoinProgress{State: RejoinFailed, Reason: r, Err: err, Took: c.now().Sub(lost)})
	c.mu.Unlock()
	return false
}

// rejoinThen rejoins a ClientGroup's client (on a goroutine of its own:
// the group's goroutine runs the handshakes) and, if that fails, ends
// the session.
func (c *Client) rejoinThen(r proto.DisconnectReason, dial func(context.Context, *ConnectToken) error) {
	now := c.now()
	if c.rejoin(r, now, dial) {
		return
	}
	c.endLost(r)
	c.finish()
}

// endLost ends a session lost for r once no rejoin brought it back: with
// the reason Close gave if it was closed meanwhile.
func (c *Client) endLost(r proto.DisconnectReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		c.end(c.closeReason, false, c.now())
		return
	}
	c.end(r, true, c.now())
}

// report tells the policy's Progress (with c.mu held).
func (c *Client) report(p RejoinProgress) {
	if c.rejoinPolicy.Progress != nil {
		c.rejoinPolicy.Progress(p)
	}
}

// withDefaults fills a Rejoin's zero fields.
func (r Rejoin) withDefaults() (Rejoin, error) {
	if r.Tries == 0 {
		r.Tries = 8
	}
	if r.Backoff == 0 {
		r.Backoff = 100 * time.Millisecond
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = 4 * time.Second
	}
	if r.Tries < 0 || r.Backoff < 0 || r.MaxBackoff < r.Backoff {
		return r, fmt.Errorf("tickwire: Rejoin{Tries: %d, Backoff: %v, MaxBackoff: %v}: tries and waits must be positive, MaxBackoff at least Backoff",
			r.Tries, r.Backoff, r.MaxBackoff)
	}
	return r, nil
}
