package commits

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Commits mode (docs/COMMITS.md): the server relays commands
// and decides commits; every client runs a committed and a live world
// (sim.Lockstep). Host is the server half, Client the client
// half.

// GameFactory makes the world of a new commits-mode game.
type GameFactory func(gameID uint64) (sim.CommitGame, error)

// Config tunes a Host. The zero value is the default.
type Config struct {
	// Capacity is the command buffer's length in ticks (a command is
	// never scheduled further ahead of the committed tick). Default 4 s
	// of ticks.
	Capacity int
	// MaxBuffer is how far, in time, a client's live world may lag the
	// server's clock before the client is kicked out of the commit (the
	// others' commits never wait longer) and resynchronised from a fresh
	// committed copy. Default 1 s.
	MaxBuffer time.Duration
	// MinLead and MaxLead bound the lead, in ticks: how far ahead of the
	// present a command is scheduled, computed from the two longest
	// round trips so that it reaches every client before its tick.
	// Defaults 1 and a quarter of Capacity.
	MinLead, MaxLead int
	// SumEvery is how many committed ticks each client checksums in one
	// commit sums frame (every tick is checked). Default the tick rate
	// (one frame a second), at most proto.MaxCommitSums.
	SumEvery int
	// FullCodec compresses committed states sent to joining and
	// resynchronised clients. Default zstd.
	FullCodec deltacomp.FullCodec
	// Handler, if set, also receives the connections' events.
	Handler tickwire.Handler
	// NoMesh refuses the mesh: clients that offer one are not
	// introduced to each other, and every command goes through the
	// server.
	NoMesh bool
}

// HostStats count what a Host did.
type HostStats struct {
	Games     int
	Joins     uint64
	Leaves    uint64
	Commands  uint64 // commands relayed
	Late      uint64 // commands that arrived after their tick was committed and were moved forward
	Commits   uint64 // ticks committed
	Kicks     uint64 // clients taken out of the commit for lagging more than MaxBuffer
	TooSlow   uint64 // of those, disconnected because their reliable queue was full
	Resyncs   uint64 // committed states sent to clients already playing
	Desyncs   uint64 // clients whose committed checksum differed from the server's
	Checked   uint64 // committed ticks whose checksum a client sent and the server compared
	BadFrames uint64
	// Introductions counts pairs of clients introduced to each other
	// (mesh), MeshRemovals the pairs taken apart (a client left or
	// was kicked).
	Introductions, MeshRemovals uint64
}

// Host runs commits-mode games on a Server: per game id, the
// authoritative committed world, the command buffer, and the clients'
// progress. Use it as the server's Handler.
type Host struct {
	srv     *tickwire.Server
	log     *slog.Logger
	factory GameFactory
	cfg     Config
	codec   proto.Codec
	codecs  deltacomp.Codecs
	period  time.Duration
	games   map[uint64]*commitGame
	conns   map[*tickwire.Conn]*commitConn
	stats   HostStats
	buf     []byte
	state   []byte
	secret  [32]byte // the mesh's pair keys derive from it
}

// commitGame is one running game.
type commitGame struct {
	id     uint64
	ls     *sim.Lockstep
	conns  []*commitConn
	sysSeq uint32
	lead   int
	// leadLow is when the computed lead first fell 2 below lead (the
	// lead shrinks only after it stayed low for a while).
	leadLow   time.Time
	joined    map[uint16]uint32 // tick each present player joins at
	meshEpoch uint64            // introductions so far: every pair's keys are new
	seqs      map[uint16]uint32 // each player's last command seq, across its connections
	relay     []byte            // a command frame being relayed
}

// commitConn is one connection of a game.
type commitConn struct {
	h       *Host
	g       *commitGame
	c       *tickwire.Conn
	sent    uint32 // reliable commit-mode frames sent
	atSent  uint32 // sent when the last commit was decided
	atRecv  uint32 // recv then
	recv    uint32 // command frames received
	live    uint32 // the client's live tick, counted (see item)
	active  bool   // counts in the commit
	since   uint32 // the tick of the last state sent: active once live reaches it
	lastSeq map[uint16]uint32
	stamp   map[uint16]uint32 // last tick a command of the player was put at
	sums    proto.CommitSumsFrame
	stateAt time.Time
	tick    uint32
	// the path as of this tick: half the round trip, and that plus twice
	// the jitter (a one-way delay with room for its variation)
	up, oneway time.Duration
	// the mesh: where the client listens (invalid: not in it),
	// whether it is out of it for now (kicked), and the round trips it
	// reported to its peers (by connection id; 0: unreachable)
	meshAddr netip.AddrPort
	meshOut  bool
	meshRTT  map[uint32]time.Duration
	report   proto.MeshReportFrame
}

