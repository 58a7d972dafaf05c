package commits

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// The relay (docs/COMMITS.md, "The relay") is the commits mode with no
// game code on the server: it orders, relays and commits commands like
// the Host (the same commitServer), and gets the committed states that
// joining and resynchronised clients need from the other clients. It
// asks up to maxVoters clients that agree for the SHA-256 of their
// committed state at its committed tick T, one of them for the state's
// bytes too, and sends the bytes on only once their SHA-256 is the digest
// a strict majority of those clients reported. Meanwhile the game commits
// on: the relay keeps every command committed after T, and sends them
// with the state.

// RelayConfig tunes a Relay. The zero value is the default.
type RelayConfig struct {
	// Config is what a Relay shares with a Host. FullCodec is not used:
	// a state goes on in the codec its uploader chose.
	Config
	// InputSize is the game's command size in bytes (1..341), checked
	// for every command. 0: each game's first command fixes it.
	InputSize int
	// MaxState bounds a committed state, in bytes, before and after
	// compression: a larger upload is refused, and a game whose agreed
	// state is larger refuses the clients that need it. Default 4 MiB,
	// at most proto.MaxStateSize (16 MiB).
	MaxState int
	// StateTimeout is how long a client may take to answer a state
	// request, and to move its upload on; then the relay asks another.
	// Default 2 s.
	StateTimeout time.Duration
	// StateTries is how many uploads the relay asks for one state
	// before it disconnects the clients waiting for it
	// (proto.DisconnectNoState). Default 3.
	StateTries int
}

// Relay limits and defaults.
const (
	DefaultMaxState     = 4 << 20
	DefaultStateTimeout = 2 * time.Second
	DefaultStateTries   = 3
	// maxVoters bounds the clients asked for a state's digest.
	maxVoters = 5
	// stateQueueBudget is how many reliable segments a state's chunks may
	// keep queued on one connection (commands and commits get the rest of
	// the reliable queue).
	stateQueueBudget = 192
	// maxDesyncs is how many times a connection's state may differ from
	// the majority's (each costs the others a state transfer) before it
	// is disconnected.
	maxDesyncs = 3
	// voteRing is how many recent ticks the relay keeps the clients'
	// checksums of.
	voteRing = 4 * proto.MaxCommitSums
)

// RelayStats count what a Relay did. HostStats' Desyncs counts the
// clients whose checksum differed from the majority of those that
// reported the tick, Checked the checksums compared with a majority.
type RelayStats struct {
	HostStats
	StateRequests uint64 // state requests sent (digests and uploads)
	Uploads       uint64 // uploads asked for
	Verified      uint64 // uploads whose SHA-256 was the agreed digest
	Refused       uint64 // uploads refused: other bytes than agreed, malformed, over MaxState
	Silent        uint64 // state requests or uploads not answered or moved on within StateTimeout
	StatesSent    uint64 // verified states (or the blank world of a new game) sent to clients
	NoState       uint64 // clients disconnected because no client gave the state they needed
	NoMajority    uint64 // committed ticks whose checksums had no majority
	Unasked       uint64 // state frames no request asked for (the client is disconnected)
}

// Relay runs commits-mode games on a Server without the game: see the
// comment above RelayConfig. Use it as the server's Handler.
//
// A Relay cannot read a game's world (it has none: there is no
// Host.Committed here), so it cannot keep a scoreboard or name a winner
// by itself. What it knows is the commands, the players and the ticks;
// the world's state reaches it only as the clients' checksums and
// uploads, which it compares and forwards as opaque bytes. A server
// that needs the world runs a Host, which links the game's code; a
// relayed game's clients can read their own committed world
// (Client.Do, sim.Lockstep.Committed) and report a result in a message
// (Config.Handler receives it), which the server can only take on
// trust, or believe when enough of the clients report the same.
type Relay struct {
	*commitServer
	cfg    RelayConfig
	stats  RelayStats
	codecs deltacomp.Codecs
	raw    []byte // an upload decompressed for its check (one at a time, on the loop)
}

// relayGame is the Relay's part of a game.
type relayGame struct {
	inputSize int    // the commands' size (0: not known yet)
	t0        uint32 // the tick the game started at, blank
	// genesis: the blank world at t0 and the commands since are a
	// state a client can start from (kept while young enough)
	genesis bool
	// keep: the commands committed after keepFrom are kept in held (for
	// a genesis or a transfer in progress)
	keep     bool
	keepFrom uint32
	held     []heldCommand
	heldData []byte
	xfer     *transfer
	nextID   uint32
	votes    [voteRing]tickVotes
}

