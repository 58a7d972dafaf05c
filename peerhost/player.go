package peerhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

// Config configures a Player.
type Config struct {
	// Game is the player's game client of a state-sync game; it stays
	// the same across hosts.
	Game *game.Client
	// Factory makes the world of the game when this peer hosts it (as
	// the lobby's host, or promoted). Required with Game and HostConn.
	Factory game.Factory
	// Host configures the game host when this peer hosts (its Hooks
	// are the Player's), Server its server.
	Host   game.Config
	Server tickwire.Config
	// Commits, instead of Game, is the player's client of a commits
	// game: the peer that hosts runs a commits.Relay configured by
	// Relay (its Hooks are the Player's), which holds no game code, and
	// a warm standby is this client itself (docs/MIGRATION.md, "Commits
	// games").
	Commits *commits.Client
	Relay   commits.RelayConfig
	// HostConn is this player's host socket, bound for the whole game
	// (nil: the player cannot host): every server this peer runs serves
	// on it, one after another, and the Player closes it when it ends.
	// HostAddr is where the other players reach it (what the lobby named
	// as its "hostAddr").
	HostConn udp.BatchConn
	HostAddr string
	// Handler, if set, receives the messages of every session; its
	// Disconnected runs once, when the Player ends (a host migration is not
	// a disconnect).
	Handler tickwire.ClientHandler
	// Dialer returns the dialer for each session (a new socket, the
	// caller's Handler and Game are set by the Player); nil: Dialer{}.
	// The Player calls it one call at a time (it may dial a successor
	// and its lost host at once).
	Dialer func() tickwire.Dialer
	// Redirect, if set, rewrites the address a successor is dialled at
	// (a proxy in tests and netem runs); the token is unchanged.
	Redirect func(addr string) string
	// Successor, if set, says how to reach the elected successor slot,
	// whose host address the rosters named addr (after Redirect): the
	// dialer of the session and the addresses to try in turn, instead
	// of Dialer's and addr. NAT traversal's (docs/NAT.md): the socket
	// whose public mapping the successor punches toward, then its
	// public mapping and a relayed address. The dial may take
	// PromoteTimeout for each address (Dialer.Config.HandshakeTimeout
	// bounds each attempt). It is called like Dialer, one call at a
	// time; a Dialer.Conn it returns is closed with the session, or when
	// the dial fails.
	Successor func(slot uint16, addr string) (tickwire.Dialer, []string)
	// Timeout is how long the host may be silent before it is lost
	// (default migrate.DefaultTimeout, three missed heartbeats);
	// PromoteTimeout how long an elected successor has to announce
	// itself (default migrate.DefaultPromoteTimeout).
	Timeout, PromoteTimeout time.Duration
	// RejoinTimeout is how long a player that lost its host keeps trying
	// to come back to it with its rejoin credential, in case its own path
	// was cut rather than the host lost, while nobody takes the game over
	// (default DefaultRejoinTimeout). A game nobody can take over ends
	// with migrate.ErrNoHost only after it.
	RejoinTimeout time.Duration
	// Hold is how long at most the game of a state-sync host this peer
	// promoted to holds its tick for its players to re-dial it
	// (game.Migration.Hold; default 1 s). Players that reach a successor
	// through NATs may take longer: a direct attempt before a relayed
	// address (Successor).
	Hold time.Duration
	// Standbys is how many warm standbys this peer keeps when it hosts
	// (HostConfig.Standbys; default DefaultStandbys).
	Standbys int
	// OnEvent, if set, hears what the Player does (from its goroutines).
	OnEvent func(Event)
	Logger  *slog.Logger
}

// EventKind names a Player event.
type EventKind uint8

// Player events.
const (
	EventHostLost    EventKind = iota + 1 // the host went silent or left
	EventFollowing                        // dialled the elected successor (Epoch, Slot)
	EventPromoted                         // this peer became the host (Epoch)
	EventResumed                          // the successor announced itself (host migration control)
	EventSteppedDown                      // this peer's host learned it was replaced
	EventNoHost                           // nobody can take over: the Player ended with migrate.ErrNoHost
	EventHandedOver                       // this peer's host quit and handed the game to its successor
	EventRejoined                         // back with the host it had lost, in its own slots (Epoch, Slot: the host's)
	EventAbandoned                        // this peer gave up a promotion nobody followed
)

var peerEventNames = [...]string{EventHostLost: "host lost", EventFollowing: "following", EventPromoted: "promoted",
	EventResumed: "resumed", EventSteppedDown: "stepped down", EventNoHost: "no host", EventHandedOver: "handed over",
	EventRejoined: "rejoined", EventAbandoned: "abandoned"}

func (k EventKind) String() string {
	if int(k) < len(peerEventNames) && peerEventNames[k] != "" {
		return peerEventNames[k]
	}
	return "unknown"
}

// Event is one step of a host migration as a peer saw it.
type Event struct {
	Kind  EventKind
	Time  time.Time
	Epoch uint32
	Slot  uint16 // the host concerned
	Text  string
}