// NewHost returns a host that creates games with factory, or an
// error naming what is wrong with cfg. Install it with srv.Handle.
func NewHost(srv *tickwire.Server, factory GameFactory, cfg Config) (*Host, error) {
	if factory == nil {
		return nil, errors.New("tickwire: NewCommitHost needs a game factory")
	}
	codec, ok := cfg.FullCodec.Codec()
	if !ok {
		return nil, fmt.Errorf("tickwire: CommitConfig.FullCodec %d is not a codec", cfg.FullCodec)
	}
	rate := srv.Config().TickRate
	if cfg.Capacity == 0 {
		cfg.Capacity = 4 * rate
	}
	if cfg.MaxBuffer == 0 {
		cfg.MaxBuffer = time.Second
	}
	if cfg.MinLead == 0 {
		cfg.MinLead = 1
	}
	if cfg.MaxLead == 0 {
		cfg.MaxLead = max(cfg.MinLead, cfg.Capacity/4)
	}
	if cfg.SumEvery == 0 {
		cfg.SumEvery = min(rate, proto.MaxCommitSums)
	}
	period := time.Second / time.Duration(rate)
	switch {
	case cfg.Capacity < 8 || cfg.Capacity > 1<<16:
		return nil, fmt.Errorf("tickwire: CommitConfig.Capacity %d out of 8..65536 ticks", cfg.Capacity)
	case cfg.MaxBuffer < 2*period || cfg.MaxBuffer > time.Duration(cfg.Capacity/2)*period:
		return nil, fmt.Errorf("tickwire: CommitConfig.MaxBuffer %v out of 2 ticks..half the Capacity (%v)", cfg.MaxBuffer, time.Duration(cfg.Capacity/2)*period)
	case cfg.MinLead < 1 || cfg.MaxLead < cfg.MinLead || cfg.MaxLead > cfg.Capacity/2:
		return nil, fmt.Errorf("tickwire: CommitConfig lead %d..%d: want 1 ≤ MinLead ≤ MaxLead ≤ Capacity/2", cfg.MinLead, cfg.MaxLead)
	case cfg.SumEvery < 1 || cfg.SumEvery > proto.MaxCommitSums:
		return nil, fmt.Errorf("tickwire: CommitConfig.SumEvery %d out of 1..%d", cfg.SumEvery, proto.MaxCommitSums)
	}
	if cfg.Handler == nil {
		cfg.Handler = noHandler{}
	}
	h := &Host{srv: srv, log: srv.Config().Logger, factory: factory, cfg: cfg, codec: codec, period: period,
		games: map[uint64]*commitGame{}, conns: map[*tickwire.Conn]*commitConn{}}
	rand.Read(h.secret[:])
	return h, nil
}

// Stats returns the counters. Call it on the server's loop (Server.Do).
func (h *Host) Stats() HostStats {
	s := h.stats
	s.Games = len(h.games)
	return s
}

// Resyncs and Desyncs are Stats' counters (for metrics collectors, on
// the server's loop).
func (h *Host) Resyncs() uint64 { return h.stats.Resyncs }
func (h *Host) Desyncs() uint64 { return h.stats.Desyncs }

func (h *Host) game(id uint64) (*commitGame, error) {
	if g, ok := h.games[id]; ok {
		return g, nil
	}
	w, err := h.factory(id)
	if err != nil {
		return nil, err
	}
	ls, err := sim.NewLockstep(w, h.srv.Tick(), nil, sim.LockstepConfig{Capacity: h.cfg.Capacity, SumHistory: 4 * h.cfg.SumEvery})
	if err != nil {
		return nil, err
	}
	g := &commitGame{id: id, ls: ls, lead: h.cfg.MinLead, joined: map[uint16]uint32{}, seqs: map[uint16]uint32{}}
	h.games[id] = g
	h.log.Info("commits game started", "game", id, "tick", ls.CommittedTick())
	return g, nil
}

