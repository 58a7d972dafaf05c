package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/peerhost"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// peerBot is one player of a peer-hosted game (-peer): it takes a seat
// in the lobby's room offering its own UDP port to host, and plays
// through a peerhost.Player, which hosts the game when the lobby picks
// this player, takes it over when the host is lost, and hands it over to
// its successor when this player quits while hosting.
type peerBot struct {
	bot
	peerEvents
	peer *peerhost.Player
}

// peerEvents records a -peer player's migration events and prints a
// line for each.
type peerEvents struct {
	evMu   sync.Mutex
	events []botproto.PeerEvent
	out    io.Writer // progress lines

	// How it reached its first host through NATs (-peer with the
	// lobby's rendezvous): natPeer.path, the address, the time taken.
	path, via string
	connect   time.Duration
}

// echoHost is the game host's handler in a peer-hosted game: it sends
// every reliable message on botproto.EchoChannel straight back through
// the Peer's exactly-once stream.
type echoHost struct {
	peer *peerhost.Player
	log  *slog.Logger
}

func (echoHost) Connected(*tickwire.Conn)                            {}
func (echoHost) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
func (h echoHost) Message(c *tickwire.Conn, m *tickwire.Message) {
	if m.Channel == botproto.EchoChannel && m.Delivery == tickwire.Reliable {
		if err := h.peer.Reply(c, botproto.EchoChannel, m.Data); err != nil {
			h.log.Warn("echo", "conn", c.ID(), "err", err)
		}
	}
}

// peerSeat is a -peer player's seat in a peer-hosted game: its host
// socket, the lobby's assignment, the players who can host (by slot:
// where the others reach them) and this player's own address.
type peerSeat struct {
	hc         udp.BatchConn
	a          *lobby.Assignment
	candidates map[uint16]string
	self       string
	// With the lobby's rendezvous: how this player traverses NATs, the
	// sockets its sessions dial from (nil: a new one each), and how it
	// reaches a successor after a host migration (nil: at its address,
	// from a new socket).
	nat       *natPeer
	dialer    func() tickwire.Dialer
	successor func(slot uint16, addr string) (tickwire.Dialer, []string)
	hold      time.Duration
}