// Stats count what a Player did.
type Stats struct {
	Epoch      uint32 // of the host followed (or run) now
	Migrations uint64 // successors followed (including by a promotion that held)
	Promotions uint64 // of this peer to host; Abandoned of them given up for the host it had lost
	Abandoned  uint64
	// Rejoins counts the times this peer came back to the host it had
	// lost (its own path had been cut).
	Rejoins      uint64
	StandbyState uint64 // standby states loaded
	StandbySteps uint64
	StandbyErrs  uint64 // standby frames that did not load or replay
	StandbyEnds  uint64 // standbys dropped: the host fed them no more
	StaleRosters uint64
	Tokens       uint64 // successor tokens received
	Keys         uint64 // successor keys received
	DialFailures uint64
	// HandOvers counts hand-overs heard from a host that quit;
	// HandOverTick is the last tick of the last one, and PromotedAt the
	// tick this peer's standby resumed from when it last promoted.
	HandOvers    uint64
	HandOverTick uint32
	PromotedAt   uint32
	// ColdPromotions counts promotions without a warm standby: from
	// this player's own confirmed state (docs/MIGRATION.md).
	ColdPromotions uint64
	// Stream counts this player's peer message stream (Send and the
	// host's messages).
	Stream      StreamStats
	Hosting     bool
	SteppedDown bool               // this peer's host was replaced and stopped
	Host        HostStats          // when hosting
	HostGame    game.HostStats     // when hosting a state-sync game
	HostRelay   commits.RelayStats // when hosting a commits game
}

// Player is a player of a peer-hosted game that survives the loss of its
// host (host migration, docs/MIGRATION.md): it plays through
// its game.Client, follows the host's roster, keeps the warm standby when
// the host names it, and when the host goes silent runs the election
// every player computes alike — then either dials the successor with
// the token the host gave it in advance, or, elected itself, promotes
// its standby to a game host on its own host socket. Meanwhile it tries
// to come back to the host with its rejoin credential: when its own path
// was cut, the host is alive and keeps its slots (rejoin.go). A peer
// chosen by the lobby to host starts that host with Host before joining
// it.
type Player struct {
	cfg  Config
	log  *slog.Logger
	game uint64
	// hostSock shares Config.HostConn among the servers this peer runs
	// (nil: it cannot host)
	hostSock *hostSocket

	mu       sync.Mutex
	client   *tickwire.Client
	follower migrate.Follower
	standby  migrate.Standby
	rec      sim.StepRecord
	codecs   deltacomp.Codecs
	keys     []tickwire.Key        // successor keys received, newest last (at most keptKeys)
	tokens   map[uint16]*tokenHeld // per successor slot, the newest token
	// hostAddrs are the host addresses of the candidates, by slot, as
	// the rosters followed named them: a candidate a roster left out
	// for a while (silent) is one again under the host this peer may
	// promote to.
	hostAddrs map[uint16]string
	tickRate  int // the host's, for an engine of this peer's own
	ackSent   uint32
	mode      mode // state sync or commits
	srv       *tickwire.Server
	mig       *hostMigration // host's hooks
	stats     Stats
	err       error
	players   []uint16
	clientID  uint64

	// The peer message stream (stream.go): this player's own —
	// messages sent and not yet confirmed, the newest number received and
	// when its ack last went out — and, as the standby, the host's copies
	// of every player's.
	outSeq     uint32
	out        []streamMsg
	outBytes   int
	inRecv     uint32
	ackedRecv  uint32
	ackDue     bool // a new host must hear how far this player got, even if nowhere
	ackPackets int
	streams    map[uint16]*playerStream
	stream     StreamStats

	// handOverTick is the last tick of the host that handed the game
	// over (0: none); kick wakes the supervisor at once.
	handOverTick uint32
	kick         chan struct{}

	// The time between losing the host and playing again (rejoin.go):
	// the loss, the session to the host that ended by itself (if it did),
	// this peer's own promotion while nobody followed it and its own
	// player's session to it, and the election's end without a
	// successor, final once the rejoin attempts are over too.
	loss      *hostLoss
	hostEnded *tickwire.Client
	promo     *promotion
	own       *tickwire.Client
	noHost    error

	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	dialerMu sync.Mutex // Config.Dialer's calls
}

type tokenHeld struct {
	epoch uint32
	tok   *tickwire.ConnectToken
}