// heldCommand is a committed command the relay keeps for clients that
// get a state before it.
type heldCommand struct {
	kind   sim.CommandKind
	player uint16
	tick   uint32
	seq    uint32
	off    int // into heldData (inputs)
	size   int
}

// transfer is the search for one committed state: a round asks voters
// for their digest at tick, and uploader for the bytes.
type transfer struct {
	id      uint32 // the round's requests
	tick    uint32
	askedAt time.Time
	voters  []voter
	agreed  bool
	sum     [proto.StateSumSize]byte
	size    uint32
	tries   int
	failed  []*commitConn // asked in vain (silent, refused): not asked again
	noneAt  time.Time     // when no client could be asked (zero: some could)
	// the upload
	uploader *commitConn
	upID     uint32
	upAt     time.Time // its last progress
	sized    bool      // its state sum arrived
	upSum    [proto.StateSumSize]byte
	upSize   uint32
	codec    proto.Codec
	packed   uint32
	blob     []byte
	verified bool
}

type voter struct {
	cc       *commitConn
	answered bool
	size     uint32
	sum      [proto.StateSumSize]byte
}

// relayConn is the Relay's part of a connection.
type relayConn struct {
	reason    proto.ResyncReason // why it waits for a state
	waitSince time.Time
	dlID      uint32 // the state begin it was sent (0: none yet)
	dlOff     uint32 // chunks sent up to there
	asked     uint32 // the last request id it was sent
	untrusted bool   // uploaded bytes other than the digest it agreed to
	desyncs   int    // times its state differed from the majority's
	// sumsFrom: its checksums count from this tick on (after its state);
	// until one frame starts there, frames computed before the state are
	// ignored
	sumsFrom uint32
	sumsGate bool
}

// tickVotes are the clients' checksums of one committed tick.
type tickVotes struct {
	tick    uint32
	used    bool
	decided bool
	agreed  uint64 // with decided, unless split
	split   bool
	reports []sumReport
}

type sumReport struct {
	cc  *commitConn
	sum uint64
}

// NewRelay returns a relay, or an error naming what is wrong with cfg.
// Install it with srv.Handle.
func NewRelay(srv *tickwire.Server, cfg RelayConfig) (*Relay, error) {
	if cfg.MaxState == 0 {
		cfg.MaxState = DefaultMaxState
	}
	if cfg.StateTimeout == 0 {
		cfg.StateTimeout = DefaultStateTimeout
	}
	if cfg.StateTries == 0 {
		cfg.StateTries = DefaultStateTries
	}
	switch {
	case cfg.InputSize < 0 || cfg.InputSize > proto.MaxInputBytes/3:
		return nil, fmt.Errorf("commits: RelayConfig.InputSize %d out of 0..%d", cfg.InputSize, proto.MaxInputBytes/3)
	case cfg.MaxState < 1024 || cfg.MaxState > proto.MaxStateSize:
		return nil, fmt.Errorf("commits: RelayConfig.MaxState %d out of 1 KiB..%d", cfg.MaxState, proto.MaxStateSize)
	case cfg.StateTimeout < 100*time.Millisecond || cfg.StateTimeout > time.Minute:
		return nil, fmt.Errorf("commits: RelayConfig.StateTimeout %v out of 100ms..1m", cfg.StateTimeout)
	case cfg.StateTries < 1 || cfg.StateTries > 16:
		return nil, fmt.Errorf("commits: RelayConfig.StateTries %d out of 1..16", cfg.StateTries)
	}
	r := &Relay{}
	s, err := newCommitServer(srv, cfg.Config, relayMode{r})
	if err != nil {
		return nil, err
	}
	cfg.Config = s.cfg
	r.commitServer, r.cfg = s, cfg
	return r, nil
}

// Stats returns the counters. Call it on the server's loop (Server.Do).
func (r *Relay) Stats() RelayStats {
	st := r.stats
	st.HostStats = r.commitServer.stats
	st.Games = len(r.commitServer.games)
	return st
}

// relayMode is the Relay's part of the commits server.
type relayMode struct{ r *Relay }

// nullGame is the relay's world: nothing, with the game's command size.
// The Lockstep it runs orders the commands and reports what it commits;
// it never loads a state.
type nullGame struct{ inputSize int }

