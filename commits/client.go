package commits

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/rendezvous"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

// ClientConfig tunes a Client. The zero value is the default.
type ClientConfig struct {
	// Capacity is the client's command buffer in ticks. It must cover the
	// server's (Config.Capacity) plus how far the client's commit
	// may trail the server's. Default 8 s of ticks at the server's rate.
	Capacity int
	// Shown, if set, is called (with the client's lock held) the first
	// time a command reaches the live world, with the time.
	Shown func(c *sim.Command, at time.Time)
	// Committed, if set, is called (with the lock held) for every command
	// the committed world executes, in order: the game's final record.
	Committed func(c *sim.Command)
	// Rejected, if set, is called (with the lock held) when the game's
	// ValidateAction refused, in the committed world, a command this
	// client issued: once per refused command, with the command (its
	// tick, seq and data as issued) and the game's reason, whose text
	// (reason.Error()) is what to show the player ("reloading"). Every
	// client's committed world refuses the same command, but only its
	// issuer is told. Its Data is valid during the call only. (The live
	// world refused it already when it reached the screen, and may do
	// so wrongly: a command that arrives late can change the world
	// before that tick; only the committed world's verdict is final.)
	Rejected func(c *sim.Command, reason error)
	// Loaded, if set, is called (with the lock held) when a committed
	// state replaced both worlds (the join, a resync): what the game
	// showed or recorded before may not lead to it.
	Loaded func(committed sim.CommitGame, tick uint32)
	// Frame, if set, is called (with the lock held) after the live world
	// moved: the place to draw it.
	Frame func(live sim.CommitGame, tick uint32)
	// Rejoin, if set, is how the client gets back in after the server
	// dropped it (too slow, timed out): a fresh connect token. The client
	// dials again with Dialer and plays on from a fresh committed copy.
	Rejoin func(ctx context.Context) (*tickwire.ConnectToken, error)
	// Dialer dials the rejoins (its Game is set to the Client).
	Dialer tickwire.Dialer
	// Mesh makes the client take part in the mesh (docs/COMMITS.md):
	// it sends each command it issues straight to the peers it reaches
	// too, and applies theirs to its live world as they arrive.
	Mesh bool
	// MeshConn, with Mesh, is the mesh's socket (an impaired one in
	// tests). Default: a DSCP EF UDP socket on the client's local IP.
	// The Client closes it.
	MeshConn udp.BatchConn
	// External, if set, says the committed world is stepped outside the
	// Client, by another program (the C ABI's game, capi): the checksums
	// the Client sends and the states it uploads come from External once
	// that program has stepped the tick, rather than from the Client's
	// game, which is then a stand-in whose AppendCanonical appends
	// nothing.
	External ExternalGame
	// Record, if set, is where the client records what its committed
	// world ran, for tickwire-replay (package replay,
	// docs/DEBUGGING.md): every committed tick's commands and checksum,
	// its committed state every Record.Config().KeyEvery ticks and at
	// each join or resync, and the states it held before a desync the
	// server found. A player can attach the file to a bug report;
	// tickwire-replay -bisect compares it with another client's or the
	// server's. The Client writes to it from its loop; close it once
	// the Client is done (Done).
	Record *replay.Writer
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// ExternalGame gives a Client the committed world of a game stepped
// outside it (ClientConfig.External). Its methods are called with the
// Client's lock held, on the connection's loop: they must not call the
// Client, nor wait for the other program.
type ExternalGame interface {
	// Sum is the checksum of the committed world after tick, once the
	// game has stepped it (ok false: not yet; the Client asks again).
	Sum(tick uint32) (sum uint64, ok bool)
	// AppendState appends the game's canonical bytes of its committed
	// world after tick (what LoadCanonical of the stand-in takes), once
	// it has them (ok false: not yet; the Client asks again every tick
	// until another request supersedes this one).
	AppendState(b []byte, tick uint32) (out []byte, ok bool)
}

// ClientStats count what a Client did.
type ClientStats struct {
	sim.LockstepStats
	Issued    uint64 // commands this client issued
	Committed uint32 // the committed tick
	Live      uint32 // the live tick
	Lead      int    // ticks ahead a command is scheduled (the server's lead)
	CommitLag int    // live − committed now, in ticks
	MaxLag    int    // the largest CommitLag seen
	Kicks     uint64 // times the server took this client out of the commit (slow)
	Resyncs   uint64 // committed states loaded after the first
	Desyncs   uint64 // resyncs the server sent because the checksums differed
	SumsSent  uint64 // committed ticks whose checksum was sent
	Rejoins   uint64 // new connections after the server dropped this client
	Resent    uint64 // commands sent again to a relay that took the game over (Resume)
	// StateRequests counts the relay's requests for this client's
	// committed state, StatesUploaded the uploads it sent.
	StateRequests, StatesUploaded uint64
	BadFrames                     uint64
	StallMax                      time.Duration // the longest time the committed tick did not move
	Connection                    uint32        // the current connection id
	Mesh                          MeshStats     // the mesh (with ClientConfig.Mesh)
}

// Client is the client half of commits mode: it holds the
// committed and live worlds (sim.Lockstep), sends the player's commands
// scheduled a lead ahead, applies the commands the server relays (a late
// one rebuilds live), commits what the server confirms and checksums the
// committed world for the server to compare. Attach it with Dialer.Game.
type Client struct {
	cfg   ClientConfig
	game  sim.CommitGame
	blank sim.CommitGame // the blank world: a relay's new game starts from it
	log   *slog.Logger

	mu sync.Mutex
	c  *tickwire.Client
	// sendFrame queues a frame from the client's loop (Accepted.SendFrame)
	sendFrame func(frame []byte) error
	queued    func() int // the reliable segments queued (Accepted.ReliableQueued)
	ls        *sim.Lockstep
	have      bool   // a committed state arrived
	recv      uint32 // reliable commit-mode frames received on this connection
	sent      uint32 // commands sent on this connection
	seq       map[uint16]uint32
	stamp     map[uint16]uint32
	own       []ownCommand // sent, for re-adding after a state
	commitC   uint32       // the latest commit the server announced
	commitAt  uint32       // ... to apply once recv reaches it
	commitRx  uint16       // ... when the server had received this many of our commands
	lead      int
	period    time.Duration
	epoch     time.Time
	offs      [32]float64 // server tick − local ticks, recent samples
	offN      int
	off       float64
	sumFrom   uint32
	sums      proto.CommitSumsFrame
	codecs    deltacomp.Codecs
	raw       []byte
	frame     []byte
	lastMove  time.Time
	stats     ClientStats
	mesh      *clientMesh
	meshErr   error
	report    proto.MeshReportFrame
	reportAt  time.Time
	hellos    int       // mesh hellos sent on this connection
	helloAt   time.Time // the last
	// shortcuts: when each tentative command (player, seq) arrived, until
	// the server's copy does or its tick commits
	shortcuts map[cmdName]shortcutArrival
	relayed   clientStates // the relay's requests and the states it sends
	recorder  *replay.CommitRecorder
	// for tests: a liar, whose uploads are its state's bytes changed by
	// corruptUpload (its digests stay true), and a client that never
	// answers a state request
	corruptUpload func(state []byte)
	ignoreStates  bool
	// for tests: a griefer, which reports reportLive's tick in its commit
	// items instead of its live tick (kicks: the kicks so far)
	reportLive func(live uint32, kicks uint64) uint32
	// resume: the next attach goes on with the worlds held (a host
	// migration, resume.go); resuming: attached so, until the first
	// commit on the session; keep, window, seen, sysSeq: the committed
	// commands of the last keep ticks and the last seqs seen, for
	// RelayState
	resume, resuming bool
	keep             int
	window           []sim.Command
	seen             map[uint16]uint32
	sysSeq           uint32
	closed           bool
	done             chan struct{}
	err              error
}

type cmdName struct {
	player uint16
	seq    uint32
}

type shortcutArrival struct {
	at   time.Time
	tick uint32
}

type ownCommand struct {
	player    uint16
	tick, seq uint32
	idx       uint32 // the connection's command count when it was sent
	data      []byte
	// parked: out of the buffer, its tick committed before the server
	// had it; the server's move puts it back
	parked bool
	// confirmed: the server's copy came back (a relay that took the game
	// over had it from its standby before ours came)
	confirmed bool
}

// NewClient returns a client for game, a blank world of the game
// the server runs (the committed state replaces it on connect).
func NewClient(game sim.CommitGame, cfg ClientConfig) (*Client, error) {
	if game == nil {
		return nil, errors.New("commits: NewClient needs a game")
	}
	if cfg.Capacity < 0 || cfg.Capacity > 1<<16 {
		return nil, fmt.Errorf("commits: ClientConfig.Capacity %d out of 0..65536", cfg.Capacity)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, game: game, blank: game.Clone(), log: cfg.Logger, done: make(chan struct{})}, nil
}

// Attach starts the client on an accepted connection (ClientLayer).
func (cc *Client) Attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		return nil, errors.New("commits: Client closed")
	}
	cc.period = time.Second / time.Duration(c.TickRate())
	if cc.resume && cc.have {
		cc.c = c
		cc.sendFrame = a.SendFrame
		cc.queued = a.ReliableQueued
		cc.relayed.reset()
		cc.recv, cc.sent = 0, 0
		cc.stats.Connection = c.ConnID()
		cc.resumeAttach()
		return (*commitFrames)(cc), nil
	}
	cc.resume = false
	if cc.ls == nil {
		capacity := cc.cfg.Capacity
		if capacity == 0 {
			capacity = 8 * c.TickRate()
		}
		lcfg := sim.LockstepConfig{Capacity: capacity, SumHistory: 2 * proto.MaxCommitSums,
			Committed: cc.committed, Shown: cc.shown, Rejected: cc.rejected}
		if w := cc.cfg.Record; w != nil && cc.recorder == nil {
			r, err := replay.NewCommitRecorder(w, replay.RoleCommitsClient, w.Config().GameID, cc.game, a.Players, c.TickRate())
			if err != nil {
				return nil, fmt.Errorf("commits: ClientConfig.Record: %w", err)
			}
			cc.recorder = r
			lcfg.CommittedTick = r.CommittedTick
		}
		ls, err := sim.NewLockstep(cc.game, 0, nil, lcfg)
		if err != nil {
			return nil, err
		}
		cc.ls = ls
		if cc.recorder != nil {
			cc.recorder.Use(ls)
		}
		cc.epoch = a.Time
	}
	cc.c = c
	cc.sendFrame = a.SendFrame
	cc.queued = a.ReliableQueued
	cc.relayed.reset()
	cc.have = false
	cc.recv, cc.sent = 0, 0
	cc.seq = map[uint16]uint32{}
	cc.stamp = map[uint16]uint32{}
	cc.own = cc.own[:0]
	cc.offN = 0
	cc.sample(a.ServerTick, a.RTT, a.Time)
	cc.stats.Connection = c.ConnID()
	return (*commitFrames)(cc), nil
}