// NewPlayer returns a peer for cfg; nothing runs before Host or Join.
func NewPlayer(cfg Config) (*Player, error) {
	switch {
	case (cfg.Game == nil) == (cfg.Commits == nil):
		return nil, errors.New("peerhost: a Config needs either a Game or a Commits client")
	case cfg.HostConn != nil && cfg.HostAddr == "":
		return nil, errors.New("peerhost: a Config with a HostConn needs its HostAddr")
	case cfg.HostConn != nil && cfg.Game != nil && cfg.Factory == nil:
		return nil, errors.New("peerhost: a Config with a Game and a HostConn needs a Factory")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Player{cfg: cfg, log: cfg.Logger, tokens: map[uint16]*tokenHeld{}, hostAddrs: map[uint16]string{}, streams: map[uint16]*playerStream{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.HostConn != nil {
		p.hostSock = newHostSocket(cfg.HostConn)
	}
	if cfg.Commits != nil {
		p.mode = &commitsGame{p: p}
	} else {
		p.mode = &stateSync{p: p}
	}
	p.follower.Monitor.Timeout = cfg.Timeout
	p.follower.PromoteTimeout = cfg.PromoteTimeout
	return p, nil
}

// Host starts the game server on the peer's host socket as the lobby's
// host (epoch 1): key opens the players' tokens (the lobby's HostKey),
// candidates are the players who can take over, by slot, with their
// addresses (the lobby's "hostAddr"s, this peer's included), self is this
// peer's own slot, userData the tokens' (the game type).
func (p *Player) Host(gameID uint64, key tickwire.Key, self uint16, candidates map[uint16]string, userData [proto.UserDataSize]byte) error {
	if p.cfg.HostConn == nil {
		return errors.New("peerhost: Player.Host without a host socket")
	}
	p.game = gameID
	err := p.startHost(key, nil, HostConfig{Game: gameID, Epoch: 1, Self: self, Candidates: candidates, UserData: userData, Standbys: p.cfg.Standbys})
	return err
}

// startHost runs a server with the mode's host of mc on the host socket.
func (p *Player) startHost(key tickwire.Key, previous []tickwire.Key, mc HostConfig) error {
	scfg := p.cfg.Server
	scfg.PreviousKeys = append(append([]tickwire.Key(nil), scfg.PreviousKeys...), previous...)
	if scfg.Logger == nil {
		scfg.Logger = p.log
	}
	srv, err := tickwire.NewServer(key, scfg)
	if err != nil {
		return err
	}
	mc.StepDown = func(why string) { go p.stepDown(srv, why) }
	mig := newHostMigration(mc, scfg.Logger)
	if err := p.mode.serve(srv, mig); err != nil {
		return err
	}
	go func() {
		if err := srv.Serve(p.hostSock.lease()); err != nil {
			p.log.Warn("peer host stopped", "err", err)
		}
	}()
	p.mu.Lock()
	p.srv, p.mig, p.stats.Hosting = srv, mig, true
	p.mu.Unlock()
	return nil
}

// stepDown closes this peer's host, replaced by a successor: every
// player still connected is told so.
func (p *Player) stepDown(srv *tickwire.Server, why string) { p.stopHost(srv, EventSteppedDown, why) }

// stopHost closes this peer's host srv, saying why in an event of kind
// (stepped down, or abandoned); the players still connected are told
// the host migrated.
//
// The peer gives the host up on the server's loop, with the connections'
// closing, so that no player message reaches the handler in between
// (its Reply would find no host).
func (p *Player) stopHost(srv *tickwire.Server, kind EventKind, why string) {
	srv.Do(func() {
		p.mu.Lock()
		mig := p.mig
		if p.srv == srv {
			p.srv, p.mig = nil, nil
			p.stats.Hosting = false
			p.stats.SteppedDown = p.stats.SteppedDown || kind == EventSteppedDown
			if kind == EventSteppedDown && p.promo == nil {
				// A host this peer promoted to, replaced: its own
				// player follows the successor like everyone else.
				p.follower.Demoted(time.Now())
			}
		} else {
			mig = nil
		}
		p.mu.Unlock()
		if mig != nil {
			mig.down = true // its players leaving now are no news to it
		}
		srv.CloseAll(proto.DisconnectHostMigrate)
	})
	p.event(Event{Kind: kind, Text: why})
	srv.Close()
}

// Join connects the peer to the game's host with tok and starts
// following it. ctx bounds the dial only.
func (p *Player) Join(ctx context.Context, tok *tickwire.ConnectToken) error {
	p.game = tok.GameID
	c, err := p.dial(ctx, p.dialer(), tok)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.players, p.clientID = c.Players(), c.ClientID()
	p.follower.Self = p.players[0]
	p.follower.Heard(time.Now())
	p.mu.Unlock()
	go p.run()
	return nil
}

// dialer is Config.Dialer's dialer for a session (Dialer{} without it).
func (p *Player) dialer() tickwire.Dialer {
	if p.cfg.Dialer == nil {
		return tickwire.Dialer{}
	}
	p.dialerMu.Lock()
	defer p.dialerMu.Unlock()
	return p.cfg.Dialer()
}

// successorRoute is the dialer and the addresses of the session to the
// elected successor slot at addr (Config.Successor).
func (p *Player) successorRoute(slot uint16, addr string) (tickwire.Dialer, []string) {
	if p.cfg.Redirect != nil {
		addr = p.cfg.Redirect(addr)
	}
	if p.cfg.Successor != nil {
		p.dialerMu.Lock()
		d, addrs := p.cfg.Successor(slot, addr)
		p.dialerMu.Unlock()
		if len(addrs) > 0 {
			return d, addrs
		}
		if d.Conn != nil {
			d.Conn.Close()
		}
	}
	return p.dialer(), []string{addr}
}

// dial connects a session with tok on d, at addrs when given (else the
// token's).
func (p *Player) dial(ctx context.Context, d tickwire.Dialer, tok *tickwire.ConnectToken, addrs ...string) (*tickwire.Client, error) {
	d.Game = p
	d.Handler = peerHandler{p}
	if d.Config.Timeout == 0 {
		// The follower decides the host is lost, not the session.
		d.Config.Timeout = 2 * p.timeout()
	}
	if len(addrs) > 0 {
		t := *tok
		t.ServerAddrs = addrs
		tok = &t
	}
	// The session takes the game in Attach (claim), or fails.
	return d.Dial(ctx, tok)
}

func (p *Player) timeout() time.Duration {
	if p.cfg.Timeout > 0 {
		return p.cfg.Timeout
	}
	return migrate.DefaultTimeout
}

// Client is the session to the current host (nil between hosts). Send
// messages on it; do not close it (Close the Player).
func (p *Player) Client() *tickwire.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client
}

// HostDatagram sends b from this peer's host socket to addr, on its
// server's loop, while it hosts (ErrNotHosting otherwise): NAT
// traversal's punches (package rendezvous). The caller bounds what it
// sends to an address that never answered (tickwire.Server.SendDatagram).
func (p *Player) HostDatagram(b []byte, addr netip.AddrPort) error {
	p.mu.Lock()
	srv := p.srv
	p.mu.Unlock()
	if srv == nil {
		return ErrNotHosting
	}
	b = slices.Clone(b)
	srv.Do(func() { srv.SendDatagram(b, addr) })
	return nil
}

// Stats returns the counters.
func (p *Player) Stats() Stats {
	p.mu.Lock()
	st := p.stats
	st.Stream = p.stream
	st.Epoch = uint32(p.follower.Following().Epoch)
	st.StaleRosters = p.follower.StaleRosters()
	mig, srv := p.mig, p.srv
	p.mu.Unlock()
	if mig != nil {
		srv.Do(func() {
			st.Host = mig.Stats()
			p.mode.hostStats(&st)
		})
		st.Epoch = max(st.Epoch, st.Host.Epoch)
	}
	return st
}

// ErrClosed is the Player's Err after Close.
var ErrClosed = errors.New("peerhost: peer closed")

// ErrNotHosting: the peer runs no host now.
var ErrNotHosting = errors.New("peerhost: not hosting")

// Send sends a reliable message to the game's host on channel, on this
// player's peer message stream: it reaches whichever peer hosts the game
// exactly once and in order, across host migrations (during one it waits
// for the successor). It fails only when the stream holds too many
// unconfirmed messages (ErrQueueFull) or data is too large.
func (p *Player) Send(channel uint8, data []byte) error {
	if len(data) > proto.MaxMessageSize {
		return tickwire.ErrMessageTooLarge
	}
	p.mu.Lock()
	if len(p.out) >= maxStreamBacklog || p.outBytes+len(data) > maxStreamBytes {
		p.mu.Unlock()
		return tickwire.ErrQueueFull
	}
	p.outBytes += len(data)
	p.outSeq++
	m := streamMsg{seq: p.outSeq, channel: channel, data: slices.Clone(data)}
	p.out = append(p.out, m)
	p.stream.Sent++
	c, self := p.client, p.players[0]
	if p.provisional(c) {
		// Not to a promotion that may be given up: it goes out when a
		// player follows it, or to the host the player is back with.
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.SendFrame(appendPeerMessage(nil, proto.PeerMessageFrame{Player: self, Seq: m.seq, Channel: channel, Data: m.data}))
	}
	return nil
}

// Reply sends a reliable message from the game host this peer runs to
// connection c's player, on its peer message stream (game.Host.SendStream).
// Call it from the host's game.Config.Handler.
func (p *Player) Reply(c *tickwire.Conn, channel uint8, data []byte) error {
	p.mu.Lock()
	mig := p.mig
	p.mu.Unlock()
	if mig == nil {
		return errors.New("peerhost: Player.Reply: this player hosts no game")
	}
	return mig.sendStream(c, channel, data)
}

// resend sends c, a new session, every stream message not confirmed.
func (p *Player) resend(c *tickwire.Client) {
	p.mu.Lock()
	out := slices.Clone(p.out) // the data is never modified
	self := p.players[0]
	p.ackedRecv, p.ackDue, p.ackPackets = 0, true, 10 // tell the new host how far we got
	p.mu.Unlock()
	var b []byte
	resent := uint64(0)
	for _, m := range out {
		b = appendPeerMessage(b[:0], proto.PeerMessageFrame{Player: self, Seq: m.seq, Channel: m.channel, Data: m.data})
		if c.SendFrame(b) == nil {
			resent++
		}
	}
	p.mu.Lock()
	p.stream.Resent += resent
	p.mu.Unlock()
}

// Done is closed when the Player ended; Err says why.
func (p *Player) Done() <-chan struct{} { return p.done }

// Err is nil while the Player plays, then why it ended.
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close leaves the game: the session and any host this peer runs. A
// host with a warm standby hands the game over to it first, and returns
// once its players took it (HandOverTimeout at most): they play on with
// the successor.
func (p *Player) Close() error {
	p.once.Do(func() { close(p.stop) })
	<-p.done
	return nil
}

// run is the peer's supervisor: it advances the follower and carries
// out its decisions.
func (p *Player) run() {
	defer close(p.done)
	const every = 20 * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var ended <-chan struct{}
		cur := p.Client()
		if cur != nil {
			ended = cur.Done()
		}
		waited := time.Now()
		select {
		case <-p.stop:
			p.handOver()
			p.finish(ErrClosed, proto.DisconnectClosed)
			return
		case <-p.kick:
		case <-ended:
			if p.sessionEnded(cur) {
				return
			}
		case <-t.C:
		}
		now := time.Now()
		p.mu.Lock()
		if stall := now.Sub(waited) - 2*every; stall > 0 {
			// This peer's own process did not run (a SIGSTOP, a
			// frozen laptop): the host is not to blame for the
			// silence meanwhile, as its session does not blame it.
			p.follower.Excuse(now, stall)
		}
		act := p.follower.Advance(now)
		var loss *hostLoss
		var host *tickwire.Client
		if act.Kind != migrate.ActNone && p.loss == nil {
			loss, host = p.beginLoss(), p.client
			if host == nil {
				host = p.hostEnded
			}
			p.hostEnded = nil
		}
		p.mu.Unlock()
		if loss != nil {
			p.leaveHost(now, loss, host, act)
		}
		switch act.Kind {
		case migrate.ActDial:
			p.follow(act)
		case migrate.ActPromote:
			p.promote(act)
		case migrate.ActNoHost:
			p.mu.Lock()
			p.noHost = act.Err
			if p.rejoining() && p.follower.Retry() {
				// Maybe cut off itself: it tries the others again
				// while it tries to rejoin the host.
				p.noHost = nil
			}
			p.mu.Unlock()
		}
		p.mu.Lock()
		noHost := p.noHost
		over := noHost != nil && !p.rejoining()
		p.mu.Unlock()
		if over {
			p.event(Event{Kind: EventNoHost, Time: now})
			p.finish(noHost, proto.DisconnectHostMigrate)
			return
		}
	}
}

// sessionEnded handles the end of the session to the host: one that
// left for a successor (or timed out) starts the election now; any other
// reason ends the Player. It reports whether the Player ended.
func (p *Player) sessionEnded(c *tickwire.Client) bool {
	p.mu.Lock()
	if p.client != c {
		p.mu.Unlock()
		return false // replaced already (a successor was dialled)
	}
	p.client = nil
	p.mu.Unlock()
	var de *tickwire.DisconnectError
	errors.As(c.Err(), &de)
	if de != nil && de.Remote && de.Reason != proto.DisconnectHostMigrate && de.Reason != proto.DisconnectTimeout {
		p.finish(c.Err(), de.Reason) // the host ended the game, or kicked us
		return true
	}
	now := time.Now()
	p.mu.Lock()
	if p.loss == nil {
		p.hostEnded = c // its rejoin credential, if it timed out
	}
	p.follower.HostGone(now)
	// A successor that accepted us and ended the session before it
	// announced itself is struck off.
	p.follower.Unanswered(now)
	p.mu.Unlock()
	return false
}

// finish ends the Player with err.
func (p *Player) finish(err error, r proto.DisconnectReason) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	loss := p.loss
	p.endLoss()
	p.mu.Unlock()
	if loss != nil && loss.rejoining != nil {
		<-loss.rejoining // no session takes the game any more (claim)
	}
	p.mu.Lock()
	c, srv := p.client, p.srv
	p.client = nil
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
	if srv != nil {
		srv.Close()
	}
	if p.hostSock != nil {
		p.hostSock.close()
	}
	// A game between hosts heard no end of its session: tell it now.
	p.mode.resumeFailed(r)
	if p.cfg.Handler != nil {
		p.cfg.Handler.Disconnected(c, r)
	}
}