func (g nullGame) Schema() sim.Schema {
	return sim.Schema{InputSize: g.inputSize, ActionBytes: g.inputSize}
}
func (g nullGame) Clone() sim.CommitGame                     { return g }
func (nullGame) CopyFrom(sim.CommitGame)                     {}
func (nullGame) Step(*sim.Tick)                              {}
func (nullGame) ValidateAction(uint16, uint32, []byte) error { return nil }
func (nullGame) OnPlayerJoin(*sim.Tick, uint16) error        { return nil }
func (nullGame) OnPlayerLeave(*sim.Tick, uint16, string)     {}
func (nullGame) AppendCanonical(b []byte) []byte             { return b }
func (nullGame) LoadCanonical(b []byte) error {
	if len(b) != 0 {
		return errors.New("commits: the relay's world holds no state")
	}
	return nil
}

// newLockstep makes g's command buffer for commands of size bytes (1
// while not known).
func (m relayMode) newLockstep(g *commitGame, size int, tick uint32, players []uint16) (*sim.Lockstep, error) {
	s := m.r.commitServer
	return sim.NewLockstep(nullGame{max(size, 1)}, tick, players, sim.LockstepConfig{Capacity: s.cfg.Capacity,
		Committed: func(c *sim.Command) { g.relayed.hold(c) }})
}

func (m relayMode) lockstep(g *commitGame) (*sim.Lockstep, error) {
	t0 := m.r.commitServer.srv.Tick()
	g.relayed = &relayGame{inputSize: m.r.cfg.InputSize, t0: t0, genesis: true, keep: true, keepFrom: t0}
	return m.newLockstep(g, m.r.cfg.InputSize, t0, nil)
}

var errInputSize = errors.New("commits: command of another size than the game's")

// admit checks a command's size; the first command of a game whose size
// is not configured fixes it (the buffer holds only joins and leaves
// until then: they move to a buffer of that size).
func (m relayMode) admit(g *commitGame, f *proto.CommandFrame) error {
	rg := g.relayed
	if rg.inputSize == len(f.Data) {
		return nil
	}
	if rg.inputSize != 0 || len(f.Data) > proto.MaxInputBytes/3 {
		return errInputSize
	}
	ls, err := m.newLockstep(g, len(f.Data), g.ls.CommittedTick(), g.ls.Players())
	if err != nil {
		return err
	}
	var moveErr error
	g.ls.Pending(func(c *sim.Command) {
		if err := ls.Add(c); err != nil {
			moveErr = err
		}
	})
	if moveErr != nil {
		return moveErr
	}
	g.ls = ls
	rg.inputSize = len(f.Data)
	m.r.commitServer.log.Info("commits game's command size fixed by its first command", "game", g.id, "size", rg.inputSize)
	return nil
}

// hold keeps a committed command for the clients getting a state from
// before it.
func (rg *relayGame) hold(c *sim.Command) {
	if !rg.keep {
		return
	}
	rg.held = append(rg.held, heldCommand{kind: c.Kind, player: c.Player, tick: c.Tick, seq: c.Seq, off: len(rg.heldData), size: len(c.Data)})
	rg.heldData = append(rg.heldData, c.Data...)
}

// keepAfter makes sure the commands committed from now on (after
// committed) are kept.
func (rg *relayGame) keepAfter(committed uint32) {
	if !rg.keep {
		rg.keep = true
		rg.keepFrom = committed
		rg.held, rg.heldData = rg.held[:0], rg.heldData[:0]
	}
}

// trim forgets the kept commands no client can need: those at or before
// the oldest tick a state may still be sent for.
func (rg *relayGame) trim(committed uint32, capacity int) {
	if rg.genesis && int32(committed-rg.t0) > int32(capacity/2) {
		rg.genesis = false
	}
	var from uint32
	switch {
	case rg.genesis:
		from = rg.t0
	case rg.xfer != nil:
		from = rg.xfer.tick
	default:
		rg.keep = false
		rg.held, rg.heldData = rg.held[:0], rg.heldData[:0]
		if cap(rg.heldData) > 64<<10 {
			rg.held, rg.heldData = nil, nil
		}
		return
	}
	n := 0
	for n < len(rg.held) && int32(rg.held[n].tick-from) <= 0 {
		n++
	}
	if n > 0 && n == len(rg.held) {
		rg.held, rg.heldData = rg.held[:0], rg.heldData[:0]
	} else if n > len(rg.held)/2 {
		// Move the rest down now and then (not every tick).
		cut := rg.held[n].off
		rg.heldData = append(rg.heldData[:0], rg.heldData[cut:]...)
		rg.held = append(rg.held[:0], rg.held[n:]...)
		for i := range rg.held {
			rg.held[i].off -= cut
		}
	}
}

