package commits

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// Commits mode (docs/COMMITS.md): the server relays commands
// and decides commits; every client runs a committed and a live world
// (sim.Lockstep). Host (the game compiled into the server) or Relay (no
// game code on the server) is the server half, Client the client half.

// game.Factory makes the world of a new commits-mode game.
type GameFactory func(gameID uint64) (sim.CommitGame, error)

// Config tunes a Host or a Relay. The zero value is the default.
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
	// Record, if set, records each game of a Host for tickwire-replay:
	// when a game starts, the Host asks it for the game's Writer (a
	// replay.Create of a file of its own) and records there what the
	// committed world runs (replay.CommitRecorder) until the game
	// ends. An error leaves the game unrecorded (logged). A Relay,
	// which runs no game, records nothing.
	Record func(gameID uint64) (*replay.Writer, error)
	// Hooks, if set, is called at the points of the server's life where
	// a layer above acts on its games: host migration (package
	// peerhost) hangs a peer-hosted relay's roster, warm standbys and
	// hand-over there (docs/MIGRATION.md).
	Hooks Hooks
}

// HostStats count what a Host (or a Relay) did.
type HostStats struct {
	Games     int
	Joins     uint64
	Leaves    uint64
	Rejoins   uint64 // connections back into their players' slots (tickwire.Conn.Rejoined)
	Commands  uint64 // commands relayed
	Late      uint64 // commands that arrived after their tick was committed and were moved forward
	Commits   uint64 // ticks committed
	Kicks     uint64 // clients taken out of the commit for lagging more than MaxBuffer
	TooSlow   uint64 // of those, disconnected because their reliable queue was full
	Resyncs   uint64 // committed states sent to clients already playing
	Desyncs   uint64 // clients whose committed checksum differed from the server's (relay: from the majority's)
	Checked   uint64 // committed ticks whose checksum a client sent and the server compared (relay: with the majority's)
	BadFrames uint64
	// Introductions counts pairs of clients introduced to each other
	// (mesh), MeshRemovals the pairs taken apart (a client left or
	// was kicked).
	Introductions, MeshRemovals uint64
	// Duplicates counts commands a client sent again after a host
	// migration that the game had already.
	Duplicates uint64
	// MeshChecks counts mesh addresses checked (a hello), MeshValidated
	// those whose challenge came back, MeshCheckFailed those that never
	// answered, MeshBadProofs proofs that matched no challenge.
	MeshChecks, MeshValidated, MeshCheckFailed, MeshBadProofs uint64
	// OffPace counts clients that stopped being waited for because their
	// live tick fell behind real time; KickedOut those disconnected after
	// kickLimit kicks within kickWindow.
	OffPace, KickedOut uint64
}

// Host runs commits-mode games on a Server with the game compiled in:
// per game id, besides the command buffer and the clients' progress, the
// authoritative committed world, which answers joins and resyncs and
// checks the clients' checksums, and which the server's own code can
// read (Committed). Use it as the server's Handler. (Relay is the same
// without the game.)
type Host struct {
	*commitServer
	factory GameFactory
	codec   proto.Codec
	codecs  deltacomp.Codecs
	buf     []byte
	state   []byte
	// recorders of the games Config.Record records, by id
	recorders map[uint64]*replay.CommitRecorder
}

// NewHost returns a host that creates games with factory, or an error
// naming what is wrong with cfg. Install it with srv.Handle.
func NewHost(srv *tickwire.Server, factory GameFactory, cfg Config) (*Host, error) {
	if factory == nil {
		return nil, errors.New("commits: NewHost needs a game factory")
	}
	h := &Host{factory: factory}
	s, err := newCommitServer(srv, cfg, hostMode{h})
	if err != nil {
		return nil, err
	}
	h.commitServer = s
	h.codec, _ = s.cfg.FullCodec.Codec()
	return h, nil
}