// leaveSession closes the session the game plays on during a loss of the
// host, if any (a successor that did not announce itself in time), for
// another.
func (p *Player) leaveSession() {
	p.mu.Lock()
	c := p.client
	p.mu.Unlock()
	if c != nil {
		p.drop(c, proto.DisconnectHostMigrate)
	}
}

// drop closes session c for reason r, the game ready to resume on
// another session: c's end is not the game's.
func (p *Player) drop(c *tickwire.Client, r proto.DisconnectReason) {
	p.mode.resume()
	c.CloseWith(r)
	p.mu.Lock()
	if p.client == c {
		p.client = nil
	}
	p.mu.Unlock()
}

// follow dials the elected successor act.Member with its token.
func (p *Player) follow(act migrate.Action) {
	p.mu.Lock()
	loss := p.loss
	held := p.tokens[act.Member.Slot]
	p.mu.Unlock()
	if loss == nil {
		return // back with the host: the election is over
	}
	p.leaveSession()
	if held == nil {
		p.log.Warn("no token for the successor", "slot", act.Member.Slot, "epoch", act.Epoch)
		return // its promote timeout strikes it off
	}
	d, addrs := p.successorRoute(act.Member.Slot, act.Member.Addr)
	// Each address may take the time a successor has to announce itself.
	ctx, cancel := context.WithTimeout(loss.ctx, time.Duration(len(addrs))*p.promoteTimeout())
	defer cancel()
	c, err := p.dial(ctx, d, held.tok, addrs...)
	if err != nil {
		if loss.ctx.Err() != nil || errors.Is(err, errAttached) {
			return // the host it had lost answered first
		}
		p.mu.Lock()
		p.stats.DialFailures++
		p.mu.Unlock()
		p.log.Warn("successor did not answer", "slot", act.Member.Slot, "addrs", addrs, "err", err)
		return
	}
	// Its announcement comes on c, however late: it is not struck off
	// meanwhile (a first connect waits as long for its accept).
	p.mu.Lock()
	p.follower.Answered(act.Member.Slot, act.Epoch)
	p.mu.Unlock()
	p.resend(c)
	p.event(Event{Kind: EventFollowing, Time: time.Now(), Epoch: uint32(act.Epoch), Slot: act.Member.Slot})
}