// Connected starts a connection: its players join at a tick a lead
// ahead, and it gets the committed state with every buffered command.
func (h *Host) Connected(c *tickwire.Conn) {
	g, err := h.game(c.GameID())
	if err != nil {
		h.log.Warn("game refused", "game", c.GameID(), "err", err)
		c.Refuse(0, err.Error())
		return
	}
	cc := &commitConn{h: h, g: g, c: c, lastSeq: map[uint16]uint32{}, stamp: map[uint16]uint32{}, tick: h.srv.Tick()}
	h.conns[c] = cc
	c.SetFrameHandler(cc)
	g.conns = append(g.conns, cc)
	for _, p := range c.Players() {
		// The player's commands are numbered on from the game's count,
		// so a rejoining player's never collide with its old ones.
		cc.lastSeq[p] = g.seqs[p]
		if _, ok := g.joined[p]; ok {
			h.log.Warn("player slot already in the game", "game", g.id, "player", p)
			continue
		}
		at := h.schedule(g)
		g.joined[p] = at
		h.system(g, sim.CommandJoin, p, at, cc)
		h.stats.Joins++
		h.log.Info("player joins", "game", g.id, "player", p, "tick", at, "conn", c.ID())
	}
	h.sendState(cc, proto.CauseJoin, 0)
	h.cfg.Handler.Connected(c)
}

// schedule is the tick an event decided now runs at: a lead ahead.
func (h *Host) schedule(g *commitGame) uint32 {
	return max(h.srv.Tick()+uint32(g.lead), g.ls.CommittedTick()+1)
}

// system buffers a join or leave and relays it to every connection but
// skip (which gets it with the state).
func (h *Host) system(g *commitGame, k sim.CommandKind, player uint16, at uint32, skip *commitConn) {
	g.sysSeq++
	cmd := sim.Command{Kind: k, Player: player, Tick: at, Seq: g.sysSeq}
	if err := g.ls.Add(&cmd); err != nil {
		h.log.Error("schedule join or leave", "game", g.id, "err", err)
		return
	}
	h.relay(g, &cmd, skip)
}

// relay sends cmd to every connection of g except skip.
func (h *Host) relay(g *commitGame, cmd *sim.Command, skip *commitConn) {
	if err := g.encode(cmd); err != nil {
		h.log.Error("encode command", "err", err)
		return
	}
	for _, cc := range g.conns {
		if cc != skip {
			cc.send(g.relay)
		}
	}
}

// encode puts cmd's command frame in g.relay.
func (g *commitGame) encode(cmd *sim.Command) error {
	f := proto.CommandFrame{Kind: proto.CommandKind(cmd.Kind), Player: cmd.Player, Tick: cmd.Tick, Seq: cmd.Seq, Data: cmd.Data}
	var err error
	g.relay, err = f.Append(g.relay[:0])
	return err
}

// send queues a reliable commit-mode frame; a client whose queue is full
// is too slow to play.
func (cc *commitConn) send(frame []byte) {
	if cc.c.Closed() {
		return
	}
	if err := cc.c.SendFrame(frame); err != nil {
		cc.h.log.Warn("client too slow: reliable queue full", "game", cc.g.id, "conn", cc.c.ID(), "err", err)
		cc.h.stats.TooSlow++
		cc.c.Close(proto.DisconnectTooSlow)
		return
	}
	cc.sent++
}

