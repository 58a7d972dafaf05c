package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// Harness is the engine tests' one simulated network: a Server and
// Clients, each client on its own path of two netem Impairments (up and
// down, seeded), in virtual time with 1 ms resolution. Datagrams are
// bytes: a session header (proto.Header, type Data) and frames, input
// frames up, input acks and controls down. The snapshot a down packet
// stands for is not encoded (deltas are deltacomp's and the root's
// business): the packet names it by its header tick and the client gets
// the server's snapshot of that tick, which is what its replica holds
// after applying a delta. A datagram the path corrupted is dropped, as
// the session's AEAD would.
//
// It is exported from a test file so that the package's external tests,
// which play the arena (an import cycle for package sim), share it; the
// internal tests also reach into its engines.
type Harness struct {
	Server *Server
	// Bots are server-side players whose inputs go straight into the
	// server (no path): Bots[player](tick) is their input for tick.
	Bots map[uint16]func(tick uint32) []byte

	t       testing.TB
	now     time.Time
	clients []*HarnessClient
	sent    [sentSnapshots]deltacomp.Snapshot // by tick % sentSnapshots
	// ages are the input ages the server reported to client 0's player,
	// by server tick (missing: -1 tick).
	ages map[uint32]time.Duration
	buf  []byte
}

// sentSnapshots is how many ticks of sent snapshots the harness keeps for
// packets in flight: 4 s at 60 Hz.
const sentSnapshots = 256

// HarnessClient is one Client of a Harness and its path.
type HarnessClient struct {
	Client *Client

	player   uint16
	up, down *link
	input    SampleFunc
	frame    time.Duration // between Advance calls (8 ms)
	next     time.Time
	buf      []byte
}

// link is one direction of a client's path.
type link struct {
	spec netem.Spec
	seed uint64
	q    *netem.Impairment
	// old are the impairments change replaced, until they drain.
	old     []*netem.Impairment
	changes uint64
}

func newLink(spec netem.Spec, seed uint64) *link {
	return &link{spec: spec, seed: seed, q: netem.NewImpairment(spec, seed)}
}

// change gives datagrams sent from now on spec, as `tc qdisc change`
// does; those already queued keep their times.
func (l *link) change(spec netem.Spec) {
	l.old = append(l.old, l.q)
	l.changes++
	l.spec = spec
	l.q = netem.NewImpairment(spec, l.seed+l.changes<<32)
}

func (l *link) send(now time.Time, b []byte) {
	l.q.Enqueue(now, netem.Packet{Data: append([]byte(nil), b...)})
}

// receive returns the next datagram due at now.
func (l *link) receive(now time.Time) ([]byte, bool) {
	l.old = slices.DeleteFunc(l.old, func(q *netem.Impairment) bool { return q.Len() == 0 })
	for _, q := range l.old {
		if b, ok := dequeue(q, now); ok {
			return b, true
		}
	}
	return dequeue(l.q, now)
}

// dequeue returns q's next datagram due at now, dropping corrupted ones.
func dequeue(q *netem.Impairment, now time.Time) ([]byte, bool) {
	for {
		p, ok := q.Dequeue(now)
		if !ok || !p.Corrupted {
			return p.Data, ok
		}
	}
}

