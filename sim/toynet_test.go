package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// toyNet wires a Server and a Client through a lossless link with a fixed
// one-way delay, in virtual time with 1 ms resolution. It is the
// in-package test bed; the harness in harness_test.go adds loss and
// jitter and plays the arena.
type toyNet struct {
	t      *testing.T
	now    time.Time
	srv    *Server
	cli    *Client
	oneWay time.Duration
	frame  time.Duration
	next   time.Time // next client frame
	input  SampleFunc

	toServer []toyPacket
	toClient []toyPacket
	// acks the server sent for player 1, by server tick: its input age.
	ages map[uint32]int16
}

type toyPacket struct {
	at       time.Time
	hdr      proto.Header
	frames   []byte
	snap     deltacomp.Snapshot
	acks     []proto.InputAckFrame
	controls []proto.ControlFrame
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func newToyNet(t *testing.T, game Game, oneWay time.Duration, cfg ClientConfig, players ...uint16) *toyNet {
	t.Helper()
	srv, err := NewServer(game, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	n := &toyNet{t: t, now: epoch, srv: srv, oneWay: oneWay, frame: 8 * time.Millisecond, ages: map[uint32]int16{}}
	srv.Start(n.now, 0)
	for _, p := range players {
		if _, err := srv.Join(p); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Players == nil {
		cfg.Players = players[:1]
	}
	n.cli, err = NewClient(game.Clone(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.cli.Start(n.now.Add(oneWay), srv.Tick(), 2*oneWay)
	n.next = n.now.Add(oneWay)
	return n
}

// run advances virtual time by d.
func (n *toyNet) run(d time.Duration) {
	end := n.now.Add(d)
	for n.now.Before(end) {
		n.now = n.now.Add(time.Millisecond)
		n.deliver()
		for range n.srv.Due(n.now) {
			n.srv.Step()
			n.serverSend()
		}
		if !n.now.Before(n.next) {
			n.next = n.next.Add(n.frame)
			n.clientFrame()
		}
	}
}

func (n *toyNet) deliver() {
	for len(n.toServer) > 0 && !n.toServer[0].at.After(n.now) {
		p := n.toServer[0]
		n.toServer = n.toServer[1:]
		for b := p.frames; len(b) > 0; {
			f, m, err := proto.ParseInputFrame(b)
			if err != nil {
				n.t.Fatalf("input frame: %v", err)
			}
			b = b[m:]
			if err := n.srv.ReceiveInput(n.now, &p.hdr, &f); err != nil {
				n.t.Fatalf("ReceiveInput: %v", err)
			}
		}
	}
	for len(n.toClient) > 0 && !n.toClient[0].at.After(n.now) {
		p := n.toClient[0]
		n.toClient = n.toClient[1:]
		n.clientReceive(&p)
	}
}

func (n *toyNet) clientReceive(p *toyPacket) {
	c := n.cli
	c.PacketReceived(n.now, p.hdr.Tick)
	if err := c.Authoritative(p.hdr.Tick, &p.snap); err != nil {
		n.t.Fatalf("Authoritative: %v", err)
	}
	for _, a := range p.acks {
		c.InputAck(n.now, a, p.hdr.Tick, 0)
	}
	for _, ctl := range p.controls {
		if ctl.Code == proto.ControlActionRejected {
			c.Rejected(ctl.Player, uint32(ctl.Arg))
		}
	}
}

func (n *toyNet) serverSend() {
	s := n.srv
	p := toyPacket{at: n.now.Add(n.oneWay), hdr: proto.Header{Tick: s.Tick(), InterpFrom: s.Tick(), InterpTo: s.Tick()}}
	snap := s.Snapshot()
	p.snap = deltacomp.Snapshot{Tick: snap.Tick, RecordSize: snap.RecordSize, IDs: slices.Clone(snap.IDs), Records: slices.Clone(snap.Records)}
	for _, pl := range s.Players(nil) {
		if a, ok := s.InputAck(pl); ok {
			p.acks = append(p.acks, a)
			if pl == n.cli.Players()[0] {
				n.ages[s.Tick()] = a.Age
			}
		}
	}
	for _, ctl := range s.Controls() {
		f := ctl.Frame
		f.Text = slices.Clone(f.Text)
		p.controls = append(p.controls, f)
	}
	n.toClient = append(n.toClient, p)
}

func (n *toyNet) clientFrame() {
	c := n.cli
	c.Advance(n.now, n.input)
	b := c.AppendInputFrames(nil, 1100, 0)
	if len(b) == 0 {
		return
	}
	v := c.View()
	n.toServer = append(n.toServer, toyPacket{
		at:     n.now.Add(n.oneWay),
		hdr:    proto.Header{Tick: c.Tick(), InterpFrom: v.From, InterpTo: v.To, Blend: v.Blend},
		frames: b,
	})
}

// agesSince returns the input ages (as durations; missing as -1 tick)
// the server reported for ticks after from.
func (n *toyNet) agesSince(from uint32) []time.Duration {
	var out []time.Duration
	for t := from + 1; int32(n.srv.Tick()-t) >= 0; t++ {
		a, ok := n.ages[t]
		if !ok {
			continue
		}
		d, ok := AgeDuration(a)
		if !ok {
			d = -n.srv.Period()
		}
		out = append(out, d)
	}
	return out
}