// sendState sends the committed state and every buffered command; the
// connection counts in the commit again once its live world reaches the
// state's tick. reason is 0 for a join.
func (h *Host) sendState(cc *commitConn, cause proto.SnapshotCause, reason proto.ResyncReason) {
	g := cc.g
	h.state = append(h.state[:0], byte(reason))
	h.state = binary.LittleEndian.AppendUint32(h.state, cc.recv)
	h.state = append(h.state, byte(len(cc.c.Players())))
	for _, p := range cc.c.Players() {
		h.state = binary.LittleEndian.AppendUint16(h.state, p)
		h.state = binary.LittleEndian.AppendUint32(h.state, cc.lastSeq[p])
	}
	h.state = g.ls.AppendState(h.state)
	var err error
	h.buf, err = h.codecs.AppendCompress(h.buf[:0], h.state, h.codec)
	if err == nil {
		f := proto.FullSnapshotFrame{Cause: cause, Tick: g.ls.CommittedTick(), Codec: h.codec,
			RawLen: uint32(len(h.state)), Data: h.buf}
		h.buf, err = f.Append(h.buf[len(h.buf):])
	}
	if err != nil {
		h.log.Error("encode committed state", "game", g.id, "err", err)
		cc.c.Close(proto.DisconnectProtocol)
		return
	}
	cc.send(h.buf)
	g.ls.Pending(func(c *sim.Command) {
		if g.encode(c) == nil {
			cc.send(g.relay)
		}
	})
	cc.active = false
	cc.since = g.ls.CommittedTick()
	cc.stateAt = h.srv.Now()
	if cause != proto.CauseJoin {
		h.stats.Resyncs++
	}
}

// Message passes application messages on.
func (h *Host) Message(c *tickwire.Conn, m *tickwire.Message) { h.cfg.Handler.Message(c, m) }

// Disconnected schedules the connection's players' leaves.
func (h *Host) Disconnected(c *tickwire.Conn, reason proto.DisconnectReason) {
	cc, ok := h.conns[c]
	if !ok {
		h.cfg.Handler.Disconnected(c, reason)
		return
	}
	delete(h.conns, c)
	g := cc.g
	h.meshLeave(cc)
	g.conns = slices.DeleteFunc(g.conns, func(x *commitConn) bool { return x == cc })
	for _, p := range c.Players() {
		j, ok := g.joined[p]
		if !ok {
			continue
		}
		delete(g.joined, p)
		at := max(h.schedule(g), j+1)
		h.system(g, sim.CommandLeave, p, at, nil)
		h.stats.Leaves++
		h.log.Info("player leaves", "game", g.id, "player", p, "tick", at, "reason", reason)
	}
	if len(g.conns) == 0 {
		delete(h.games, g.id)
		h.log.Info("commits game ended", "game", g.id, "tick", g.ls.CommittedTick())
	}
	h.cfg.Handler.Disconnected(c, reason)
}

// Tick commits what every counted client has reached, kicks the clients
// that hold the commit back too long, and updates the lead.
func (h *Host) Tick(now time.Time, tick uint32) {
	if t, ok := h.cfg.Handler.(tickwire.Ticker); ok {
		t.Tick(now, tick)
	}
	maxLag := uint32(h.cfg.MaxBuffer / h.period)
	for _, g := range h.games {
		for _, cc := range g.conns {
			st := cc.c.Stats()
			cc.up, cc.oneway = st.RTT/2, st.RTT/2+2*st.Jitter
		}
		h.updateLead(g, now)
		commit := tick
		for _, cc := range g.conns {
			cc.tick = tick
			lag := int32(tick - cc.live)
			if !cc.active {
				// Counted again once it holds the state it was sent and
				// keeps up (a kicked client is not kicked again while it
				// still lags).
				if int32(cc.live-cc.since) < 0 || lag > int32(maxLag/2) {
					continue
				}
				cc.active = true
				if cc.meshOut {
					h.meshJoin(cc)
				}
			}
			// Kick a client whose live world lags so far that the others'
			// commit would wait more than MaxBuffer: the lag the commit
			// sees is its reported tick plus the path up.
			up := uint32(cc.up / h.period)
			if lag > int32(maxLag-min(maxLag/2, up+2)) {
				h.kick(cc)
				continue
			}
			if int32(cc.live-commit) < 0 {
				commit = cc.live
			}
		}
		limit := g.ls.CommittedTick() + uint32(h.cfg.Capacity)
		if int32(commit-limit) > 0 {
			commit = limit
		}
		if int32(commit-g.ls.CommittedTick()) > 0 {
			n := commit - g.ls.CommittedTick()
			if err := g.ls.Commit(commit); err != nil {
				h.log.Error("commit", "game", g.id, "err", err)
			}
			h.stats.Commits += uint64(n)
		}
		for _, cc := range g.conns {
			cc.atSent, cc.atRecv = cc.sent, cc.recv
		}
	}
}