// sendState makes cc wait for a state: the next ticks find one (tick).
func (m relayMode) sendState(cc *commitConn, reason proto.ResyncReason) {
	if cc.waiting {
		return
	}
	cc.waiting = true
	cc.active = false
	rc := &cc.relayed
	rc.reason, rc.waitSince, rc.dlID, rc.dlOff = reason, m.r.commitServer.srv.Now(), 0, 0
	if reason != 0 {
		m.r.commitServer.log.Info("client needs the committed state: asking the other clients", "game", cc.g.id, "conn", cc.c.ID(), "reason", reasonText(reason))
	}
}

func (m relayMode) left(cc *commitConn) {
	x := cc.g.relayed.xfer
	if x == nil {
		return
	}
	if x.uploader == cc && !x.verified {
		x.upAt = time.Time{} // the next tick asks another
	}
	for i := range x.voters {
		if x.voters[i].cc == cc && !x.voters[i].answered {
			x.voters[i].answered, x.voters[i].size = true, 0
		}
	}
}

// tick moves the game's state transfer on and sends what the waiting
// clients can have.
func (m relayMode) tick(g *commitGame, now time.Time) {
	r := m.r
	rg := g.relayed
	if g.adopted == nil {
		rg.trim(g.ls.CommittedTick(), r.cfg.Capacity) // kept for the players resuming
	}
	waiting := 0
	for _, cc := range g.conns {
		if cc.waiting && !cc.c.Closed() {
			waiting++
		}
	}
	if waiting == 0 {
		rg.xfer = nil
		return
	}
	if rg.genesis {
		for _, cc := range g.conns {
			if cc.waiting {
				r.sendGenesis(cc)
			}
		}
		return
	}
	x := rg.xfer
	if x == nil {
		x = &transfer{}
		rg.xfer = x
		r.startRound(g, x, now)
	} else {
		r.checkTransfer(g, x, now)
	}
	if rg.xfer != x {
		return // refused: the waiting clients are gone
	}
	for _, cc := range g.conns {
		if cc.waiting {
			r.stream(cc, x)
		}
	}
}

// healthy reports whether cc can be asked for a state: it counts in the
// commit, has its own state and has not lied.
func (x *transfer) healthy(cc *commitConn) bool {
	if cc.waiting || !cc.active || cc.relayed.untrusted || cc.c.Closed() {
		return false
	}
	for _, f := range x.failed {
		if f == cc {
			return false
		}
	}
	return true
}

// startRound asks up to maxVoters healthy clients for the digest of
// their committed state at the committed tick, the first one for the
// bytes too.
func (r *Relay) startRound(g *commitGame, x *transfer, now time.Time) {
	rg := g.relayed
	x.voters = x.voters[:0]
	for _, cc := range g.conns {
		if len(x.voters) < maxVoters && x.healthy(cc) {
			x.voters = append(x.voters, voter{cc: cc})
		}
	}
	if len(x.voters) == 0 {
		if x.noneAt.IsZero() {
			x.noneAt = now
		}
		if now.Sub(x.noneAt) > r.cfg.StateTimeout {
			r.refuse(g, "no client can give the committed state")
		}
		return
	}
	x.noneAt = time.Time{}
	rg.nextID++
	x.id = rg.nextID
	x.tick = g.ls.CommittedTick()
	x.askedAt = now
	x.agreed = false
	rg.keepAfter(g.ls.CommittedTick())
	for i := range x.voters {
		cc := x.voters[i].cc
		r.request(cc, x.id, x.tick, false)
	}
	r.askUpload(g, x, now)
}

// request sends cc a state request.
func (r *Relay) request(cc *commitConn, id, tick uint32, upload bool) {
	f := proto.StateRequestFrame{ID: id, Tick: tick, Upload: upload}
	b, err := f.Append(nil)
	if err != nil {
		return
	}
	cc.send(b)
	cc.relayed.asked = id
	r.stats.StateRequests++
}