func (cc *Client) committed(c *sim.Command) {
	cc.keepCommitted(c)
	if cc.recorder != nil {
		cc.recorder.Command(c)
	}
	if cc.cfg.Committed != nil {
		cc.cfg.Committed(c)
	}
}

// rejected passes the committed world's refusal of one of our commands
// on to ClientConfig.Rejected.
func (cc *Client) rejected(c *sim.Command, reason error) {
	if cc.cfg.Rejected != nil && c.Kind == sim.CommandInput && cc.isOwn(c.Player) {
		cc.cfg.Rejected(c, reason)
	}
}

func (cc *Client) shown(c *sim.Command) {
	if cc.cfg.Shown != nil {
		cc.cfg.Shown(c, cc.cfg.Now())
	}
}

// localTicks is now on the client's own tick scale.
func (cc *Client) localTicks(now time.Time) float64 {
	return float64(now.Sub(cc.epoch)) / float64(cc.period)
}

// sample adds a clock sample: the server was at tick when it sent a
// packet that arrived at at, half a round trip later. The estimate is
// the largest recent sample: delays only ever make a sample smaller.
func (cc *Client) sample(tick uint32, rtt time.Duration, at time.Time) {
	s := float64(tick) + float64(rtt/2)/float64(cc.period) - cc.localTicks(at)
	cc.offs[cc.offN%len(cc.offs)] = s
	cc.offN++
	n := min(cc.offN, len(cc.offs))
	m := cc.offs[0]
	for _, v := range cc.offs[1:n] {
		m = max(m, v)
	}
	cc.off = m
}