func (p *Player) promoteTimeout() time.Duration {
	if p.cfg.PromoteTimeout > 0 {
		return p.cfg.PromoteTimeout
	}
	return migrate.DefaultPromoteTimeout
}

// promote makes this peer the host of act.Epoch: its standby becomes
// the authority on its own server, and its own player re-dials it. The
// promotion holds (hold) once a player follows it, or once the host
// lost did not answer its rejoin; until then this peer may have been
// cut off itself, and its own player's stream waits.
func (p *Player) promote(act migrate.Action) {
	now := time.Now()
	p.mu.Lock()
	if p.loss == nil {
		p.mu.Unlock()
		return // back with the host: the election is over
	}
	old := p.follower.Following()
	lost := old.Host
	// Every candidate, the lost host's too: a host that stepped down (a
	// SIGSTOP) follows its successor and may host again; a dead one
	// never reconnects, so no roster names it.
	candidates := maps.Clone(p.hostAddrs)
	keys := append([]tickwire.Key(nil), p.keys...)
	at, adopt, err := p.mode.takeOver(now, old.Epoch)
	if t := p.loss.handOverTick; t != 0 && at != t {
		p.log.Warn("standby short of the tick handed over", "standby", at, "handed over", t)
	}
	p.stats.PromotedAt = at
	streams := make(map[uint16]*playerStream, len(p.streams))
	for pl, st := range p.streams {
		streams[pl] = st.clone()
	}
	clear(p.streams)
	// The players the election passed over are gone: the game does not
	// hold its tick for them.
	gone := []uint16{lost}
	for _, m := range old.Succession(nil) {
		if m.Slot == p.players[0] {
			break
		}
		gone = append(gone, m.Slot)
	}
	members := make([]uint16, 0, len(old.Members))
	for _, m := range old.Members {
		members = append(members, m.Slot)
	}
	tickRate := p.tickRate
	p.mu.Unlock()
	cold := false
	if ss, ok := p.mode.(*stateSync); ok && errors.Is(err, migrate.ErrNotLoaded) && p.cfg.HostConn != nil && len(keys) > 0 {
		// Not warm (every warm standby is gone): host from this
		// player's own confirmed state (docs/MIGRATION.md says what
		// that loses).
		var eng *sim.Server
		if eng, at, err = p.coldEngine(now, members, tickRate); err == nil {
			adopt = ss.adopter(eng)
			cold = true
			streams = nil // a cold host learns them from the players
			p.mu.Lock()
			p.stats.PromotedAt = at
			p.stats.ColdPromotions++
			p.mu.Unlock()
			p.log.Warn("promoted without a warm standby: from its player's confirmed state", "epoch", act.Epoch, "tick", at)
		}
	}
	p.leaveSession()
	if err != nil || len(keys) == 0 || p.cfg.HostConn == nil {
		p.log.Warn("elected but cannot host", "epoch", act.Epoch, "err", err, "keys", len(keys))
		return // the others strike us off after the promote timeout
	}
	key := keys[len(keys)-1]
	var srv *tickwire.Server
	err = p.startHost(key, keys[:len(keys)-1], HostConfig{Game: p.game, Epoch: uint32(act.Epoch),
		Self: p.players[0], Candidates: candidates, Standbys: p.cfg.Standbys, streams: streams, cold: cold,
		followed: func() { p.hold(srv, nil) }})
	if err == nil {
		p.mu.Lock()
		srv = p.srv
		p.mu.Unlock()
		srv.Do(func() {
			err = adopt(adoption{epoch: uint32(act.Epoch), self: p.players[0], addr: p.cfg.HostAddr, grace: 2 * p.timeout(), hold: p.cfg.Hold, lost: lost, gone: gone})
		})
	}
	if err != nil {
		p.log.Warn("promotion failed", "epoch", act.Epoch, "err", err)
		return
	}
	pr := &promotion{srv: srv}
	p.mu.Lock()
	back := p.loss == nil
	if !back {
		p.follower.Promoted(act.Epoch)
		p.stats.Promotions++
		p.promo = pr
	}
	rejoining := p.rejoining()
	p.mu.Unlock()
	if back {
		p.stopHost(srv, EventAbandoned, "the host it had lost answered")
		return
	}
	p.event(Event{Kind: EventPromoted, Time: time.Now(), Epoch: uint32(act.Epoch), Slot: p.players[0]})
	if !rejoining {
		p.hold(srv, nil) // a hand-over's: the host is gone for good
	}
	// The own player re-dials its own server like everyone else.
	local := p.cfg.HostConn.LocalAddr()
	if local.Addr().IsUnspecified() {
		local = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), local.Port())
	}
	self := local.String()
	tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: p.game, ClientID: p.clientID, Players: p.players,
		ServerAddrs: []string{self}}, time.Now())
	if err != nil {
		p.log.Warn("own token", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.promoteTimeout())
	defer cancel()
	c, err := p.dial(ctx, p.dialer(), tok)
	if err != nil {
		if !errors.Is(err, errAttached) {
			p.log.Warn("own player could not rejoin", "err", err)
		}
		return
	}
	p.ownDialled(pr, c)
}