// askUpload asks the next voter that can (one that agreed, if the
// digest is known) for the state's bytes.
func (r *Relay) askUpload(g *commitGame, x *transfer, now time.Time) {
	x.uploader, x.upID, x.sized, x.verified = nil, 0, false, false
	x.blob = x.blob[:0]
	if x.tries >= r.cfg.StateTries {
		r.refuse(g, fmt.Sprintf("%d uploads of the committed state failed", x.tries))
		return
	}
	for i := range x.voters {
		v := &x.voters[i]
		if !x.healthy(v.cc) || v.answered && (v.size == 0 || x.agreed && v.sum != x.sum) {
			continue
		}
		g.relayed.nextID++
		x.upID = g.relayed.nextID
		x.uploader, x.upAt = v.cc, now
		x.tries++
		r.stats.Uploads++
		r.request(v.cc, x.upID, x.tick, true)
		return
	}
	// Nobody left this round: a new round, with the clients not yet
	// asked in vain.
	r.startRound(g, x, now)
}

// checkTransfer handles the silent clients and a state grown too old
// for the waiting clients to catch up from.
func (r *Relay) checkTransfer(g *commitGame, x *transfer, now time.Time) {
	if len(x.voters) == 0 {
		r.startRound(g, x, now)
		return
	}
	if int32(g.ls.CommittedTick()-x.tick) > int32(r.cfg.Capacity) {
		// The waiting clients could not buffer the commands since: try
		// a newer tick.
		r.commitServer.log.Warn("committed state too old before it reached the clients: asking again", "game", g.id, "tick", x.tick)
		x.tries++
		r.startRound(g, x, now)
		return
	}
	if !x.agreed && now.Sub(x.askedAt) > r.cfg.StateTimeout {
		for i := range x.voters {
			if v := &x.voters[i]; !v.answered {
				r.silent(g, x, v.cc, "digest")
				v.answered = true
			}
		}
		if x.agree(r) {
			r.judgeVoters(g, x)
		} else {
			r.commitServer.log.Warn("the clients asked do not agree on the committed state: asking again", "game", g.id, "tick", x.tick)
			x.tries++
			if x.tries >= r.cfg.StateTries {
				r.refuse(g, "the clients do not agree on the committed state")
				return
			}
			r.startRound(g, x, now)
			return
		}
	}
	if g.relayed.xfer != x {
		return
	}
	if x.uploader != nil && !x.verified && now.Sub(x.upAt) > r.cfg.StateTimeout {
		r.silent(g, x, x.uploader, "upload")
		r.askUpload(g, x, now)
	}
}

func (r *Relay) silent(g *commitGame, x *transfer, cc *commitConn, what string) {
	r.stats.Silent++
	x.failed = append(x.failed, cc)
	r.commitServer.log.Warn("client did not answer the state request in time", "game", g.id, "conn", cc.c.ID(), "what", what,
		"tick", x.tick, "timeout", r.cfg.StateTimeout)
}

// agree looks for the digest a strict majority of the voters reported.
func (x *transfer) agree(r *Relay) bool {
	if x.agreed {
		return true
	}
	for i := range x.voters {
		v := &x.voters[i]
		if !v.answered || v.size == 0 {
			continue
		}
		n := 0
		for j := range x.voters {
			if w := &x.voters[j]; w.answered && w.size == v.size && w.sum == v.sum {
				n++
			}
		}
		if 2*n > len(x.voters) {
			x.agreed, x.sum, x.size = true, v.sum, v.size
			return true
		}
	}
	return false
}

// refuse disconnects every client of g that waits for a state.
func (r *Relay) refuse(g *commitGame, why string) {
	g.relayed.xfer = nil
	for _, cc := range g.conns {
		if !cc.waiting || cc.c.Closed() {
			continue
		}
		r.stats.NoState++
		r.commitServer.log.Warn("no committed state for the client: disconnecting it", "game", g.id, "conn", cc.c.ID(), "why", why,
			"waited", r.commitServer.srv.Now().Sub(cc.relayed.waitSince))
		cc.c.Close(proto.DisconnectNoState)
	}
}

// frame takes a client's state sums and chunks.
func (m relayMode) frame(cc *commitConn, t proto.FrameType, b []byte) error {
	switch t {
	case proto.FrameStateSum:
		f, _, err := proto.ParseStateSumFrame(b)
		if err != nil {
			return err
		}
		return m.r.stateSum(cc, &f)
	case proto.FrameStateChunk:
		f, _, err := proto.ParseStateChunkFrame(b)
		if err != nil {
			return err
		}
		return m.r.stateChunk(cc, &f)
	}
	return errFrameKind(t)
}

var errUnasked = errors.New("commits: state frame no request asked for")

// unasked disconnects a client that sends state frames of a request it
// was never sent: the relay buffers no upload it did not ask for.
func (r *Relay) unasked(cc *commitConn, id uint32) error {
	r.stats.Unasked++
	r.commitServer.log.Warn("state upload no request asked for: disconnecting the client", "game", cc.g.id, "conn", cc.c.ID(), "id", id)
	cc.c.Close(proto.DisconnectProtocol)
	return errUnasked
}