// ServerTick is the client's estimate of the server's tick at now
// (fractional): the present every client shows.
func (cc *Client) ServerTick(now time.Time) float64 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.localTicks(now) + cc.off
}

// present is the tick live should show at now.
func (cc *Client) present(now time.Time) uint32 {
	t := cc.localTicks(now) + cc.off
	if t < 0 {
		return 0
	}
	return uint32(math.Floor(t))
}

// Issue sends a command of player (one of the connection's) and puts it
// in the live world's buffer: it executes Lead ticks from now on every
// client. It returns the tick.
func (cc *Client) Issue(player uint16, data []byte) (uint32, error) {
	c := cc.Client()
	if c == nil {
		return 0, tickwire.ErrNotConnected
	}
	var (
		at  uint32
		err error
	)
	// The client's loop first, then ours: the order the loop takes them.
	c.Do(func() {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		at, err = cc.issueLocked(c, player, data)
	})
	return at, err
}

func (cc *Client) issueLocked(c *tickwire.Client, player uint16, data []byte) (uint32, error) {
	if cc.c != c || !cc.have {
		return 0, tickwire.ErrNotConnected
	}
	now := cc.cfg.Now()
	at := max(cc.present(now)+uint32(cc.lead), cc.ls.LiveTick()+1, cc.stamp[player]+1, cc.ls.CommittedTick()+1)
	seq := cc.seq[player] + 1
	f := proto.CommandFrame{Kind: proto.CommandInput, Player: player, Tick: at, Seq: seq, Data: data}
	var err error
	cc.frame, err = f.Append(cc.frame[:0])
	if err != nil {
		return 0, err
	}
	cmd := sim.Command{Kind: sim.CommandInput, Player: player, Tick: at, Seq: seq, Data: data}
	if err := cc.ls.Add(&cmd); err != nil {
		return 0, err
	}
	if err := cc.sendFrame(cc.frame); err != nil {
		return 0, err
	}
	cc.seq[player] = seq
	cc.stamp[player] = at
	cc.sent++
	cc.own = append(cc.own, ownCommand{player: player, tick: at, seq: seq, idx: cc.sent, data: append([]byte(nil), data...)})
	cc.stats.Issued++
	if cc.mesh != nil {
		cc.mesh.broadcast(cc.frame, cc.ls.LiveTick())
	}
	return at, nil
}

