package commits

import (
	"errors"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// A peer-hosted commits game (docs/MIGRATION.md) survives the loss of
// its relay: hosting commits is relaying, so any player can take the
// relay's place with the command buffer and the commit counters, while
// the clients keep their worlds. The relay's warm standbys are clients
// like the others (they get every command the relay relays); what
// makes them warm is the commit: the relay tells every other client of
// a commit, and acknowledges its commands in it, only once every
// standby holds that commit (Hooks.Standbys). So whatever a client was
// told is committed or acknowledged, a standby has; Client.RelayState
// is what it hands its own Relay (Relay.Adopt) when elected, and the
// clients re-dial it and resume (Client.Resume): they send again their
// commands it does not have and get from it every command after the
// oldest tick a client may still need.

// Hooks is the seam through which a layer above acts on a commits
// server's games without the server knowing it: host migration
// (package peerhost) sends the roster and credentials from Tick, takes
// its standbys' acknowledgements in Frame and names the standbys the
// commit waits for in Standbys. The server calls it and never imports
// what implements it. Every method runs on the server's loop.
type Hooks interface {
	// Standbys appends to dst the connections of game gameID that are
	// warm standbys, and returns it with held, the newest committed
	// tick every one of them holds (ok false: one holds none yet). The
	// standbys are told of every commit as it is decided; the others
	// only of commits up to held. No standby and ok: nothing is held
	// back; no standby and not ok: nobody is told of a new commit (the
	// standbys are not known yet).
	Standbys(gameID uint64, dst []*tickwire.Conn) (out []*tickwire.Conn, held uint32, ok bool)
	// Frame receives each frame of c's packets that the server does not
	// handle itself; an error counts it as bad (HostStats.BadFrames).
	Frame(c *tickwire.Conn, t proto.FrameType, frame []byte) error
	// Joined runs once c's players are in their game: joined, or
	// resumed into a game adopted after a host migration (Relay.Adopt).
	Joined(c *tickwire.Conn, resumed bool)
	// Left runs once c's players have left their game for reason r.
	Left(c *tickwire.Conn, r proto.DisconnectReason)
	// Tick runs at the start of each server tick, before any game
	// commits. Returning false stops the games for good: nothing
	// commits again (a relay replaced by a successor, or handed over).
	Tick(now time.Time) bool
}

// maxDecided bounds the commits a connection keeps decided but not yet
// announced (its standbys hold none of them): beyond it the oldest go,
// and the connection hears of a commit again once a standby holds a
// newer one.
const maxDecided = 256

// decide notes the commit just decided on every connection of g, and
// sets the one each is told of.
func (h *commitServer) decide(g *commitGame) {
	d := commitDecision{tick: g.ls.CommittedTick()}
	var standbys []*tickwire.Conn
	held, ok := d.tick, true
	if h.cfg.Hooks != nil {
		standbys, held, ok = h.cfg.Hooks.Standbys(g.id, h.standbyBuf[:0])
		h.standbyBuf = standbys
	}
	for _, cc := range g.conns {
		d.sent, d.recv = cc.sent, cc.recv
		if ok && len(standbys) == 0 || slices.Contains(standbys, cc.c) {
			cc.decided = cc.decided[:0]
			cc.announced = d
			continue
		}
		if n := len(cc.decided); n == 0 || cc.decided[n-1].tick != d.tick || cc.decided[n-1].sent != d.sent || cc.decided[n-1].recv != d.recv {
			if n >= maxDecided {
				cc.decided = slices.Delete(cc.decided, 0, 1)
			}
			cc.decided = append(cc.decided, d)
		}
		if !ok {
			continue
		}
		n := 0
		for n < len(cc.decided) && int32(cc.decided[n].tick-held) <= 0 {
			cc.announced = cc.decided[n]
			n++
		}
		cc.decided = slices.Delete(cc.decided, 0, n)
	}
}

// Migration describes the host migration that brings an adopted game
// to a Relay.
type Migration struct {
	Epoch uint32        // the new relay's epoch
	Host  uint16        // its own player's slot (0: not a player)
	Addr  string        // where the players reach it (≤ 255 bytes)
	Grace time.Duration // how long the players have to re-dial
	// Gone are players not to wait for (the old relay's own player: its
	// process is what was lost): they leave at once.
	Gone []uint16
}

// LeftInMigration is the reason of the leave of a player an adopted
// game awaited that did not re-dial in time.
const LeftInMigration = "lost in migration"

// RelayState is what a relay needs to take a game over: its clock, the
// committed tick, the lead, the players present and each one's last
// command seq, the system commands' count, and every command after
// From (committed, so that a client whose committed world trails can
// catch up, then buffered). Client.RelayState makes one from a warm
// standby's worlds.
type RelayState struct {
	Clock     uint32 // the game's tick now
	Committed uint32
	Lead      int
	InputSize int
	Players   []uint16
	Seqs      map[uint16]uint32 // the last command seq of each player known
	SysSeq    uint32            // the last join or leave's seq
	From      uint32            // Commands hold every command after From
	Commands  []sim.Command
}

// adoption is a game adopted after a host migration, until its players
// are back (or their grace is over).
type adoption struct {
	frame proto.ControlFrame // the host migration control each gets first
	from  uint32             // the resumed get every command after it
	until time.Time
	// holdEnd: the commit waits for the awaited players until then
	holdEnd time.Time
	// unknown are the players whose last command seq the standby did
	// not know (no command since it joined): their first is taken as
	// it comes
	unknown map[uint16]bool
}

// Adopt makes st the running game gameID on this relay, which takes it
// over from a relay lost or handed over (host migration): its clock
// goes on from st.Clock, nothing before st.Committed commits again, and
// the players of st are awaited. A connection whose players are all
// awaited resumes them: it gets the host migration control
// (proto.ControlHostMigration: m's host, st.From, m's epoch and address),
// then every command after st.From, and counts in the commit once its
// live world is there; the commands it sends again that the game has
// are dropped. A player not back within m.Grace leaves with
// LeftInMigration; the players in m.Gone leave at once. Call it from
// the server's loop (Server.Do) before the players dial.
func (r *Relay) Adopt(gameID uint64, st RelayState, m Migration) error {
	h := r.commitServer
	switch {
	case h.games[gameID] != nil:
		return errors.New("commits: Adopt: the game is already running here")
	case len(m.Addr) > proto.MaxControlText:
		return errors.New("commits: Adopt: the new relay's address is longer than a control frame's text")
	case st.InputSize < 0 || st.InputSize > proto.MaxInputBytes/3:
		return errors.New("commits: Adopt: command size out of range")
	case int32(st.Committed-st.From) < 0 || int32(st.Clock-st.Committed) < 0:
		return errors.New("commits: Adopt: From ≤ Committed ≤ Clock does not hold")
	}
	g := &commitGame{id: gameID, lead: max(h.cfg.MinLead, min(h.cfg.MaxLead, st.Lead)), joined: map[uint16]uint32{},
		seqs: map[uint16]uint32{}, sysSeq: st.SysSeq, offset: st.Clock - h.srv.Tick(), awaiting: map[uint16]time.Time{}}
	g.relayed = &relayGame{inputSize: st.InputSize, t0: st.From, keep: true, keepFrom: st.From}
	ls, err := relayMode{r}.newLockstep(g, st.InputSize, st.Committed, st.Players)
	if err != nil {
		return err
	}
	g.ls = ls
	a := &adoption{from: st.From, until: h.srv.Now().Add(m.Grace), holdEnd: h.srv.Now().Add(adoptHold), unknown: map[uint16]bool{},
		frame: proto.ControlFrame{Code: proto.ControlHostMigration, Player: m.Host, Tick: st.From, Arg: uint64(m.Epoch), Text: []byte(m.Addr)}}
	for _, c := range st.Commands {
		switch {
		case int32(c.Tick-st.Committed) <= 0:
			g.relayed.hold(&c)
		default:
			if err := ls.Add(&c); err != nil {
				return err
			}
		}
		if c.Kind != sim.CommandInput {
			g.sysSeq = max(g.sysSeq, c.Seq)
		}
	}
	for _, p := range st.Players {
		g.joined[p] = st.Committed
		g.awaiting[p] = a.until
		seq, ok := st.Seqs[p]
		g.seqs[p] = seq
		a.unknown[p] = !ok
	}
	ls.Pending(func(c *sim.Command) {
		switch c.Kind {
		case sim.CommandJoin:
			g.joined[c.Player] = c.Tick
			g.awaiting[c.Player] = a.until
		case sim.CommandLeave:
			delete(g.joined, c.Player)
			delete(g.awaiting, c.Player)
		}
	})
	g.adopted = a
	h.games[gameID] = g
	for _, p := range m.Gone {
		if _, ok := g.awaiting[p]; ok {
			delete(g.awaiting, p)
			h.leavePlayer(g, p, LeftInMigration, 0)
		}
	}
	h.log.Info("commits game adopted", "game", gameID, "committed", st.Committed, "clock", st.Clock,
		"commands", len(st.Commands), "awaiting", len(g.awaiting))
	return nil
}

// resumes reports whether c's players are all awaited by an adopted
// game, and if so stops awaiting them: c resumes them.
func (g *commitGame) resumes(c *tickwire.Conn) bool {
	ps := c.Players()
	if g.adopted == nil || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		if _, ok := g.awaiting[p]; !ok {
			return false
		}
	}
	for _, p := range ps {
		delete(g.awaiting, p)
	}
	return true
}