func (r *Relay) stateSum(cc *commitConn, f *proto.StateSumFrame) error {
	g := cc.g
	x := g.relayed.xfer
	if f.ID == 0 || int32(f.ID-cc.relayed.asked) > 0 {
		return r.unasked(cc, f.ID)
	}
	if x == nil || (f.ID != x.id && f.ID != x.upID) || f.Tick != x.tick {
		return nil // a request given up
	}
	now := r.commitServer.srv.Now()
	// The uploader's answer to the upload request is its vote too (a
	// request supersedes the one before).
	if f.ID == x.id || f.ID == x.upID {
		for i := range x.voters {
			if v := &x.voters[i]; v.cc == cc && !v.answered {
				v.answered, v.size, v.sum = true, f.Size, f.Sum
			}
		}
		if x.agree(r) {
			r.judgeVoters(g, x)
		}
	}
	if f.ID == x.upID && cc == x.uploader && !x.sized {
		switch {
		case f.Size == 0 || f.Packed == 0:
			r.commitServer.log.Info("client cannot upload the committed state", "game", g.id, "conn", cc.c.ID(), "tick", x.tick)
			x.failed = append(x.failed, cc)
			r.askUpload(g, x, now)
			return nil
		case int(f.Size) > r.cfg.MaxState || int(f.Packed) > r.cfg.MaxState:
			r.stats.Refused++
			r.commitServer.log.Warn("state upload refused: over the relay's bound", "game", g.id, "conn", cc.c.ID(),
				"size", f.Size, "packed", f.Packed, "max_state", r.cfg.MaxState)
			x.failed = append(x.failed, cc)
			if !x.agreed {
				// Is the state itself too big? The agreement says (judgeVoters).
				x.uploader, x.upID = nil, 0
				return nil
			}
			if !r.tooBig(g, x) {
				r.askUpload(g, x, now)
			}
			return nil
		}
		x.sized, x.upSum, x.upSize, x.codec, x.packed, x.upAt = true, f.Sum, f.Size, f.Codec, f.Packed, now
		if cap(x.blob) < int(f.Packed) {
			x.blob = make([]byte, 0, f.Packed)
		}
	}
	return nil
}

// tooBig refuses the waiting clients if the agreed state is over the
// bound.
func (r *Relay) tooBig(g *commitGame, x *transfer) bool {
	if !x.agreed || int(x.size) <= r.cfg.MaxState {
		return false
	}
	r.refuse(g, fmt.Sprintf("the committed state (%d bytes) is over the relay's bound (%d)", x.size, r.cfg.MaxState))
	return true
}

// judgeVoters resynchronises the voters whose digest is not the agreed
// one: their committed state differs from the majority's.
func (r *Relay) judgeVoters(g *commitGame, x *transfer) {
	if r.tooBig(g, x) {
		return
	}
	for i := range x.voters {
		v := &x.voters[i]
		if !v.answered || v.size == 0 || v.sum == x.sum && v.size == x.size || v.cc.waiting {
			continue
		}
		r.commitServer.stats.Desyncs++
		r.commitServer.log.Warn("desync: client's committed state differs from the majority's", "game", g.id, "conn", v.cc.c.ID(),
			"first_divergent_tick", x.tick, "what", "state digest")
		r.resync(v.cc)
	}
	if u := x.uploader; u == nil || u.waiting && !x.verified {
		// Desynchronised, not lying (or refused for its size): another
		// client uploads.
		if u != nil {
			x.failed = append(x.failed, u)
		}
		r.askUpload(g, x, r.commitServer.srv.Now())
		return
	}
	if x.sized {
		r.verify(g, x)
	}
}

func (r *Relay) stateChunk(cc *commitConn, f *proto.StateChunkFrame) error {
	g := cc.g
	x := g.relayed.xfer
	if f.ID == 0 || int32(f.ID-cc.relayed.asked) > 0 {
		return r.unasked(cc, f.ID)
	}
	if x == nil || f.ID != x.upID || cc != x.uploader {
		return nil // an upload given up
	}
	if !x.sized || f.Offset != uint32(len(x.blob)) || uint64(f.Offset)+uint64(len(f.Data)) > uint64(x.packed) {
		r.liar(g, x, cc, "malformed upload")
		return nil
	}
	x.blob = append(x.blob, f.Data...)
	x.upAt = r.commitServer.srv.Now()
	if uint32(len(x.blob)) == x.packed {
		r.verify(g, x)
	}
	return nil
}