// kick takes a lagging client out of the commit and sends it a fresh
// committed copy (or drops it, if even that cannot be queued).
func (h *Host) kick(cc *commitConn) {
	h.stats.Kicks++
	h.log.Warn("client kicked from the commit: too slow", "game", cc.g.id, "conn", cc.c.ID(),
		"live", cc.live, "tick", cc.tick, "max_buffer", h.cfg.MaxBuffer)
	h.sendState(cc, proto.CauseResync, proto.ResyncSlowClient)
	h.meshLeave(cc)
}

// updateLead sets the game's lead: the longest time a command needs to
// reach every other client — up one client's path and down another's
// through the server, or straight across the mesh when that pair
// reaches each other — plus two ticks (rounding, the server's turn).
func (h *Host) updateLead(g *commitGame, now time.Time) {
	need := g.slowestPath()
	want := int(need/h.period) + 2
	want = max(h.cfg.MinLead, min(h.cfg.MaxLead, want))
	switch {
	case want > g.lead:
		g.lead = want
		g.leadLow = time.Time{}
	case want <= g.lead-2:
		if g.leadLow.IsZero() {
			g.leadLow = now
		} else if now.Sub(g.leadLow) > 2*time.Second {
			// Lower for 2 s (the first estimates of a new connection's
			// round trip are pessimistic): come down, keeping a tick.
			g.lead = want + 1
			g.leadLow = time.Time{}
		}
	default:
		g.leadLow = time.Time{}
	}
}

// slowestPath is the longest, over ordered pairs of clients, of the
// quickest way a command goes from one to the other. Through the server
// it is both one-way delays with twice their jitter; across the mesh,
// half the pair's probe round trip with a quarter more for its
// variation (a lost shortcut still comes through the server, late).
func (g *commitGame) slowestPath() time.Duration {
	meshed := false
	for _, cc := range g.conns {
		meshed = meshed || len(cc.meshRTT) > 0
	}
	if !meshed {
		// The two slowest one-way paths make the slowest pair.
		var a, b time.Duration
		for _, cc := range g.conns {
			if d := cc.oneway; d > a {
				a, b = d, a
			} else if d > b {
				b = d
			}
		}
		if b == 0 {
			b = a
		}
		return a + b
	}
	var worst time.Duration
	for _, from := range g.conns {
		for _, to := range g.conns {
			if from == to {
				continue
			}
			d := from.oneway + to.oneway
			if rtt := from.meshRTT[to.c.ID()]; rtt > 0 {
				d = min(d, rtt/2+rtt/8)
			}
			worst = max(worst, d)
		}
	}
	return worst
}

// conn is the game's connection with id, if any.
func (g *commitGame) conn(id uint32) *commitConn {
	for _, cc := range g.conns {
		if cc.c.ID() == id {
			return cc
		}
	}
	return nil
}

// meshJoin introduces cc to every other client of its game in the mesh.
func (h *Host) meshJoin(cc *commitConn) {
	cc.meshOut = false
	if cc.meshRTT == nil {
		cc.meshRTT = map[uint32]time.Duration{}
	}
	for _, o := range cc.g.conns {
		if o != cc && o.meshAddr.IsValid() && !o.meshOut {
			h.introduce(cc, o)
		}
	}
}

// meshLeave takes cc out of everyone's mesh (and everyone out of its).
func (h *Host) meshLeave(cc *commitConn) {
	if !cc.meshAddr.IsValid() || cc.meshOut {
		return
	}
	cc.meshOut = true
	clear(cc.meshRTT)
	for _, o := range cc.g.conns {
		if o == cc || !o.meshAddr.IsValid() || o.meshOut {
			continue
		}
		h.sendIntro(o, &proto.MeshIntroFrame{Op: proto.MeshRemove, Conn: cc.c.ID()})
		h.sendIntro(cc, &proto.MeshIntroFrame{Op: proto.MeshRemove, Conn: o.c.ID()})
		delete(o.meshRTT, cc.c.ID())
		h.stats.MeshRemovals++
	}
}