// resume sends cc, back after the host migration, the control that
// says so and every command after the adopted state's From: it plays
// on with its own worlds.
func (h *commitServer) resume(cc *commitConn) {
	g := cc.g
	a := g.adopted
	if b, err := a.frame.Append(nil); err == nil && !cc.c.Closed() {
		// Not a commit-mode stream frame: the client does not count it.
		if err := cc.c.SendFrame(b); err != nil {
			cc.c.Close(proto.DisconnectTooSlow)
			return
		}
	}
	rg := g.relayed
	for i := range rg.held {
		c := rg.held[i]
		if int32(c.tick-a.from) <= 0 {
			continue
		}
		cmd := sim.Command{Kind: c.kind, Player: c.player, Tick: c.tick, Seq: c.seq, Data: rg.heldData[c.off : c.off+c.size]}
		if g.encode(&cmd) == nil {
			cc.send(g.relay)
		}
	}
	cc.sendPending()
	cc.resumed = true
	for _, p := range cc.c.Players() {
		if a.unknown[p] {
			if cc.anySeq == nil {
				cc.anySeq = map[uint16]bool{}
			}
			cc.anySeq[p] = true
		}
	}
	cc.stateSent(a.from, 0)
	cc.relayed.sumsFrom = g.ls.CommittedTick() + 1
	h.log.Info("players resumed after the host migration", "game", g.id, "players", cc.c.Players(), "conn", cc.c.ID())
}