// NewHarness starts a Server of game at tick 0 and joins players.
func NewHarness(t testing.TB, game Game, players ...uint16) *Harness {
	t.Helper()
	srv, err := NewServer(game, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{Server: srv, Bots: map[uint16]func(uint32) []byte{}, t: t, now: t0, ages: map[uint32]time.Duration{}}
	srv.Start(h.now, 0)
	for _, p := range players {
		if _, err := srv.Join(p); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// lossless is a harness of the test game with players, and a client for
// players[0] over a path of a fixed one-way delay.
func lossless(t *testing.T, oneWay time.Duration, cfg ClientConfig, players ...uint16) (*Harness, *HarnessClient) {
	t.Helper()
	h := NewHarness(t, &testGame{}, players...)
	return h, h.Connect(players[0], netem.Spec{Delay: oneWay}, 1, cfg, nil)
}

// Connect adds a client for player over path (both ways; the up link
// seeded with seed, the down link with seed+1) that samples input.
func (h *Harness) Connect(player uint16, path netem.Spec, seed uint64, cfg ClientConfig, input SampleFunc) *HarnessClient {
	h.t.Helper()
	cfg.Players = []uint16{player}
	cli, err := NewClient(h.Server.World().Clone(), cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	// The handshake: answered at the server's current tick, arriving one
	// down delay later, after a round trip.
	cli.Start(h.now.Add(path.Delay), h.Server.Tick(), 2*path.Delay)
	c := &HarnessClient{Client: cli, player: player, up: newLink(path, seed), down: newLink(path, seed+1),
		input: input, frame: 8 * time.Millisecond, next: h.now.Add(path.Delay)}
	h.clients = append(h.clients, c)
	return c
}

// SetPath changes the client's path both ways for the datagrams sent from
// now on.
func (c *HarnessClient) SetPath(path netem.Spec) {
	c.up.change(path)
	c.down.change(path)
}

// Run advances virtual time by d.
func (h *Harness) Run(d time.Duration) {
	end := h.now.Add(d)
	for h.now.Before(end) {
		h.now = h.now.Add(time.Millisecond)
		for _, c := range h.clients {
			for b, ok := c.up.receive(h.now); ok; b, ok = c.up.receive(h.now) {
				h.serverReceive(b)
			}
		}
		for _, c := range h.clients {
			for b, ok := c.down.receive(h.now); ok; b, ok = c.down.receive(h.now) {
				h.clientReceive(c, b)
			}
		}
		for range h.Server.Due(h.now) {
			next := h.Server.Tick() + 1
			for p, bot := range h.Bots {
				in := bot(next)
				f := proto.InputFrame{Player: p, Tick: next, Count: 1, Size: uint16(len(in)), Data: in}
				if err := h.Server.ReceiveInput(h.now, nil, &f); err != nil {
					h.t.Fatal(err)
				}
			}
			h.Server.Step()
			h.serverSend()
		}
		for _, c := range h.clients {
			if !h.now.Before(c.next) {
				c.next = c.next.Add(c.frame)
				h.clientFrame(c)
			}
		}
	}
}

// frames parses a datagram's header and returns its frames.
func (h *Harness) frames(b []byte) (proto.Header, proto.FrameReader) {
	hdr, n, err := proto.ParseHeader(b)
	if err != nil {
		h.t.Fatalf("datagram header: %v", err)
	}
	return hdr, proto.FrameReader{Payload: b[n:]}
}

func (h *Harness) serverReceive(b []byte) {
	hdr, r := h.frames(b)
	for r.Next() {
		f, _, err := proto.ParseInputFrame(r.Frame())
		if err != nil {
			h.t.Fatalf("input frame: %v", err)
		}
		if err := h.Server.ReceiveInput(h.now, &hdr, &f); err != nil {
			h.t.Fatalf("ReceiveInput: %v", err)
		}
	}
	if r.Err() != nil {
		h.t.Fatalf("client datagram: %v", r.Err())
	}
}

func (h *Harness) clientReceive(c *HarnessClient, b []byte) {
	hdr, r := h.frames(b)
	cli := c.Client
	cli.PacketReceived(h.now, hdr.Tick)
	cli.SnapshotReceived(h.now, hdr.Tick)
	snap := &h.sent[hdr.Tick%sentSnapshots]
	if snap.Tick != hdr.Tick {
		h.t.Fatalf("the snapshot of tick %d is no longer kept", hdr.Tick)
	}
	if err := cli.Authoritative(hdr.Tick, snap); err != nil {
		h.t.Fatalf("Authoritative: %v", err)
	}
	for r.Next() {
		switch r.Type() {
		case proto.FrameInputAck:
			a, _, _ := proto.ParseInputAckFrame(r.Frame())
			// The session's round-trip variation, were it measured.
			cli.InputAck(h.now, a, hdr.Tick, (c.up.spec.Jitter+c.down.spec.Jitter)/3)
		case proto.FrameControl:
			ctl, _, _ := proto.ParseControlFrame(r.Frame())
			if ctl.Code == proto.ControlActionRejected {
				cli.Rejected(ctl.Player, ctl.Tick)
			}
		default:
			h.t.Fatalf("unexpected %v frame", r.Type())
		}
	}
	if r.Err() != nil {
		h.t.Fatalf("server datagram: %v", r.Err())
	}
}

// serverSend keeps the new snapshot and sends each client a datagram for
// it: its player's input ack and the controls for it.
func (h *Harness) serverSend() {
	s := h.Server
	tick := s.Tick()
	src, dst := s.Snapshot(), &h.sent[tick%sentSnapshots]
	dst.Tick, dst.RecordSize = src.Tick, src.RecordSize
	dst.IDs, dst.Records = append(dst.IDs[:0], src.IDs...), append(dst.Records[:0], src.Records...)
	for i, c := range h.clients {
		hdr := proto.Header{Type: proto.PacketData, Tick: tick, InterpFrom: tick, InterpTo: tick}
		b := h.appendHeader(h.buf[:0], &hdr)
		if a, ok := s.InputAck(c.player); ok {
			if i == 0 {
				d, ok := AgeDuration(a.Age)
				if !ok {
					d = -s.Period()
				}
				h.ages[tick] = d
			}
			b, _ = a.Append(b)
		}
		for _, ctl := range s.Controls() {
			if ctl.To == c.player || ctl.To == 0 {
				var err error
				if b, err = ctl.Frame.Append(b); err != nil {
					h.t.Fatalf("control %+v: %v", ctl.Frame, err)
				}
			}
		}
		c.down.send(h.now, b)
		h.buf = b
	}
}

func (h *Harness) clientFrame(c *HarnessClient) {
	cli := c.Client
	cli.Advance(h.now, c.input)
	v := cli.View()
	hdr := proto.Header{Type: proto.PacketData, Tick: cli.Tick(), InterpFrom: v.From, InterpTo: v.To, Blend: v.Blend}
	c.buf = h.appendHeader(c.buf[:0], &hdr)
	frames := len(c.buf)
	c.buf = cli.AppendInputFrames(c.buf, 1100, c.up.spec.Loss.Percent/100)
	if len(c.buf) > frames {
		c.up.send(h.now, c.buf)
	}
}

func (h *Harness) appendHeader(b []byte, hdr *proto.Header) []byte {
	b, err := hdr.Append(b)
	if err != nil {
		h.t.Fatalf("header %+v: %v", hdr, err)
	}
	return b
}

// Ages are the input ages the server reported to client 0's player for
// server ticks (from, to], in tick order; a missing input counts as -1
// tick.
func (h *Harness) Ages(from, to uint32) []time.Duration {
	var out []time.Duration
	for t := from + 1; int32(to-t) >= 0; t++ {
		if a, ok := h.ages[t]; ok {
			out = append(out, a)
		}
	}
	return out
}