// coldEngine is the engine of a game this peer takes over without a
// warm standby: the world of its own player's confirmed state (the
// newest state the host sent it), with members as its players, running
// from that state's tick at now. It has none of what only a standby
// holds: the host's steps after that tick, the inputs it held for later
// ticks, the message streams' copies, the lag-compensation history.
func (p *Player) coldEngine(now time.Time, members []uint16, tickRate int) (*sim.Server, uint32, error) {
	if p.cfg.Factory == nil || tickRate == 0 {
		return nil, 0, migrate.ErrNotLoaded
	}
	world, err := p.cfg.Factory(p.game)
	if err != nil {
		return nil, 0, err
	}
	st := sim.ServerState{Players: slices.Sorted(slices.Values(members))}
	err = migrate.ErrNotLoaded
	p.cfg.Game.State(func(s *deltacomp.Snapshot) {
		if s.Tick == 0 || len(s.IDs) == 0 {
			return
		}
		st.Tick, err = s.Tick, world.ReadSnapshot(s)
		for _, id := range s.IDs {
			if id.Spawner() == 0 {
				// The server's spawn counter: past every id it spawned.
				st.ServerSpawn = max(st.ServerSpawn, id.Index())
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	cfg := p.cfg.Host.Sim
	cfg.TickRate = tickRate
	eng, err := sim.RestoreServer(world, cfg, st)
	if err != nil {
		return nil, 0, err
	}
	eng.Resume(now)
	return eng, st.Tick, nil
}

// event reports e to OnEvent.
func (p *Player) event(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	p.log.Info("peer "+e.Kind.String(), "epoch", e.Epoch, "slot", e.Slot, "text", e.Text)
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(e)
	}
}

// peerHandler passes the sessions' messages on; their disconnects are
// the Player's business.
type peerHandler struct{ p *Player }

func (h peerHandler) Message(c *tickwire.Client, m *tickwire.Message) {
	if h.p.cfg.Handler != nil {
		h.p.cfg.Handler.Message(c, m)
	}
}

func (h peerHandler) Disconnected(*tickwire.Client, proto.DisconnectReason) {}

// Attach makes the Player the ClientLayer of each session: it wraps the
// game.Client's frame handler with the migration frames. The game plays
// on one session at a time: a session that cannot take it (claim)
// fails its dial.
func (p *Player) Attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	own, err := p.claim(c, a)
	if err != nil {
		return nil, err
	}
	if own != nil {
		// Back with the host while this peer's own player was on the
		// promotion nobody followed: the game leaves that for the host.
		p.drop(own, proto.DisconnectClosed)
	}
	fh, err := p.mode.attach(c, a)
	if err != nil {
		p.mu.Lock()
		if p.client == c {
			p.client = nil
		}
		p.mu.Unlock()
		return nil, err
	}
	p.mu.Lock()
	p.tickRate = c.TickRate()
	p.mu.Unlock()
	return &peerFrames{p: p, c: c, inner: fh, tickRate: c.TickRate()}, nil
}

// peerFrames is a session's frame handler: the game's, plus the host
// migration frames and the host's heartbeat.
type peerFrames struct {
	p        *Player
	c        *tickwire.Client
	inner    tickwire.FrameHandler
	tickRate int
}

func (f *peerFrames) Ticks() tickwire.Ticks { return f.inner.Ticks() }

// Tick runs the game's frame (the game.Client is a Ticker).
func (f *peerFrames) Tick(now time.Time, tick uint32) {
	if t, ok := f.inner.(tickwire.Ticker); ok {
		t.Tick(now, tick)
	}
}

// Ended passes the session's end to the game. A session to the host
// that timed out, or that the host ended for a successor, is a host
// migration, which the game goes on across (sessionEnded starts the
// election): the game is told to resume before it hears the end, so it
// sees no disconnect.
func (f *peerFrames) Ended(now time.Time, r proto.DisconnectReason) {
	if r == proto.DisconnectTimeout || r == proto.DisconnectHostMigrate {
		f.p.mode.resume()
	}
	if e, ok := f.inner.(tickwire.Ender); ok {
		e.Ended(now, r)
	}
}

// AppendFrames adds the standby's ack after the game's frames.
func (f *peerFrames) AppendFrames(b []byte, room int, pi *tickwire.PacketInfo) []byte {
	start := len(b)
	b = f.inner.AppendFrames(b, room, pi)
	p := f.p
	p.mu.Lock()
	tick, epoch, ok := p.mode.standbyTick()
	due := ok && tick != p.ackSent
	// This player's stream ack: when it moved, and now and then while
	// anything was received (it is cumulative; a lost one is repeated).
	p.ackPackets++
	// After a migration it goes out every 10 packets until the new host's
	// first message, even having received nothing: a host that took over
	// cold numbers its messages from it.
	resumedAck := p.ackDue && (p.ackPackets >= 10 || p.ackedRecv != p.inRecv)
	if (resumedAck || p.inRecv != 0 && (p.inRecv != p.ackedRecv || p.ackPackets >= 30)) && len(p.players) > 0 {
		if nb := appendPeerAck(b, p.players[0], proto.PeerAckToPlayer, p.inRecv); len(nb)-start <= room {
			b, p.ackedRecv, p.ackPackets = nb, p.inRecv, 0
		}
	}
	p.mu.Unlock()
	if due {
		a := proto.StandbyAckFrame{Epoch: uint32(epoch), Tick: tick}
		if nb, err := a.Append(b); err == nil && len(nb)-start <= room {
			b = nb
			p.mu.Lock()
			p.ackSent = tick
			p.mu.Unlock()
		}
	}
	return b
}

// Frame handles the migration frames and passes the others to the game.
func (f *peerFrames) Frame(t proto.FrameType, b []byte, pi *tickwire.PacketInfo) error {
	p := f.p
	p.mu.Lock()
	p.follower.Heard(pi.Time)
	p.mu.Unlock()
	switch t {
	case proto.FrameRoster:
		return p.roster(f.c, b)
	case proto.FrameSuccessor:
		return p.successor(f.c, b)
	case proto.FrameStandbyState, proto.FrameStandbyStep:
		return p.standbyFrame(t, b, f.tickRate)
	case proto.FramePeerMessage, proto.FramePeerAck:
		return p.streamFrames(b)
	case proto.FrameControl:
		ctl, _, err := proto.ParseControlFrame(b)
		if err == nil && ctl.Code == proto.ControlHandOver {
			// The peer layer's, not the game's (which counts the
			// game's frames).
			return p.heardHandOver(pi.Time, &ctl)
		}
		if err == nil && ctl.Code == proto.ControlStandbyEnd {
			return p.standbyEnd(f.c, &ctl)
		}
		if err == nil && ctl.Code == proto.ControlHostMigration {
			p.mu.Lock()
			ok := p.follower.Announced(pi.Time, ctl.Player, migrate.Epoch(ctl.Arg))
			p.mu.Unlock()
			if ok {
				p.mu.Lock()
				p.stats.Migrations++
				p.endLoss()
				// The successor runs: its standbys get the streams from
				// it. Until then this player kept the old host's copies,
				// in case it had to take over itself.
				clear(p.streams)
				p.mu.Unlock()
				p.event(Event{Kind: EventResumed, Time: pi.Time, Epoch: uint32(ctl.Arg), Slot: ctl.Player})
			}
		}
	}
	return f.inner.Frame(t, b, pi)
}

// roster follows a roster from the host of session c.
func (p *Player) roster(c *tickwire.Client, b []byte) error {
	f, _, err := proto.ParseRosterFrame(b)
	if err != nil {
		return err
	}
	r, err := migrate.RosterFromFrame(&f)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.provisional(c) && p.follower.Roster(&r) {
		for _, m := range r.Members {
			if m.Candidate {
				p.hostAddrs[m.Slot] = m.Addr
			}
		}
	}
	return nil
}

// keptKeys is how many successor keys a candidate keeps, the newest:
// its server opens tokens sealed with any of them. A player's newest
// token may be of an earlier round than its successor's newest key (the
// rounds reach each player on its own reliable channel, and a round
// whose key a queue refused hands out no token), by a few rounds at
// CredentialSpacing during a burst of joins.
const keptKeys = 4

// successor keeps a successor key or token from the host of session c.
func (p *Player) successor(c *tickwire.Client, b []byte) error {
	f, _, err := proto.ParseSuccessorFrame(b)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provisional(c) {
		return nil // for successors of a host that may be given up
	}
	if f.Epoch < uint32(p.follower.Following().Epoch) {
		return fmt.Errorf("%w: epoch %d is stale", ErrSuccessorFrame, f.Epoch)
	}
	switch f.Kind {
	case proto.SuccessorKey:
		if len(p.players) == 0 || f.Successor != p.players[0] {
			return fmt.Errorf("%w: a key for slot %d", ErrSuccessorFrame, f.Successor)
		}
		k, err := SuccessorKey(&f)
		if err != nil {
			return err
		}
		p.keys = append(p.keys, k)
		if len(p.keys) > keptKeys {
			p.keys = p.keys[len(p.keys)-keptKeys:]
		}
		p.stats.Keys++
	default:
		tok, err := SuccessorToken(&f)
		if err != nil {
			return err
		}
		p.tokens[f.Successor] = &tokenHeld{epoch: f.Epoch, tok: tok}
		p.stats.Tokens++
	}
	return nil
}

// errStandbyEnd is a standby end a player refuses: for another player,
// or of an older epoch than the host it follows.
var errStandbyEnd = errors.New("peerhost: standby end for another player, or of an older epoch")

// standbyEnd drops this peer's standby, and its copies of the streams,
// when the host of session c says it feeds it no more: elected later, it
// hosts cold rather than from a state the game left behind.
func (p *Player) standbyEnd(c *tickwire.Client, ctl *proto.ControlFrame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provisional(c) || len(p.players) == 0 || ctl.Player != p.players[0] ||
		migrate.Epoch(ctl.Arg) < p.follower.Following().Epoch {
		return errStandbyEnd
	}
	p.mode.standbyEnd(migrate.Epoch(ctl.Arg))
	clear(p.streams)
	p.stats.StandbyEnds++
	return nil
}

// standbyFrame loads a standby state or replays a standby step.
func (p *Player) standbyFrame(t proto.FrameType, b []byte, tickRate int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode.standbyFrame(t, b, tickRate)
}

// streamFrames takes a reliable message of stream frames from the host
// of the session: peer messages and peer acks, one after the other (a
// host batches the copies it sends its standby).
func (p *Player) streamFrames(b []byte) error {
	for len(b) > 0 {
		t, err := proto.PeekFrameType(b)
		if err != nil {
			return err
		}
		n := 0
		switch t {
		case proto.FramePeerMessage:
			var f proto.PeerMessageFrame
			if f, n, err = proto.ParsePeerMessageFrame(b); err == nil {
				err = p.peerMessage(&f)
			}
		case proto.FramePeerAck:
			var f proto.PeerAckFrame
			if f, n, err = proto.ParsePeerAckFrame(b); err == nil {
				err = p.peerAck(&f)
			}
		default:
			return errUnexpectedFrame
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// peerMessage takes a stream message from the host: one to this player
// is delivered in order (a duplicate after a migration is dropped); a
// copy for the standby is kept.
func (p *Player) peerMessage(f *proto.PeerMessageFrame) error {
	p.mu.Lock()
	if f.Copy {
		st := p.streams[f.Player]
		if st == nil {
			st = newPlayerStream()
			p.streams[f.Player] = st
		}
		st.standbyCopy(f)
		p.mu.Unlock()
		return nil
	}
	if len(p.players) == 0 || f.Player != p.players[0] {
		p.mu.Unlock()
		return errForeignPlayer
	}
	p.ackDue = false // the host numbers its messages
	switch d := int32(f.Seq - p.inRecv - 1); {
	case d < 0:
		p.stream.Duplicates++
		p.mu.Unlock()
		return nil
	case d > 0:
		p.stream.Gaps++
		p.mu.Unlock()
		return errStreamGap
	}
	p.inRecv = f.Seq
	p.stream.Received++
	c := p.client
	p.mu.Unlock()
	if p.cfg.Handler != nil {
		p.cfg.Handler.Message(c, &tickwire.Message{Channel: f.Channel, Delivery: tickwire.Reliable, Data: f.Data})
	}
	return nil
}

// peerAck takes a stream acknowledgement from the host: of this
// player's messages, or, as the standby, a copy for a player's stream.
func (p *Player) peerAck(f *proto.PeerAckFrame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.Kind {
	case proto.PeerAckFromPlayer:
		if len(p.players) == 0 || f.Player != p.players[0] {
			return errForeignPlayer
		}
		p.out = slices.DeleteFunc(p.out, func(m streamMsg) bool {
			done := int32(m.seq-f.Through) <= 0
			if done {
				p.outBytes -= len(m.data)
			}
			return done
		})
	case proto.PeerAckStandbyRun, proto.PeerAckStandbyReceived:
		st := p.streams[f.Player]
		if st == nil {
			st = newPlayerStream()
			p.streams[f.Player] = st
		}
		st.standbyAck(f)
	default:
		return errUnexpectedFrame
	}
	return nil
}