// Do runs f with the client's lock held, on the worlds as they are (the
// live world after any pending rebuild).
func (cc *Client) Do(f func(ls *sim.Lockstep)) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ls != nil {
		cc.ls.Live()
		f(cc.ls)
	}
}

// Stats returns the counters.
func (cc *Client) Stats() ClientStats {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	s := cc.stats
	if cc.ls != nil {
		s.LockstepStats = cc.ls.Stats()
		s.Committed, s.Live = cc.ls.CommittedTick(), cc.ls.LiveTick()
		s.CommitLag = int(int32(s.Live - s.Committed))
	}
	s.Lead = cc.lead
	if cc.mesh != nil {
		s.Mesh = cc.mesh.Stats() // the mesh's lock after ours, as everywhere
	}
	return s
}

// Client is the current connection (it changes on a rejoin).
func (cc *Client) Client() *tickwire.Client {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.c
}

// Done is closed when the client stopped for good (Close, or dropped
// without Rejoin, or a rejoin failed); Err says why.
func (cc *Client) Done() <-chan struct{} { return cc.done }

// Err is why the client stopped.
func (cc *Client) Err() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

// leaveWait bounds how long Close waits for the server to acknowledge
// the leave before it ends the connection.
const leaveWait = 500 * time.Millisecond

// Close leaves the game cleanly and stops rejoining: it tells the server
// (a leave it schedules like a join, so nobody waits for this client),
// waits until the server acknowledged that (at most leaveWait), then
// ends the connection.
func (cc *Client) Close() error {
	cc.mu.Lock()
	c := cc.c
	already := cc.closed
	cc.closed = true
	cc.mu.Unlock()
	if already {
		return nil
	}
	var err error
	if c != nil {
		cc.leave(c)
		err = c.Close()
	}
	cc.mu.Lock()
	m := cc.mesh
	cc.mu.Unlock()
	if m != nil {
		m.close()
	}
	cc.stop(nil)
	return err
}

// leave sends the server our leave and waits, at most leaveWait, until
// the reliable channel has delivered it.
func (cc *Client) leave(c *tickwire.Client) {
	sent := false
	c.Do(func() {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if cc.c != c || !cc.have {
			return
		}
		f := proto.ControlFrame{Code: proto.ControlLeave, Tick: cc.ls.LiveTick()}
		var err error
		if cc.frame, err = f.Append(cc.frame[:0]); err == nil {
			sent = cc.sendFrame(cc.frame) == nil
		}
	})
	if !sent {
		return
	}
	step := cc.period / 2
	for waited := time.Duration(0); waited < leaveWait; waited += step {
		queued := 0
		c.Do(func() { queued = cc.queued() })
		select {
		case <-c.Done():
			return
		default:
		}
		if queued == 0 {
			return
		}
		time.Sleep(step)
	}
}

func (cc *Client) stop(err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	select {
	case <-cc.done:
	default:
		cc.err = err
		close(cc.done)
	}
}

// commitFrames is the Client as the connection's FrameHandler (its
// methods run on the client's loop).
type commitFrames Client

func (f *commitFrames) Frame(t proto.FrameType, b []byte, p *tickwire.PacketInfo) error {
	cc := (*Client)(f)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	err := cc.frameLocked(t, b, p)
	if err != nil {
		cc.stats.BadFrames++
	}
	return err
}