// verify checks a whole upload against the agreed digest (once both are
// there).
func (r *Relay) verify(g *commitGame, x *transfer) {
	if x.verified || !x.agreed || !x.sized || uint32(len(x.blob)) != x.packed {
		return
	}
	cc := x.uploader
	if x.upSize != x.size {
		r.liar(g, x, cc, "size differs from the agreed one")
		return
	}
	raw := x.blob
	if x.codec != proto.CodecNone {
		var err error
		r.raw, err = r.codecs.AppendDecompress(r.raw[:0], x.blob, x.codec, int(x.size))
		if err != nil {
			r.liar(g, x, cc, "does not decompress: "+err.Error())
			return
		}
		raw = r.raw
	}
	if uint32(len(raw)) != x.size || sha256.Sum256(raw) != x.sum {
		r.liar(g, x, cc, "bytes differ from the agreed checksum")
		return
	}
	if cap(r.raw) > 1<<20 {
		r.raw = nil // a big state's scratch is not kept
	}
	x.verified = true
	r.stats.Verified++
	r.commitServer.log.Info("committed state uploaded and verified", "game", g.id, "conn", cc.c.ID(), "tick", x.tick,
		"size", x.size, "packed", x.packed, "voters", len(x.voters))
	for _, w := range g.conns {
		if w.waiting {
			r.stream(w, x)
		}
	}
}

// liar refuses an upload, names its sender and never asks it again.
func (r *Relay) liar(g *commitGame, x *transfer, cc *commitConn, why string) {
	r.stats.Refused++
	cc.relayed.untrusted = true
	x.failed = append(x.failed, cc)
	r.commitServer.log.Warn("state upload refused: the client's state is not the agreed one", "game", g.id, "conn", cc.c.ID(),
		"client", cc.c.ClientID(), "tick", x.tick, "why", why)
	r.askUpload(g, x, r.commitServer.srv.Now())
}

// stream sends cc the state's head and the chunks it can have: all but
// the last until the upload is verified, then the last and the commands
// after the state.
func (r *Relay) stream(cc *commitConn, x *transfer) {
	if !x.sized || cc.c.Closed() {
		return
	}
	rc := &cc.relayed
	if rc.dlID != x.upID {
		f := proto.StateBeginFrame{ID: x.upID, Reason: rc.reason, Tick: x.tick, Size: x.upSize, Codec: x.codec,
			Packed: x.packed, Received: cc.recv, Seqs: cc.seqs(nil)}
		b, err := f.Append(nil)
		if err != nil {
			return
		}
		cc.send(b)
		rc.dlID, rc.dlOff = x.upID, 0
	}
	limit := uint32(len(x.blob))
	if !x.verified {
		limit = min(limit, x.packed-1)
	}
	var buf []byte
	for rc.dlOff < limit && cc.c.ReliableQueued() < stateQueueBudget && !cc.c.Closed() {
		n := min(proto.MaxStateChunk, limit-rc.dlOff)
		f := proto.StateChunkFrame{ID: x.upID, Offset: rc.dlOff, Data: x.blob[rc.dlOff : rc.dlOff+n]}
		buf, _ = f.Append(buf[:0])
		cc.send(buf)
		rc.dlOff += n
	}
	if x.verified && rc.dlOff == x.packed {
		r.catchUp(cc, x.tick)
	}
}

// sendGenesis starts cc from the game's blank world.
func (r *Relay) sendGenesis(cc *commitConn) {
	rg := cc.g.relayed
	rg.nextID++
	f := proto.StateBeginFrame{ID: rg.nextID, Reason: cc.relayed.reason, Tick: rg.t0, Received: cc.recv, Seqs: cc.seqs(nil)}
	b, err := f.Append(nil)
	if err != nil {
		return
	}
	cc.send(b)
	r.catchUp(cc, rg.t0)
}