// introduce gives a and b each other's address and a fresh key per
// direction, derived from the host's secret: never a session key.
func (h *Host) introduce(a, b *commitConn) {
	g := a.g
	g.meshEpoch++
	ab := h.pairKey(g, a, b)
	ba := h.pairKey(g, b, a)
	h.sendIntro(a, &proto.MeshIntroFrame{Op: proto.MeshAdd, Conn: b.c.ID(), Addr: b.meshAddr, Players: b.c.Players(), SendKey: ab, RecvKey: ba})
	h.sendIntro(b, &proto.MeshIntroFrame{Op: proto.MeshAdd, Conn: a.c.ID(), Addr: a.meshAddr, Players: a.c.Players(), SendKey: ba, RecvKey: ab})
	h.stats.Introductions++
}

// pairKey is the key of the packets from one client to another: HKDF
// over the host's secret, naming the game, the introduction and the
// direction.
func (h *Host) pairKey(g *commitGame, from, to *commitConn) [proto.KeySize]byte {
	var info [8 + 8 + 4 + 4]byte
	binary.LittleEndian.PutUint64(info[0:], g.id)
	binary.LittleEndian.PutUint64(info[8:], g.meshEpoch)
	binary.LittleEndian.PutUint32(info[16:], from.c.ID())
	binary.LittleEndian.PutUint32(info[20:], to.c.ID())
	k, err := hkdf.Key(sha256.New, h.secret[:], nil, "tickwire peer key "+string(info[:]), proto.KeySize)
	var key [proto.KeySize]byte
	if err == nil {
		copy(key[:], k)
	}
	return key
}

func (h *Host) sendIntro(cc *commitConn, f *proto.MeshIntroFrame) {
	b, err := f.Append(nil)
	if err != nil {
		h.log.Error("encode peer introduction", "err", err)
		return
	}
	if cc.c.Closed() {
		return
	}
	// Not a commit-mode stream frame: the client does not count it.
	if err := cc.c.SendFrame(b); err != nil {
		cc.h.stats.TooSlow++
		cc.c.Close(proto.DisconnectTooSlow)
	}
}

// Frame handles a client's commits-mode frames.
func (cc *commitConn) Frame(t proto.FrameType, f []byte, p *tickwire.PacketInfo) error {
	h := cc.h
	switch t {
	case proto.FrameCommand:
		cmd, _, err := proto.ParseCommandFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		return cc.command(&cmd)
	case proto.FrameCommitItem:
		item, _, err := proto.ParseCommitItemFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		// Count the live tick only once every command sent before it has
		// arrived; never beyond the server's own clock.
		if item.Commands <= cc.recv && int32(item.Live-cc.live) > 0 {
			cc.live = min(item.Live, h.srv.Tick())
		}
		return nil
	case proto.FrameCommitSums:
		if _, err := proto.ParseCommitSumsFrame(f, &cc.sums); err != nil {
			return cc.bad(err)
		}
		cc.checkSums()
		return nil
	case proto.FrameMeshIntro:
		f, _, err := proto.ParseMeshIntroFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		if f.Op != proto.MeshHello || f.Port == 0 {
			return cc.bad(errMeshHello)
		}
		if h.cfg.NoMesh || cc.meshAddr.IsValid() {
			return nil
		}
		cc.meshAddr = netip.AddrPortFrom(cc.c.Addr().Addr(), f.Port)
		h.meshJoin(cc)
		return nil
	case proto.FrameMeshReport:
		if _, err := proto.ParseMeshReportFrame(f, &cc.report); err != nil {
			return cc.bad(err)
		}
		if !cc.meshAddr.IsValid() {
			return nil
		}
		clear(cc.meshRTT)
		for _, r := range cc.report.Links {
			if cc.g.conn(r.Conn) != nil {
				cc.meshRTT[r.Conn] = time.Duration(r.RTTMicros) * time.Microsecond
			}
		}
		return nil
	case proto.FrameResyncRequest:
		req, _, err := proto.ParseResyncRequestFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		if h.srv.Now().Sub(cc.stateAt) < resyncCooldown {
			return nil
		}
		h.log.Info("client asked for the committed state", "game", cc.g.id, "conn", cc.c.ID(), "reason", req.Reason)
		h.sendState(cc, proto.CauseResync, req.Reason)
		return nil
	}
	return cc.bad(fmt.Errorf("tickwire: %v frame in commits mode", t))
}