// Committed calls f with game gameID's committed world and its tick,
// and reports whether the game runs (false: f is not called). It is the
// server's authoritative world, final up to tick, the one the clients'
// checksums are compared with: read it there for a scoreboard or a
// winner (type-assert it to your game's type). f must not modify it (it
// is the simulation itself: a change would desynchronise the server
// from every client), nor keep it or slices of it past the call; copy
// what it keeps, or keep world.AppendCanonical(nil).
//
// The world moves on the server's loop: call Committed there, from a
// Config.Handler method or inside Server.Do:
//
//	srv.Do(func() {
//		host.Committed(gameID, func(w sim.CommitGame, tick uint32) {
//			board = scores(w.(*mygame.World))
//		})
//	})
func (h *Host) Committed(gameID uint64, f func(world sim.CommitGame, tick uint32)) bool {
	g, ok := h.commitServer.games[gameID]
	if !ok {
		return false
	}
	f(g.ls.Committed(), g.ls.CommittedTick())
	return true
}

// Stats returns the counters. Call it on the server's loop (Server.Do).
func (h *Host) Stats() HostStats {
	s := h.commitServer.stats
	s.Games = len(h.commitServer.games)
	return s
}

// hostMode is the Host's part of the commits server: the game runs
// here.
type hostMode struct{ h *Host }

func (m hostMode) lockstep(g *commitGame) (*sim.Lockstep, error) {
	w, err := m.h.factory(g.id)
	if err != nil {
		return nil, err
	}
	s := m.h.commitServer
	cfg := sim.LockstepConfig{Capacity: s.cfg.Capacity, SumHistory: 4 * s.cfg.SumEvery}
	rec := m.recorder(g.id, w)
	if rec != nil {
		cfg.Committed, cfg.CommittedTick = rec.Command, rec.CommittedTick
	}
	ls, err := sim.NewLockstep(w, s.srv.Tick(), nil, cfg)
	if err == nil && rec != nil {
		rec.Loaded(ls, 0) // the game's first state
		m.h.recorders[g.id] = rec
	}
	return ls, err
}

// recorder starts recording game id, if Config.Record says so.
func (m hostMode) recorder(id uint64, game sim.CommitGame) *replay.CommitRecorder {
	s := m.h.commitServer
	if s.cfg.Record == nil {
		return nil
	}
	w, err := s.cfg.Record(id)
	var rec *replay.CommitRecorder
	if err == nil {
		if rec, err = replay.NewCommitRecorder(w, replay.RoleCommitsServer, id, game, nil, s.srv.Config().TickRate); err != nil {
			w.Close()
		}
	}
	if err != nil {
		s.log.Warn("game not recorded", "game", id, "err", err)
		return nil
	}
	if m.h.recorders == nil {
		m.h.recorders = map[uint64]*replay.CommitRecorder{}
	}
	s.log.Info("recording game", "game", id, "file", w.Path())
	return rec
}

func (hostMode) admit(*commitGame, *proto.CommandFrame) error { return nil }

func (hostMode) frame(cc *commitConn, t proto.FrameType, f []byte) error { return errFrameKind(t) }

func (hostMode) tick(*commitGame, time.Time) {}

// left ends the recording of a game its last client left.
func (m hostMode) left(cc *commitConn) {
	rec := m.h.recorders[cc.g.id]
	if rec == nil || len(cc.g.conns) > 0 {
		return
	}
	delete(m.h.recorders, cc.g.id)
	if err := rec.Close(); err != nil {
		m.h.commitServer.log.Warn("game recording", "game", cc.g.id, "err", err)
	}
}

// sendState sends the committed state and every buffered command.
func (m hostMode) sendState(cc *commitConn, reason proto.ResyncReason) {
	h, g := m.h, cc.g
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
		cause := proto.CauseResync
		if reason == 0 {
			cause = proto.CauseJoin
		}
		f := proto.FullSnapshotFrame{Cause: cause, Tick: g.ls.CommittedTick(), Codec: h.codec,
			RawLen: uint32(len(h.state)), Data: h.buf}
		h.buf, err = f.Append(h.buf[len(h.buf):])
	}
	if err != nil {
		h.commitServer.log.Error("encode committed state", "game", g.id, "err", err)
		cc.c.Close(proto.DisconnectProtocol)
		return
	}
	cc.send(h.buf)
	cc.sendPending()
	cc.stateSent(g.ls.CommittedTick(), reason)
}

// sums compares a client's committed checksums with the server's; a
// client that differs gets the server's committed state.
func (m hostMode) sums(cc *commitConn) {
	h, g := m.h.commitServer, cc.g
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
			m.sendState(cc, proto.ResyncChecksum)
			return
		}
	}
}