// seatPeer opens the host socket, takes a seat in the room (learning
// the socket's public mappings when the lobby runs a rendezvous),
// readies when it is full and waits for the assignment.
func seatPeer(ctx context.Context, o *options, log *slog.Logger, stderr io.Writer) (*peerSeat, error) {
	bind := net.JoinHostPort(o.peerBind, strconv.Itoa(o.hostPort))
	hc, err := udp.Listen("udp", bind, udp.Config{})
	if err != nil {
		return nil, fmt.Errorf("-host-port: %w", err)
	}
	offer := o.hostOffer
	if offer == 0 {
		offer = int(hc.LocalAddr().Port())
	}
	lc := &lobby.Client{BaseURL: o.server}
	seat, err := takeSeat(ctx, lc, o, uint16(offer))
	if err != nil {
		hc.Close()
		return nil, err
	}
	fmt.Fprintf(stderr, "tickwire-bot: seated in room %s as %s, hosting on %v (offered port %d)\n", seat.Room.ID, seat.Player, hc.LocalAddr(), offer)
	var nat *natPeer
	if seat.Rendezvous != nil {
		if nat, err = learnMappings(ctx, seat.Rendezvous, hc, stderr); err != nil {
			// The lobby then names the address of our HTTP requests.
			fmt.Fprintf(stderr, "tickwire-bot: no NAT traversal: %v\n", err)
		}
	}
	if err := readyWhenFull(ctx, seat, o.roomSize, uint16(offer)); err != nil {
		hc.Close()
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	a, err := seat.Assignment(actx)
	cancel()
	if err != nil {
		hc.Close()
		return nil, fmt.Errorf("waiting for the assignment: %w", err)
	}
	ps := &peerSeat{hc: hc, a: a, candidates: map[uint16]string{}, nat: nat}
	if nat != nil {
		nat.bindRelays(ctx, a, hc)
		ps.hc, ps.hold = nat.hostSocket(hc), natHold
		if a.Role != lobby.RoleHost {
			ps.dialer = nat.dialer(tickwire.Config{Logger: log})
		} else {
			nat.keepIdle() // the host joins its own game on loopback
		}
		ps.successor = nat.successor(tickwire.Config{Logger: log})
	}
	for _, p := range a.Players {
		if p.HostAddr != "" {
			ps.candidates[p.Slot] = p.HostAddr
		}
		if p.Slot == a.Slot {
			ps.self = p.HostAddr
		}
	}
	if ps.self == "" {
		ps.self = net.JoinHostPort("127.0.0.1", strconv.Itoa(offer))
	}
	return ps, nil
}

// start hosts the game on peer when the lobby picked this player
// (punching toward the others' candidates through NATs), and joins it,
// noting in ev how it reached the host.
func (ps *peerSeat) start(ctx context.Context, peer *peerhost.Player, ev *peerEvents, stderr io.Writer) error {
	a, nat := ps.a, ps.nat
	// The client id places the player in the succession (ascending).
	fmt.Fprintf(stderr, "tickwire-bot: game %#x, slot %d, client %#x, role %s\n", a.GameID, a.Slot, a.ClientID, a.Role)
	if a.Role == "host" {
		key, err := tickwire.ParseKey(a.HostKey)
		if err != nil {
			return fmt.Errorf("the lobby's host key: %w", err)
		}
		if err := peer.Host(a.GameID, key, a.Slot, ps.candidates, a.Token.UserData); err != nil {
			return err
		}
		if nat != nil {
			nat.punch(ctx, a, peer)
		}
	}
	tok := a.Token
	if nat != nil {
		tok = nat.token(tok)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err := peer.Join(dctx, tok)
	cancel()
	if err != nil {
		peer.Close()
		return fmt.Errorf("joining the game: %w", err)
	}
	if nat != nil {
		via := peer.Client().Server()
		ev.path, ev.via, ev.connect = nat.path(a, via), via.String(), time.Since(nat.assigned)
		fmt.Fprintf(stderr, "tickwire-bot: connected path=%s via=%v in %.0f ms\n", ev.path, via, float64(ev.connect)/float64(time.Millisecond))
	}
	if nat != nil && len(nat.keep) > 0 {
		go nat.keepAlive(ctx)
	}
	fmt.Fprintf(stderr, "tickwire-bot: playing goroutines=%d\n", runtime.NumGoroutine())
	return nil
}

// onEvent is the player's peerhost.Config.OnEvent: ev records and
// prints every event. With NAT traversal, a promotion punches toward
// the other players' client candidates, and a successor followed has
// its path in the event's text ("path=direct via=…" or "path=relay").
// peer is set before the player starts.
func (ps *peerSeat) onEvent(ctx context.Context, ev *peerEvents, peer **peerhost.Player) func(peerhost.Event) {
	return func(e peerhost.Event) {
		if n := ps.nat; n != nil {
			switch e.Kind {
			case peerhost.EventPromoted:
				n.punch(ctx, ps.a, *peer)
			case peerhost.EventFollowing:
				if c := (*peer).Client(); c != nil {
					e.Text = fmt.Sprintf("path=%s via=%v", n.followed(e.Slot, c.Server()), c.Server())
				}
			}
		}
		ev.event(e)
	}
}

// playPeer runs the -peer mode and summarises it.
func playPeer(ctx context.Context, o *options, log *slog.Logger, stderr io.Writer) (*botproto.Summary, error) {
	ps, err := seatPeer(ctx, o, log, stderr)
	if err != nil {
		return nil, err
	}
	if o.game == "swarm" {
		return playPeerCommits(ctx, o, ps, log, stderr)
	}
	a := ps.a
	b := &peerBot{bot: bot{id: int(a.Slot)}, peerEvents: peerEvents{out: stderr}}
	b.game = newBotGame(o.seed+uint64(a.Slot), a.Token.Players, false, true, o.interpLag, o.inputInterval)
	host := &echoHost{log: log}
	npcs := o.npcs
	var peer *peerhost.Player
	peer, err = peerhost.NewPlayer(peerhost.Config{
		Game:      b.game.gc,
		Factory:   func(uint64) (game.Game, error) { return arena.NewGame(npcs), nil },
		Host:      game.Config{Handler: host},
		Server:    tickwire.Config{Logger: log},
		HostConn:  ps.hc,
		HostAddr:  ps.self,
		Handler:   &b.bot,
		Logger:    log,
		OnEvent:   ps.onEvent(ctx, &b.peerEvents, &peer),
		Dialer:    ps.dialer,
		Successor: ps.successor,
		Hold:      ps.hold,
	})
	if err != nil {
		ps.hc.Close()
		return nil, err
	}
	host.peer = peer
	b.peer = peer
	if err := ps.start(ctx, peer, &b.peerEvents, stderr); err != nil {
		return nil, err
	}
	return b.play(ctx, o, stderr)
}

// takeSeat joins the room named o.peer, creating it (peer-hosted) when
// it does not exist yet.
func takeSeat(ctx context.Context, lc *lobby.Client, o *options, offer uint16) (*lobby.Seat, error) {
	name := o.playerName
	rooms, err := lc.Rooms(ctx, o.gameType)
	if err != nil {
		return nil, fmt.Errorf("listing rooms: %w", err)
	}
	for _, r := range rooms {
		if r.Name == o.peer {
			return lc.Join(ctx, r.ID, lobby.JoinRequest{Player: name, HostPort: offer})
		}
	}
	return lc.Create(ctx, o.gameType, lobby.CreateRequest{Name: o.peer, MaxPlayers: o.roomSize,
		Hosting: lobby.PeerHosted, Player: name, HostPort: offer})
}

// readyWhenFull waits until the room holds size players, then readies.
// It polls through the seat, which keeps it: a seat whose player does
// not call the lobby for lobby.Config.SeatTimeout is given up.
func readyWhenFull(ctx context.Context, seat *lobby.Seat, size int, offer uint16) error {
	t := time.NewTicker(50 * time.Millisecond) // polling the lobby's room
	defer t.Stop()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := seat.Poll(ctx, 0)
		if err == nil && st.Room == nil {
			err = fmt.Errorf("the lobby answered %q without the room", st.Status)
		}
		if err != nil {
			return fmt.Errorf("room %s: %w", seat.Room.ID, err)
		}
		if len(st.Room.Players) >= size {
			return seat.SetReady(ctx, lobby.ReadyRequest{Ready: true, HostPort: offer})
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("room %s still has %d of %d players after a minute", seat.Room.ID, len(st.Room.Players), size)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (b *peerEvents) event(e peerhost.Event) {
	b.evMu.Lock()
	defer b.evMu.Unlock()
	b.events = append(b.events, botproto.PeerEvent{Kind: e.Kind.String(), UnixMs: e.Time.UnixMilli(),
		Epoch: e.Epoch, Slot: e.Slot, Text: e.Text})
	// One line per event, as it happens: the end-to-end test follows the
	// migrations by them.
	fmt.Fprintf(b.out, "tickwire-bot: peer event %q epoch=%d slot=%d unix_ms=%d %s\n", e.Kind.String(), e.Epoch, e.Slot, e.Time.UnixMilli(), e.Text)
}

// sendEcho sends the next numbered echo through the Peer's stream.
func (b *peerBot) sendEcho() {
	b.sendEchoWith(func(msg []byte) error { return b.peer.Send(botproto.EchoChannel, msg) })
}

// play runs the peer for o.duration (or until it ends) and summarises.
func (b *peerBot) play(ctx context.Context, o *options, stderr io.Writer) (*botproto.Summary, error) {
	start := time.Now()
	echo := time.NewTicker(o.echoEvery)
	defer echo.Stop()
	end := time.NewTimer(o.duration)
	defer end.Stop()
	status := time.NewTicker(time.Second)
	defer status.Stop()
	var ended error
	var rtts []time.Duration
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end.C:
			break loop
		case <-b.peer.Done():
			ended = b.peer.Err()
			break loop
		case <-echo.C:
			b.sendEcho()
		case <-status.C:
			if c := b.peer.Client(); c != nil {
				rtts = append(rtts, c.Stats().RTT)
			}
			if st := b.peer.Stats(); st.Hosting {
				fmt.Fprintf(stderr, "tickwire-bot: hosting epoch=%d joins=%d resumed_missing=%d standby_lag=%d stream_received=%d stream_duplicates=%d\n",
					st.Epoch, st.HostGame.Joins, st.HostGame.ResumedMissing, st.Host.StandbyLag, st.Host.Stream.Received, st.Host.Stream.Duplicates)
			}
		}
	}
	elapsed := time.Since(start)
	if ended == nil {
		drainEchoes(b.outstanding)
	}
	st := b.peer.Stats()
	if ended == nil {
		// Stay in the game a little longer: the others may still wait
		// for their last echoes from this player's host.
		linger := time.NewTimer(3 * time.Second)
		select {
		case <-linger.C:
		case <-ctx.Done():
		case <-b.peer.Done():
		}
		linger.Stop()
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	goroutines := runtime.NumGoroutine()
	b.peer.Close()
	sum := &botproto.Summary{Clients: 1, Connected: 1}
	fill(sum, []*bot{&b.bot}, counts{}, counts{}, elapsed, rtts)
	sum.Peer = b.summary(uint16(b.id), st, ended)
	sum.Peer.Goroutines = goroutines
	if st.Hosting {
		sum.Peer.ResumedMissing = st.HostGame.ResumedMissing
	}
	return sum, nil
}

// summary is the peer's part of the summary: slot's counts st, its
// events, and why it ended early (ended; nil: it did not).
func (b *peerEvents) summary(slot uint16, st peerhost.Stats, ended error) *botproto.PeerSummary {
	b.evMu.Lock()
	defer b.evMu.Unlock()
	s := &botproto.PeerSummary{Slot: slot, Epoch: st.Epoch, Migrations: st.Migrations, Promotions: st.Promotions,
		Hosting: st.Hosting, SteppedDown: st.SteppedDown, StandbyStates: st.StandbyState, StandbySteps: st.StandbySteps,
		StandbyBytes: st.Host.Feed.StateBytes + st.Host.Feed.StepBytes, Events: slices.Clone(b.events),
		Path: b.path, Via: b.via, ConnectMs: float64(b.connect) / float64(time.Millisecond)}
	if ended != nil && !errors.Is(ended, peerhost.ErrClosed) {
		s.Ended = ended.Error()
	}
	return s
}