func (cc *Client) frameLocked(t proto.FrameType, b []byte, p *tickwire.PacketInfo) error {
	switch t {
	case proto.FrameControl:
		ctl, _, err := proto.ParseControlFrame(b)
		if err != nil {
			return err
		}
		if ctl.Code == proto.ControlHostMigration {
			cc.migrated(ctl.Tick)
		}
		if ctl.Code != proto.ControlCommit {
			return nil
		}
		cc.sample(p.Header.Tick, p.RTT, p.Time)
		at, rx, lead := proto.SplitCommitArg(ctl.Arg)
		if cc.resuming && at > 0 && int32(cc.recv-at) >= 0 {
			cc.resuming = false // every command the relay had is here
		}
		cc.lead = int(lead)
		if int32(ctl.Tick-cc.commitC) > 0 || int32(at-cc.commitAt) > 0 {
			cc.commitC, cc.commitAt, cc.commitRx = ctl.Tick, at, rx
		}
		cc.applyCommit(p.Time)
		return nil
	case proto.FrameCommand:
		cc.recv++
		f, _, err := proto.ParseCommandFrame(b)
		if err != nil {
			return err
		}
		if !cc.have || cc.resuming && int32(f.Tick-cc.ls.CommittedTick()) <= 0 {
			return nil // (resuming: the relay's catch-up, run already)
		}
		cmd := sim.Command{Kind: sim.CommandKind(f.Kind), Player: f.Player, Tick: f.Tick, Seq: f.Seq, Data: f.Data}
		if a, ok := cc.shortcuts[cmdName{f.Player, f.Seq}]; ok && f.Kind == proto.CommandInput {
			delete(cc.shortcuts, cmdName{f.Player, f.Seq})
			if cc.mesh != nil {
				cc.mesh.earlier(p.Time.Sub(a.at))
			}
		}
		own := f.Kind == proto.CommandInput && cc.isOwn(f.Player)
		if own {
			cc.moved(f.Player, f.Seq, f.Tick) // ours, moved by the server
		}
		err = cc.ls.Add(&cmd)
		if errors.Is(err, sim.ErrCommandConflict) && own {
			// A later command of ours sits where the server moved this
			// one: the server will move that one too. Park it.
			cc.park(f.Player, f.Tick)
			err = cc.ls.Add(&cmd)
		}
		if err != nil {
			cc.log.Warn("command refused: asking for the committed state", "tick", f.Tick, "err", err)
			cc.requestState(proto.ResyncSlowClient)
			return nil
		}
		cc.applyCommit(p.Time)
		if int32(f.Tick-cc.ls.LiveTick()) <= 0 {
			cc.ls.Live() // show it now: a rollback
			cc.drawLocked()
		}
		return nil
	case proto.FrameFullSnapshot:
		cc.recv++
		f, _, err := proto.ParseFullSnapshotFrame(b)
		if err != nil {
			return err
		}
		return cc.loadState(&f, p.Time)
	case proto.FrameStateRequest:
		cc.recv++
		f, _, err := proto.ParseStateRequestFrame(b)
		if err != nil {
			return err
		}
		cc.stateRequest(&f)
		return nil
	case proto.FrameStateBegin:
		cc.recv++
		if _, err := proto.ParseStateBeginFrame(b, &cc.relayed.begin); err != nil {
			return err
		}
		return cc.stateBegin(p.Time)
	case proto.FrameStateChunk:
		cc.recv++
		f, _, err := proto.ParseStateChunkFrame(b)
		if err != nil {
			return err
		}
		return cc.stateChunk(&f, p.Time)
	case proto.FrameMeshIntro:
		f, _, err := proto.ParseMeshIntroFrame(b)
		if err != nil {
			return err
		}
		if cc.mesh == nil {
			return nil
		}
		switch f.Op {
		case proto.MeshAdd:
			return cc.mesh.add(&f)
		case proto.MeshRemove:
			cc.mesh.remove(f.Conn)
		case proto.MeshCheck:
			if f.Conn == cc.c.ConnID() {
				data, proved, err := cc.mesh.checkKey(&f.RecvKey)
				if proved {
					cc.sendProofLocked(data)
				}
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("commits: %v frame in commits mode", t)
}

// startMesh opens the mesh (once) and tells the server, on this
// connection, where it listens.
func (cc *Client) startMesh() {
	if cc.mesh == nil && cc.meshErr == nil {
		conn := cc.cfg.MeshConn
		if conn == nil {
			conn, cc.meshErr = listenMesh(cc.c.LocalAddr().Addr())
			if cc.meshErr != nil {
				cc.log.Warn("no peer mesh: cannot open its socket", "err", cc.meshErr)
				return
			}
		}
		cc.mesh = newClientMesh(conn, cc.cfg.Now, cc.shortcut, cc.proveMesh)
	}
	if cc.mesh == nil {
		return
	}
	cc.mesh.reset(cc.c.ConnID())
	cc.hellos = 0
	cc.sayHello(cc.cfg.Now())
}

// sayHello tells the server where our mesh listens: the server checks
// that address (meshcheck.go) before it introduces it. A punch from the
// mesh socket to the server goes first: behind a NAT that keeps the
// socket's port for every destination (full cone, port-restricted), it
// opens the way for the check; behind one that does not (symmetric),
// the check fails and the server's path serves this client alone.
func (cc *Client) sayHello(now time.Time) {
	cc.mesh.openToward(cc.c.Server(), meshOpener)
	hello := proto.MeshIntroFrame{Op: proto.MeshHello, Port: cc.mesh.conn.LocalAddr().Port()}
	var err error
	cc.frame, err = hello.Append(cc.frame[:0])
	if err == nil && cc.sendFrame(cc.frame) == nil {
		cc.hellos++
		cc.helloAt = now
	}
}

// meshOpener is what the mesh socket sends the server before a hello:
// a rendezvous punch, which the server drops.
var meshOpener = rendezvous.AppendPunch(nil)

// helloAgain says hello again when the server's check of our address
// did not reach us in time (its challenges lost), as often as the
// server takes hellos.
func (cc *Client) helloAgain(now time.Time) {
	if cc.mesh == nil || cc.hellos == 0 || cc.hellos >= meshHelloTries || now.Sub(cc.helloAt) < meshCheckTime+meshCheckEvery {
		return
	}
	if !cc.mesh.proven() {
		cc.sayHello(now)
	}
}

// proveMesh returns, on the session, the data of the server's challenge
// our mesh socket received: the server then introduces our address (the
// mesh's read loop calls it).
func (cc *Client) proveMesh(data [proto.PathDataSize]byte) {
	c := cc.Client()
	if c == nil {
		return
	}
	c.Do(func() {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if cc.c != c || cc.closed {
			return
		}
		cc.sendProofLocked(data)
	})
}

// sendProofLocked sends the server the data of its challenge of our
// mesh address, on the client's loop with cc.mu held.
func (cc *Client) sendProofLocked(data [proto.PathDataSize]byte) {
	f := proto.MeshIntroFrame{Op: proto.MeshProof, Conn: cc.c.ConnID(), Proof: data}
	var err error
	if cc.frame, err = f.Append(cc.frame[:0]); err == nil {
		cc.sendFrame(cc.frame)
	}
}

// shortcut applies a peer's copy of its command to the live world (a
// tentative command: the committed world waits for the server's copy).
func (cc *Client) shortcut(f *proto.CommandFrame, from uint32, at time.Time) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.have || f.Kind != proto.CommandInput || cc.isOwn(f.Player) {
		return
	}
	if present, _ := cc.ls.Has(sim.CommandInput, f.Player, f.Seq); present {
		return // the server's copy was first
	}
	cmd := sim.Command{Kind: sim.CommandInput, Player: f.Player, Tick: f.Tick, Seq: f.Seq, Data: f.Data, Tentative: true}
	if err := cc.ls.Add(&cmd); err != nil {
		if errors.Is(err, sim.ErrCommandLate) {
			cc.mesh.late()
		}
		return
	}
	if cc.shortcuts == nil {
		cc.shortcuts = map[cmdName]shortcutArrival{}
	}
	cc.shortcuts[cmdName{f.Player, f.Seq}] = shortcutArrival{at: at, tick: f.Tick}
	cc.mesh.useful()
	if int32(f.Tick-cc.ls.LiveTick()) <= 0 {
		cc.ls.Live() // show it now: a rollback
		cc.drawLocked()
	}
}

// moved notes the server's move of our command seq to tick.
func (cc *Client) moved(player uint16, seq, tick uint32) {
	for i := range cc.own {
		if o := &cc.own[i]; o.player == player && o.seq == seq {
			o.tick, o.parked, o.confirmed = tick, false, true
		}
	}
}

// park takes our command at tick out of the buffer until the server's
// move of it arrives.
func (cc *Client) park(player uint16, tick uint32) {
	for i := range cc.own {
		if o := &cc.own[i]; o.player == player && o.tick == tick && !o.parked {
			cc.ls.Remove(sim.CommandInput, player, o.seq)
			o.parked = true
		}
	}
}

func (cc *Client) isOwn(player uint16) bool {
	for _, p := range cc.c.Players() {
		if p == player {
			return true
		}
	}
	return false
}

// A commits-mode full snapshot's data starts with a header before the
// lockstep state: why it was sent (a resync reason, 0 for a join), how
// many of the client's commands the server had received, and for each
// of the connection's players the last command seq the server has of
// it (a new connection numbers on from there).
const commitStateHeader = 1 + 4 + 1

func (cc *Client) loadState(f *proto.FullSnapshotFrame, now time.Time) error {
	var err error
	cc.raw, err = cc.codecs.AppendDecompress(cc.raw[:0], f.Data, f.Codec, int(f.RawLen))
	if err != nil {
		return err
	}
	if len(cc.raw) < commitStateHeader {
		return errCommitState
	}
	reason := proto.ResyncReason(cc.raw[0])
	received := binary.LittleEndian.Uint32(cc.raw[1:])
	n := int(cc.raw[5])
	if len(cc.raw) < commitStateHeader+6*n {
		return errCommitState
	}
	seqs := cc.relayed.seqs[:0]
	for i := 0; i < n; i++ {
		b := cc.raw[commitStateHeader+6*i:]
		seqs = append(seqs, proto.PlayerSeq{Player: binary.LittleEndian.Uint16(b), Seq: binary.LittleEndian.Uint32(b[2:])})
	}
	cc.relayed.seqs = seqs
	return cc.load(reason, received, seqs, cc.raw[commitStateHeader+6*n:], now)
}

// load replaces both worlds with a committed state (the bytes of
// sim.Lockstep.AppendState) that the server sent for reason (0: the
// join), when it had received received of the client's commands; seqs
// are the players' last command seqs the game has.
func (cc *Client) load(reason proto.ResyncReason, received uint32, seqs []proto.PlayerSeq, state []byte, now time.Time) error {
	if err := cc.ls.LoadState(state); err != nil {
		cc.log.Warn("committed state refused", "err", err)
		return err
	}
	if cc.recorder != nil {
		cc.recorder.Loaded(cc.ls, reason)
	}
	if !cc.have && cc.cfg.Mesh {
		cc.startMesh()
	}
	if cc.have {
		cc.stats.Resyncs++
	} else {
		// The connection's first state: number our commands on from
		// the server's count.
		for _, s := range seqs {
			cc.seq[s.Player] = s.Seq
		}
	}
	switch reason {
	case proto.ResyncSlowClient:
		cc.stats.Kicks++
	case proto.ResyncChecksum:
		cc.stats.Desyncs++
	}
	cc.have = true
	cc.lastMove = now
	cc.sumFrom = cc.ls.CommittedTick() + 1
	cc.relayed.loaded(cc)
	// Our commands the server had not received yet are in no copy it
	// sends: put them back.
	keep := cc.own[:0]
	for _, o := range cc.own {
		if o.idx > received && int32(o.tick-cc.ls.CommittedTick()) > 0 {
			cmd := sim.Command{Kind: sim.CommandInput, Player: o.player, Tick: o.tick, Seq: o.seq, Data: o.data}
			if cc.ls.Add(&cmd) == nil {
				keep = append(keep, o)
			}
		}
	}
	cc.own = keep
	if cc.cfg.Loaded != nil {
		cc.cfg.Loaded(cc.ls.Committed(), cc.ls.CommittedTick())
	}
	cc.log.Info("committed state loaded", "tick", cc.ls.CommittedTick(), "reason", reason, "players", cc.ls.Players())
	return nil
}

var errCommitState = errors.New("commits: commits-mode state too short")

// applyCommit commits the server's announced tick once every frame the
// server had sent before deciding it has arrived.
func (cc *Client) applyCommit(now time.Time) {
	if !cc.have || int32(cc.recv-cc.commitAt) < 0 || int32(cc.commitC-cc.ls.CommittedTick()) <= 0 {
		return
	}
	// Our commands the server had not received when it decided the
	// commit cannot run at a committed tick: it will move them.
	for i := range cc.own {
		o := &cc.own[i]
		if !o.parked && !o.confirmed && int32(o.tick-cc.commitC) <= 0 && int16(uint16(o.idx)-cc.commitRx) > 0 {
			cc.ls.Remove(sim.CommandInput, o.player, o.seq)
			o.parked = true
		}
	}
	if w := &cc.relayed.want; w.pending && int32(w.req.Tick-cc.ls.CommittedTick()) > 0 && int32(w.req.Tick-cc.commitC) <= 0 {
		// The relay asked for the state at a tick on the way: stop there.
		if err := cc.ls.Commit(w.req.Tick); err != nil {
			return
		}
		cc.answerState()
	}
	if err := cc.ls.Commit(cc.commitC); err != nil {
		return
	}
	if d := now.Sub(cc.lastMove); d > cc.stats.StallMax {
		cc.stats.StallMax = d
	}
	cc.lastMove = now
	if lag := int(int32(cc.ls.LiveTick() - cc.ls.CommittedTick())); lag > cc.stats.MaxLag {
		cc.stats.MaxLag = lag
	}
	// Forget our commands the committed world has run, and the parked
	// ones the server received and did not move (it dropped them).
	keep := cc.own[:0]
	for _, o := range cc.own {
		received := int16(uint16(o.idx)-cc.commitRx) <= 0
		if o.parked && !received || !o.parked && int32(o.tick-cc.ls.CommittedTick()) > 0 {
			keep = append(keep, o)
		}
	}
	cc.own = keep
	for k, a := range cc.shortcuts {
		if int32(a.tick-cc.ls.CommittedTick()) <= 0 {
			delete(cc.shortcuts, k)
		}
	}
	cc.sendSums()
}

// sendSums sends the committed checksums of every full window of ticks.
func (cc *Client) sendSums() {
	n := uint32(min(cc.c.TickRate(), proto.MaxCommitSums))
	for int32(cc.ls.CommittedTick()-(cc.sumFrom+n-1)) >= 0 {
		cc.sums.From = cc.sumFrom
		cc.sums.Sums = cc.sums.Sums[:0]
		for t := cc.sumFrom; t < cc.sumFrom+n; t++ {
			s, ok := cc.ls.CommittedSum(t)
			if cc.cfg.External != nil {
				s, ok = cc.cfg.External.Sum(t)
			}
			if !ok {
				break
			}
			cc.sums.Sums = append(cc.sums.Sums, s)
		}
		if cc.cfg.External != nil && uint32(len(cc.sums.Sums)) < n {
			return // the game has not stepped them all yet
		}
		cc.sumFrom += n
		if len(cc.sums.Sums) == 0 {
			continue
		}
		var err error
		cc.frame, err = cc.sums.Append(cc.frame[:0])
		if err == nil && cc.sendFrame(cc.frame) == nil {
			cc.stats.SumsSent += uint64(len(cc.sums.Sums))
		}
	}
}

func (cc *Client) requestState(r proto.ResyncReason) {
	f := proto.ResyncRequestFrame{Reason: r, Tick: cc.ls.CommittedTick()}
	var err error
	cc.frame, err = f.Append(cc.frame[:0])
	if err == nil {
		cc.sendFrame(cc.frame)
	}
}

func (cc *Client) drawLocked() {
	if cc.cfg.Frame != nil {
		cc.cfg.Frame(cc.ls.Live(), cc.ls.LiveTick())
	}
}

// Tick moves live to the present (the client's loop calls it every
// tick, before the packets of the tick are built).
func (f *commitFrames) Tick(now time.Time, _ uint32) {
	cc := (*Client)(f)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.sendUpload()
	if !cc.have {
		return
	}
	if cc.cfg.External != nil {
		cc.sendSums() // what the game stepped since
		cc.externalState()
	}
	cc.helloAgain(now)
	cc.ls.AdvanceLive(cc.present(now))
	cc.drawLocked()
	if cc.recorder != nil {
		cc.recorder.Frame(cc.ls.LiveTick(), cc.ls.Stats())
	}
}

// AppendFrames adds the commit item: how far live got and how many
// commands were sent.
func (f *commitFrames) AppendFrames(b []byte, room int, p *tickwire.PacketInfo) []byte {
	cc := (*Client)(f)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.have {
		return b
	}
	item := proto.CommitItemFrame{Live: cc.ls.LiveTick(), Commands: cc.sent}
	if cc.reportLive != nil {
		item.Live = cc.reportLive(item.Live, cc.stats.Kicks)
	}
	if item.Len() > room {
		return b
	}
	b, _ = item.Append(b)
	if cc.mesh != nil && p.Time.Sub(cc.reportAt) >= meshReportTick {
		cc.mesh.report(&cc.report)
		if len(cc.report.Links) > 0 && cc.report.Len() <= room-item.Len() {
			b, _ = cc.report.Append(b)
			cc.reportAt = p.Time
		}
	}
	return b
}

func (f *commitFrames) Ticks() tickwire.Ticks {
	cc := (*Client)(f)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var t uint32
	if cc.ls != nil {
		t = cc.ls.LiveTick()
	}
	return tickwire.Ticks{Tick: t, InterpFrom: t, InterpTo: t}
}

// Ended rejoins when the server dropped the client and Rejoin is set.
func (f *commitFrames) Ended(now time.Time, r proto.DisconnectReason) {
	cc := (*Client)(f)
	cc.mu.Lock()
	if cc.resume {
		cc.mu.Unlock()
		return // the game goes on on another session (Resume)
	}
	closed := cc.closed
	rejoin := cc.cfg.Rejoin
	if r == proto.DisconnectTooSlow {
		cc.stats.Kicks++
	}
	cc.mu.Unlock()
	if closed || rejoin == nil || r == proto.DisconnectClosed || r == proto.DisconnectNoState {
		cc.stop(&tickwire.DisconnectError{Reason: r})
		return
	}
	go cc.rejoin(r)
}

func (cc *Client) rejoin(r proto.DisconnectReason) {
	cc.log.Info("dropped by the server: rejoining", "reason", r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := cc.cfg.Rejoin(ctx)
	if err != nil {
		cc.stop(fmt.Errorf("commits: rejoin after %v: %w", r, err))
		return
	}
	d := cc.cfg.Dialer
	d.Game = cc
	if _, err := d.Dial(ctx, tok); err != nil {
		cc.stop(fmt.Errorf("commits: rejoin after %v: %w", r, err))
		return
	}
	cc.mu.Lock()
	cc.stats.Rejoins++
	cc.mu.Unlock()
}