// catchUp sends cc every command after tick (those committed since,
// which the relay kept, then those buffered): it then plays along.
func (r *Relay) catchUp(cc *commitConn, tick uint32) {
	g := cc.g
	rg := g.relayed
	for i := range rg.held {
		h := &rg.held[i]
		if int32(h.tick-tick) <= 0 {
			continue
		}
		cmd := sim.Command{Kind: h.kind, Player: h.player, Tick: h.tick, Seq: h.seq, Data: rg.heldData[h.off : h.off+h.size]}
		if g.encode(&cmd) == nil {
			cc.send(g.relay)
		}
	}
	cc.sendPending()
	rc := &cc.relayed
	cc.waiting = false
	cc.stateSent(tick, rc.reason)
	rc.sumsFrom, rc.sumsGate = tick+1, true
	r.stats.StatesSent++
	r.commitServer.log.Info("committed state sent", "game", g.id, "conn", cc.c.ID(), "tick", tick, "reason", reasonText(rc.reason),
		"waited", r.commitServer.srv.Now().Sub(rc.waitSince))
	rc.dlID = 0
}

// sums takes a client's committed checksums as its votes: a checksum
// that differs from the one a majority of the clients reported for that
// tick (of the counted clients, or when the tick is old of those that
// reported it) is a desync.
func (m relayMode) sums(cc *commitConn) {
	r := m.r
	rc := &cc.relayed
	if cc.waiting || rc.untrusted {
		return
	}
	if rc.sumsGate {
		if cc.sums.From != rc.sumsFrom {
			return // computed before its state
		}
		rc.sumsGate = false
	}
	g := cc.g
	for i, sum := range cc.sums.Sums {
		t := cc.sums.From + uint32(i)
		if int32(t-rc.sumsFrom) < 0 || int32(t-g.ls.CommittedTick()) > 0 {
			continue
		}
		v := &g.relayed.votes[t%voteRing]
		if !v.used || v.tick != t {
			if v.used && int32(t-v.tick) < 0 {
				continue // too old
			}
			r.decide(g, v, true)
			*v = tickVotes{tick: t, used: true, reports: v.reports[:0]}
		}
		if v.decided {
			if !v.split {
				r.commitServer.stats.Checked++
				if sum != v.agreed {
					r.desync(g, cc, t, v.agreed, sum)
					return
				}
			}
			continue
		}
		v.reports = append(v.reports, sumReport{cc, sum})
		r.decide(g, v, false)
		if cc.waiting {
			return // desynchronised by that tick
		}
	}
}

// decide settles a tick's checksum once a strict majority of the
// counted clients reported it (or, old, of those that reported).
func (r *Relay) decide(g *commitGame, v *tickVotes, old bool) {
	if !v.used || v.decided {
		return
	}
	voters := 0
	for _, cc := range g.conns {
		if !cc.waiting && !cc.relayed.untrusted {
			voters++
		}
	}
	if old || len(v.reports) >= voters {
		voters = len(v.reports)
	}
	if voters == 0 {
		return
	}
	for _, a := range v.reports {
		n := 0
		for _, b := range v.reports {
			if b.sum == a.sum {
				n++
			}
		}
		if 2*n > voters {
			v.decided, v.agreed = true, a.sum
			for _, b := range v.reports {
				r.commitServer.stats.Checked++
				if b.sum != a.sum && !b.cc.waiting && !b.cc.c.Closed() {
					r.desync(g, b.cc, v.tick, a.sum, b.sum)
				}
			}
			return
		}
	}
	if old || len(v.reports) >= voters {
		v.decided, v.split = true, true
		if len(v.reports) > 1 {
			r.stats.NoMajority++
			r.commitServer.log.Warn("desync: the clients' committed checksums have no majority", "game", g.id, "tick", v.tick,
				"reports", len(v.reports))
		}
	}
}

func (r *Relay) desync(g *commitGame, cc *commitConn, tick uint32, want, got uint64) {
	r.commitServer.stats.Desyncs++
	r.commitServer.log.Warn("desync: client's committed state differs from the majority's", "game", g.id, "conn", cc.c.ID(),
		"first_divergent_tick", tick, "majority_sum", fmt.Sprintf("%016x", want), "client_sum", fmt.Sprintf("%016x", got))
	r.resync(cc)
}

// resync sends a desynchronised client a state, or disconnects it after
// maxDesyncs: a client cannot make the others upload states without end.
func (r *Relay) resync(cc *commitConn) {
	if cc.relayed.desyncs++; cc.relayed.desyncs > maxDesyncs {
		r.commitServer.log.Warn("client disconnected: its state differed from the majority's too often", "game", cc.g.id,
			"conn", cc.c.ID(), "desyncs", cc.relayed.desyncs)
		cc.c.Close(proto.DisconnectKicked)
		return
	}
	relayMode{r}.sendState(cc, proto.ResyncChecksum)
}

// reasonText names why a client needs a state.
func reasonText(r proto.ResyncReason) string {
	if r == 0 {
		return "join"
	}
	return r.String()
}
