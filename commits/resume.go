package commits

import (
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// A client of a peer-hosted game goes on across a host migration with
// the worlds it holds (migration.go): Resume before it is attached to
// the successor's session, and, on a player that may take the relay
// over, KeepCommitted so that its worlds can make the successor's
// RelayState.

// Resume makes the next attach of the client (a session to the relay
// that took the game over after a host migration) go on with the worlds
// it holds rather than wait for a committed state: the end of the
// current session is not the client's. On the new session it sends
// again its commands not yet committed (the relay drops those it has),
// drops the others' (the relay sends every command it has after the
// oldest tick a client may need), and commits again as the relay says.
func (cc *Client) Resume() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.resume = true
}

// ResumeFailed ends a client waiting to resume (Resume) whose game found
// no relay to resume on: it stops with a disconnect for reason r.
func (cc *Client) ResumeFailed(r proto.DisconnectReason) {
	cc.mu.Lock()
	waiting := cc.resume
	cc.resume = false
	cc.mu.Unlock()
	if waiting {
		cc.stop(&tickwire.DisconnectError{Reason: r})
	}
}

// KeepCommitted makes the client keep the commands its committed world
// ran in the last ticks ticks (a warm standby of a peer-hosted relay:
// RelayState hands them to the successor, for the clients whose
// committed world trails).
func (cc *Client) KeepCommitted(ticks int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.keep = max(ticks, 1)
	if cc.seen == nil {
		cc.seen = map[uint16]uint32{}
	}
}

// keepCommitted notes a command the committed world ran (with
// KeepCommitted).
func (cc *Client) keepCommitted(c *sim.Command) {
	if cc.keep == 0 {
		return
	}
	if c.Kind == sim.CommandInput {
		cc.seen[c.Player] = c.Seq
	} else {
		cc.sysSeq = max(cc.sysSeq, c.Seq)
	}
	from := c.Tick - uint32(cc.keep)
	n := 0
	for n < len(cc.window) && int32(cc.window[n].Tick-from) <= 0 {
		n++
	}
	if n > 0 {
		cc.window = slices.Delete(cc.window, 0, n)
	}
	k := *c
	k.Data = slices.Clone(c.Data)
	cc.window = append(cc.window, k)
}

// RelayState is what this client's worlds tell a relay that takes the
// game over (Relay.Adopt): the server's tick now as the client
// estimates it, the committed tick, the lead, the players, every
// committed command it kept (KeepCommitted) and every buffered command
// the relay sent it (not its own: it sends those again, as every
// client does, and not the mesh's unconfirmed copies). ok is false
// while it holds no committed state.
func (cc *Client) RelayState(now time.Time) (st RelayState, ok bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.have || cc.ls == nil {
		return st, false
	}
	ls := cc.ls
	st = RelayState{Clock: max(cc.present(now), ls.CommittedTick()), Committed: ls.CommittedTick(), Lead: cc.lead,
		InputSize: cc.game.Schema().InputSize, Players: slices.Clone(ls.Players()), Seqs: map[uint16]uint32{},
		SysSeq: cc.sysSeq, From: ls.CommittedTick()}
	for p, s := range cc.seen {
		st.Seqs[p] = s
	}
	if len(cc.window) > 0 {
		st.From = cc.window[0].Tick - 1
		for _, c := range cc.window {
			if int32(c.Tick-st.From) > 0 {
				st.Commands = append(st.Commands, c)
			}
		}
	}
	ls.Pending(func(c *sim.Command) {
		own := c.Kind == sim.CommandInput && cc.isOwn(c.Player)
		if _, tentative := ls.Has(c.Kind, c.Player, c.Seq); own || tentative {
			return
		}
		k := *c
		k.Data = slices.Clone(c.Data)
		st.Commands = append(st.Commands, k)
		if c.Kind == sim.CommandInput {
			st.Seqs[c.Player] = c.Seq
		} else {
			st.SysSeq = max(st.SysSeq, c.Seq)
		}
	})
	for _, p := range cc.c.Players() {
		// Its own: numbered on from the last the relay had; the client
		// sends the rest again.
		seq := cc.seq[p]
		for _, o := range cc.own {
			if o.player == p {
				seq = min(seq, o.seq-1)
			}
		}
		st.Seqs[p] = seq
	}
	return st, true
}

// resumeAttach goes on, on a new session, with the worlds held (Resume):
// the others' buffered commands go (the relay sends those it has) and
// ours not yet committed go out again.
func (cc *Client) resumeAttach() {
	cc.resume = false
	cc.resuming = true
	cc.commitC, cc.commitAt, cc.commitRx = cc.ls.CommittedTick(), 0, 0
	var others []sim.Command
	cc.ls.Pending(func(c *sim.Command) {
		if c.Kind != sim.CommandInput || !cc.isOwn(c.Player) {
			others = append(others, sim.Command{Kind: c.Kind, Player: c.Player, Seq: c.Seq})
		}
	})
	for _, c := range others {
		cc.ls.Remove(c.Kind, c.Player, c.Seq)
	}
	clear(cc.shortcuts)
	for i := range cc.own {
		o := &cc.own[i]
		f := proto.CommandFrame{Kind: proto.CommandInput, Player: o.player, Tick: o.tick, Seq: o.seq, Data: o.data}
		var err error
		if cc.frame, err = f.Append(cc.frame[:0]); err != nil || cc.sendFrame(cc.frame) != nil {
			continue
		}
		cc.sent++
		o.idx = cc.sent
		cc.stats.Resent++
	}
	if cc.cfg.Mesh {
		cc.startMesh()
	}
	cc.log.Info("resuming on the relay that took the game over", "committed", cc.ls.CommittedTick(), "resent", len(cc.own))
}

// migrated takes the successor relay's host migration control: it has
// every command after from; a committed world that trails from cannot
// catch up, and asks for a committed state.
func (cc *Client) migrated(from uint32) {
	if !cc.resuming || int32(cc.ls.CommittedTick()-from) >= 0 {
		return
	}
	cc.log.Warn("committed world too far behind the relay that took over: asking for the committed state",
		"committed", cc.ls.CommittedTick(), "from", from)
	cc.resuming = false
	cc.requestState(proto.ResyncSlowClient)
}

// CommittedTick is the committed world's tick (0 before the first
// state).
func (cc *Client) CommittedTick() uint32 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ls == nil {
		return 0
	}
	return cc.ls.CommittedTick()
}