func (cc *commitConn) bad(err error) error {
	cc.h.stats.BadFrames++
	return err
}

var (
	errMeshHello     = errors.New("tickwire: a client may only say hello to the mesh, with its port")
	errCommandKind   = errors.New("tickwire: a client may only send input commands")
	errCommandPlayer = errors.New("tickwire: command for a player of another connection")
	errCommandSeq    = errors.New("tickwire: command out of sequence")
)

// command buffers a client's command and relays it. A command for a
// tick already committed is moved to the first open tick (and its sender
// told); one scheduled beyond the buffer is refused.
func (cc *commitConn) command(f *proto.CommandFrame) error {
	h, g := cc.h, cc.g
	cc.recv++
	if f.Kind != proto.CommandInput {
		return cc.bad(errCommandKind)
	}
	if !slices.Contains(cc.c.Players(), f.Player) {
		return cc.bad(errCommandPlayer)
	}
	if f.Seq != cc.lastSeq[f.Player]+1 {
		return cc.bad(errCommandSeq)
	}
	cc.lastSeq[f.Player] = f.Seq
	if _, present := g.joined[f.Player]; !present {
		return nil
	}
	// The Lockstep refuses a tick beyond its buffer (sim.ErrCommandAhead).
	at := max(f.Tick, g.ls.CommittedTick()+1, cc.stamp[f.Player]+1)
	cmd := sim.Command{Kind: sim.CommandInput, Player: f.Player, Tick: at, Seq: f.Seq, Data: f.Data}
	if err := g.ls.Add(&cmd); err != nil {
		return cc.bad(err)
	}
	g.seqs[f.Player] = f.Seq
	cc.stamp[f.Player] = at
	h.stats.Commands++
	h.relay(g, &cmd, cc)
	if at != f.Tick {
		// Too late for its tick: the sender moves its copy where
		// everyone else has it.
		h.stats.Late++
		cc.send(g.relay)
	}
	return nil
}

// checkSums compares a client's committed checksums with the server's;
// a client that differs gets the server's committed state.
func (cc *commitConn) checkSums() {
	h, g := cc.h, cc.g
	for i, sum := range cc.sums.Sums {
		tick := cc.sums.From + uint32(i)
		want, ok := g.ls.CommittedSum(tick)
		if !ok {
			continue
		}
		h.stats.Checked++
		if want != sum {
			h.stats.Desyncs++
			h.log.Warn("desync: client's committed state differs from the server's", "game", g.id, "conn", cc.c.ID(),
				"first_divergent_tick", tick, "server_sum", fmt.Sprintf("%016x", want), "client_sum", fmt.Sprintf("%016x", sum))
			h.sendState(cc, proto.CauseResync, proto.ResyncChecksum)
			return
		}
	}
}

// AppendFrames adds the commit: the committed tick, the stream position
// the client must have reached to apply it, and the lead.
func (cc *commitConn) AppendFrames(b []byte, room int, p *tickwire.PacketInfo) []byte {
	f := proto.ControlFrame{Code: proto.ControlCommit, Tick: cc.g.ls.CommittedTick(),
		Arg: proto.CommitArg(cc.atSent, uint16(cc.atRecv), uint16(cc.g.lead))}
	if f.Len() > room {
		return b
	}
	out, err := f.Append(b)
	if err != nil {
		return b
	}
	return out
}

// Ticks names the server's tick in every packet: the clients' clock.
func (cc *commitConn) Ticks() tickwire.Ticks {
	return tickwire.Ticks{Tick: cc.tick, InterpFrom: cc.tick, InterpTo: cc.tick}
}

// resyncCooldown is the shortest time between two committed states sent
// to one connection: a client cannot buy the compression of the whole
// world faster than that.
const resyncCooldown = 500 * time.Millisecond

// noHandler is the Config.Handler of a host given none.
type noHandler struct{}

func (noHandler) Connected(*tickwire.Conn)                            {}
func (noHandler) Message(*tickwire.Conn, *tickwire.Message)           {}
func (noHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