// expireAdoption ends an adopted game's wait for its players: those not
// back leave (LeftInMigration), and the commands kept for their catch-up
// are let go.
func (h *commitServer) expireAdoption(g *commitGame, now time.Time) {
	a := g.adopted
	if a == nil || now.Before(a.until) && len(g.awaiting) > 0 {
		return
	}
	g.adopted = nil
	for p := range g.awaiting {
		delete(g.awaiting, p)
		h.leavePlayer(g, p, LeftInMigration, 0)
	}
	h.endIfEmpty(g)
}

// adoptHold bounds how long an adopted game's commit waits for the
// players it awaits (but the gone) to re-dial: their commands sent
// again must be back before it commits past them.
const adoptHold = time.Second

// holds reports whether g's commit waits at now for the players of an
// adopted game to re-dial.
func (g *commitGame) holds(now time.Time) bool {
	a := g.adopted
	return a != nil && len(g.awaiting) > 0 && now.Before(a.holdEnd)
}

// Conns appends to dst the connections playing game gameID, in the
// order they joined, and returns it. Call it from the server's loop.
func (h *commitServer) Conns(gameID uint64, dst []*tickwire.Conn) []*tickwire.Conn {
	if g := h.games[gameID]; g != nil {
		for _, cc := range g.conns {
			dst = append(dst, cc.c)
		}
	}
	return dst
}

// CommittedTick is game gameID's committed tick (ok false: it does not
// run here). Call it from the server's loop.
func (h *commitServer) CommittedTick(gameID uint64) (tick uint32, ok bool) {
	if g := h.games[gameID]; g != nil {
		return g.ls.CommittedTick(), true
	}
	return 0, false
}
