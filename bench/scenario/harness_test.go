package scenario_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// netModel is a simulated client: its link, counted in ticks, and what
// the server may send it. Each client's link is netem's Impairment, in
// the harness's virtual time (tick n is epoch + ticks(n)): see link.
type netModel struct {
	RTT      int     // round trip in ticks: each way is delayed RTT/2
	Jitter   int     // netem jitter of each way's delay, in ticks (reorders)
	Loss     float64 // share of server→client datagrams netem loses
	Budget   int     // bytes per snapshot frame; 0: lifted (several frames per tick until all is sent)
	Radius   float32 // interest radius, 0: everything relevant
	Capacity int     // bandwidth cap bytes/s, 0 none
	Skip     float64 // chance a client gets no packet in a tick
}

// ticks is the virtual time of n ticks at 60 Hz.
func ticks(n int) time.Duration { return time.Duration(n) * time.Second / 60 }

// link is the netem spec of one direction of the client's link: delay
// RTT/2 ± Jitter ticks, losing the given share of datagrams.
func (nm netModel) link(loss float64) netem.Spec {
	s := netem.Spec{Delay: ticks(nm.RTT) / 2, Jitter: ticks(nm.Jitter)}
	if loss > 0 {
		s.Loss = netem.Loss{Model: netem.LossRandom, Percent: 100 * loss}
	}
	return s
}

// ackTimeout is how long after sending a datagram the server judges it
// lost when no ack came back: each way takes less than delay + jitter,
// and each end reads its link once a tick.
func (nm netModel) ackTimeout() time.Duration {
	s := nm.link(0)
	return 2 * (s.Delay + s.Jitter + ticks(1))
}

// packet is a datagram the server sent and has not yet heard about. On
// the wire it is its id (8 bytes) and one frame; the client acks the id.
type packet struct {
	id      uint64
	sent    time.Time
	seq     uint16            // a delta's sequence number
	full    bool              // a full snapshot, on the reliable channel
	fullRev uint32            // its revision
	fullIDs []proto.NetworkID // its entities
}

type client struct {
	enc    *deltacomp.Encoder
	sch    *interest.Scheduler
	rep    *deltacomp.Replica
	codecs deltacomp.Codecs
	resync bool // the replica asked for a resync
	seq    uint16
	// The client's link: snapshot deltas go down (lossy), full
	// snapshots over rel, a reliable channel's view of the same link
	// (netem without loss or jitter: nothing lost, in order), and acks
	// come back up (without loss: every real packet acks the 32 before
	// it, so one lost ack rarely loses news).
	down, rel, up *netem.Impairment
	nextID        uint64
	transit       []packet // in send order
	lost          []proto.NetworkID
	bytes         int
	frames        int
	entries       int // entries (entities and removals) of its delta frames
	entryBytes    int // their bytes: the frames' data without the default baseline's age
	// sent[id] = last tick an entity was written (for starvation checks)
	waitingSince map[proto.NetworkID]int
	maxWait      int
}

type harness struct {
	tb        testing.TB
	seed      uint64
	sc        scenario.Scenario
	ring      *deltacomp.Ring
	world     *interest.World
	frame     scenario.Frame
	clients   []*client
	net       netModel
	rng       *rand.Rand
	tick      int
	buf       []byte
	check     bool // verify replicas every tick (slow)
	allowGaps bool // a replica may lose its state; it then asks for a resync
	codecs    deltacomp.Codecs
	resyncs   int
	// want, when set, returns the scenario's state at revision r (its
	// frame r−1): after every tick's arrivals each replica's state must
	// equal the state of the revision it applied last; statesChecked
	// counts them.
	want          func(rev uint32) *deltacomp.Snapshot
	statesChecked int
	// onFrame, when set, sees every delta frame written, for client ci.
	onFrame func(ci int, frame []byte)
	// timing of the server's per-client work (Prepare, Schedule,
	// AppendFrame, Delivered/Lost) when timeIt is set
	timeIt     bool
	clientTime time.Duration
	relevant   int // sum over ticks and clients of relevant entities
}

// newHarness is a server and clients replicating sc over links of nm,
// with the predictor pred: codec 5 (nil: codec 4).
func newHarness(tb testing.TB, sc scenario.Scenario, nm netModel, clients int, seed uint64, pred *deltacomp.Predictor) *harness {
	h := &harness{tb: tb, seed: seed, sc: sc, net: nm, rng: rand.New(rand.NewPCG(seed, 7)),
		ring:  deltacomp.NewRing(deltacomp.RingConfig{Predictor: pred}),
		world: interest.NewWorld(interest.WorldConfig{CellSize: 16, Kinds: []interest.Kind{scenario.KindPlayer: {Weight: 4}}}),
	}
	for c := 0; c < clients; c++ {
		rep, err := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: sc.RecordSize(), Predictor: pred})
		if err != nil {
			tb.Fatal(err)
		}
		h.clients = append(h.clients, &client{
			enc: deltacomp.NewEncoder(h.ring, deltacomp.EncoderConfig{}),
			sch: interest.NewScheduler(interest.SchedulerConfig{Radius: nm.Radius, BandwidthCap: nm.Capacity}),
			rep: rep, seq: uint16(c * 1000), waitingSince: map[proto.NetworkID]int{},
			down: h.newLink(c, 0, nm.link(nm.Loss)),
			rel:  h.newLink(c, 1, netem.Spec{Delay: nm.link(0).Delay}),
			up:   h.newLink(c, 2, nm.link(0)),
		})
	}
	return h
}

// newLink is direction dir of client c's link, seeded from the harness.
func (h *harness) newLink(c, dir int, spec netem.Spec) *netem.Impairment {
	return netem.NewImpairment(spec, h.seed<<16|uint64(c)<<2|uint64(dir))
}

// heal ends losses and skipped ticks. Each client gets a lossless link
// down; what was in flight on the old one is lost with it.
func (h *harness) heal() {
	h.net.Loss, h.net.Skip = 0, 0
	for ci, c := range h.clients {
		c.down = h.newLink(ci, 0, h.net.link(0))
	}
}

var epoch = time.Unix(1_700_000_000, 0)

// now is the virtual time of the current tick.
func (h *harness) now() time.Time { return epoch.Add(ticks(h.tick)) }

// send puts frame on link as datagram p.id + frame and keeps p until it
// is acknowledged or judged lost.
func (h *harness) send(c *client, link *netem.Impairment, p packet, frame []byte) {
	p.id, p.sent = c.nextID, h.now()
	c.nextID++
	d := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(frame)), p.id)
	link.Enqueue(p.sent, netem.Packet{Data: append(d, frame...)})
	c.transit = append(c.transit, p)
}

// step runs one server tick: notifications, arrivals, push, one or more
// packets per client. It returns false when the scenario ended.
func (h *harness) step() bool {
	for ci, c := range h.clients {
		h.deliver(ci, c)
	}
	if !h.sc.Next(&h.frame) {
		return false
	}
	if _, err := h.ring.Push(&h.frame.Snap); err != nil {
		h.tb.Fatal(err)
	}
	w := h.world
	w.Begin(uint32(h.tick))
	for i, id := range h.frame.Snap.IDs {
		w.Add(id, h.frame.Pos[i], h.frame.Kind[i])
	}
	w.End(h.ring.Changed())
	now := h.now()
	for ci, c := range h.clients {
		if c.resync {
			c.resync = false
			h.sendFull(c, h.fullCodec(), proto.CauseResync)
		}
		if h.net.Skip > 0 && h.rng.Float64() < h.net.Skip {
			c.sch.Update(w) // no packet, but the tick's changes count
			continue
		}
		if h.net.Radius != 0 && len(h.frame.Pos) > 0 {
			// client ci views from entity ci's position (a player)
			c.sch.SetView(h.frame.Pos[ci%len(h.frame.Pos)])
		}
		var t0 time.Time
		if h.timeIt {
			t0 = time.Now()
		}
		for k := 0; ; k++ {
			budget := h.net.Budget
			if budget == 0 {
				budget = proto.SnapshotDeltaHeaderSize + proto.MaxPacketSizeLimit
			}
			c.enc.Prepare()
			sel, ok := c.sch.Schedule(now, w, budget, c.enc)
			if !ok {
				break
			}
			want := c.enc.FixedSize()
			prev := -1
			for _, i := range sel {
				body := c.enc.BodySize(int(i))
				if body == 0 {
					body = c.enc.ConfirmSize(int(i)) // a confirmation
				}
				want += body + c.enc.LinkSize(prev, int(i))
				prev = int(i)
			}
			b, err := c.enc.AppendFrame(h.buf[:0], c.seq, sel)
			if err != nil {
				h.tb.Fatalf("tick %d: AppendFrame: %v", h.tick, err)
			}
			// The frame is exactly the size the scheduler packed (less
			// when removals shorten the id gaps of their neighbours).
			if len(b) > want || (c.enc.PendingRemovals() == 0 && len(b) != want) {
				h.tb.Fatalf("tick %d: frame of %d bytes, sized %d", h.tick, len(b), want)
			}
			if len(b) > budget {
				h.tb.Fatalf("tick %d: frame of %d bytes over budget %d", h.tick, len(b), budget)
			}
			h.buf = b
			if h.timeIt {
				h.clientTime += time.Since(t0)
			}
			c.bytes += len(b)
			c.frames++
			c.countEntries(b)
			if h.onFrame != nil {
				h.onFrame(ci, b)
			}
			h.send(c, c.down, packet{seq: c.seq}, b)
			c.seq++
			for _, i := range sel {
				id := w.ID(int(i))
				if since, ok := c.waitingSince[id]; ok {
					c.maxWait = max(c.maxWait, h.tick-since)
					delete(c.waitingSince, id)
				}
			}
			if h.net.Budget != 0 || c.sch.Pending() == 0 || k > 64 {
				break
			}
			if h.timeIt {
				t0 = time.Now()
			}
		}
		h.relevant += c.sch.Relevant()
		// Relevant changed entities now waiting (starvation tracking).
		if h.check {
			for i := 0; i < w.Len(); i++ {
				if c.sch.Priority(i) > 0 {
					if _, ok := c.waitingSince[w.ID(i)]; !ok {
						c.waitingSince[w.ID(i)] = h.tick
					}
				}
			}
		}
	}
	h.tick++
	return true
}

// deliver processes the datagrams and acks due at this tick: the client
// applies each datagram's frame and acks it; the server hears Delivered
// for each ack and Lost for each delta whose ack is overdue.
func (h *harness) deliver(ci int, c *client) {
	now := h.now()
	arrived := false
	for _, link := range [...]*netem.Impairment{c.down, c.rel} {
		for d, ok := link.Dequeue(now); ok; d, ok = link.Dequeue(now) {
			h.receive(ci, c, d.Data[8:])
			c.up.Enqueue(now, netem.Packet{Data: d.Data[:8]})
			arrived = true
		}
	}
	if arrived && h.want != nil {
		h.checkState(ci, c)
	}
	var t0 time.Time
	if h.timeIt {
		t0 = time.Now()
	}
	for a, ok := c.up.Dequeue(now); ok; a, ok = c.up.Dequeue(now) {
		id := binary.LittleEndian.Uint64(a.Data)
		i := slices.IndexFunc(c.transit, func(p packet) bool { return p.id == id })
		if i < 0 {
			h.tb.Fatalf("client %d: ack of unknown datagram %d", ci, id)
		}
		p := c.transit[i]
		c.transit = slices.Delete(c.transit, i, i+1)
		if p.full {
			c.enc.FullDelivered(p.fullRev, p.fullIDs)
		} else {
			c.enc.Delivered(p.seq)
		}
	}
	timeout := h.net.ackTimeout()
	for len(c.transit) > 0 && now.Sub(c.transit[0].sent) >= timeout {
		p := c.transit[0]
		c.transit = c.transit[1:]
		if p.full {
			h.tb.Fatalf("client %d: full snapshot %d lost on the reliable channel", ci, p.fullRev)
		}
		ids, known := c.enc.Lost(p.seq, c.lost[:0])
		if known {
			c.sch.Lost(ids)
		} else {
			c.sch.LostUnknown()
		}
		c.lost = ids[:0]
	}
	if h.timeIt {
		h.clientTime += time.Since(t0)
	}
}

// receive applies one frame to client ci's replica.
func (h *harness) receive(ci int, c *client, frame []byte) {
	if t, _ := proto.PeekFrameType(frame); t == proto.FrameFullSnapshot {
		f, n, err := proto.ParseFullSnapshotFrame(frame)
		if err != nil || n != len(frame) {
			h.tb.Fatalf("client %d: parse full: %v", ci, err)
		}
		if err := c.rep.ApplyFull(&f, &c.codecs); err != nil {
			h.tb.Fatalf("client %d: ApplyFull: %v", ci, err)
		}
	} else {
		f, n, err := proto.ParseSnapshotDeltaFrame(frame)
		if err != nil || n != len(frame) {
			h.tb.Fatalf("client %d: parse: %v", ci, err)
		}
		err = c.rep.Apply(&f)
		if errors.Is(err, deltacomp.ErrBaselineMissing) && h.allowGaps {
			c.resync = true
			err = nil
		}
		if err != nil && !errors.Is(err, deltacomp.ErrStale) {
			h.tb.Fatalf("client %d tick %d: Apply: %v", ci, h.tick, err)
		}
	}
	if h.check {
		h.verify(ci, c)
	}
}

// verify checks every entity the replica holds against the server's
// record at the revision the replica's value came from.
func (h *harness) verify(ci int, c *client) {
	st := c.rep.State()
	lat := h.ring.Latest()
	for i, id := range st.IDs {
		rev := c.rep.EntityRevision(i)
		j := h.ring.Index(id)
		if j < 0 {
			// Removed on the server; the removal may still be in flight.
			continue
		}
		patch, ok := h.ring.Patch(rev, j)
		if !ok {
			continue // revision left the window, or a re-spawned id
		}
		want := bytes.Clone(lat.Record(j))
		for k := range want {
			want[k] ^= patch[k]
		}
		if !bytes.Equal(st.Record(i), want) {
			h.tb.Fatalf("client %d tick %d: entity %d at rev %d: got %x want %x", ci, h.tick, id, rev, st.Record(i), want)
		}
	}
}

// checkState checks client ci's whole state against the scenario's frame
// of the revision it applied last.
func (h *harness) checkState(ci int, c *client) {
	rev := c.rep.Revision()
	st, want := c.rep.State(), h.want(rev)
	if want == nil {
		h.tb.Fatalf("client %d tick %d: replica at revision %d, which the scenario lacks", ci, h.tick, rev)
	}
	if !slices.Equal(st.IDs, want.IDs) || !bytes.Equal(st.Records, want.Records) {
		h.tb.Fatalf("client %d tick %d: state at revision %d differs from the scenario's", ci, h.tick, rev)
	}
	h.statesChecked++
}

// countEntries adds a delta frame's entries and their bytes to c's.
func (c *client) countEntries(frame []byte) {
	f, _, err := proto.ParseSnapshotDeltaFrame(frame)
	if err != nil {
		return
	}
	_, n := binary.Uvarint(f.Data) // the default baseline's age
	c.entries += int(f.Count)
	c.entryBytes += len(f.Data) - n
}

// settle runs ticks without loss until nothing is in flight, then checks
// that each client holds exactly the server's relevant state.
func (h *harness) converged(ci int) error {
	c := h.clients[ci]
	st := c.rep.State()
	lat := h.ring.Latest()
	view := h.frame.Pos[ci%len(h.frame.Pos)]
	held := 0
	for i, id := range lat.IDs {
		if r := h.net.Radius; r != 0 {
			p := h.frame.Pos[i]
			dx, dy := p.X-view.X, p.Y-view.Y
			if dx*dx+dy*dy > r*r {
				continue
			}
		}
		j, ok := slices.BinarySearch(st.IDs, id)
		if !ok {
			return fmt.Errorf("entity %d missing on client", id)
		}
		if !bytes.Equal(st.Record(j), lat.Record(i)) {
			return fmt.Errorf("entity %d differs on client: %x, server %x", id, st.Record(j), lat.Record(i))
		}
		held++
	}
	for _, id := range st.IDs {
		if h.ring.Index(id) < 0 {
			return fmt.Errorf("client holds removed entity %d", id)
		}
	}
	if held == 0 && lat.Len() > 0 && h.net.Radius == 0 {
		return errors.New("nothing held")
	}
	return nil
}

func kbps(bytes, ticks int) float64 { return float64(bytes) * 8 * 60 / 1000 / float64(ticks) }

// drain runs the network without new ticks until every datagram is
// acknowledged or judged lost.
func (h *harness) drain() {
	for k := 0; slices.ContainsFunc(h.clients, func(c *client) bool { return len(c.transit) > 0 }); k++ {
		if time.Duration(k)*ticks(1) > h.net.ackTimeout()+ticks(1) {
			h.tb.Fatalf("still in transit after %d ticks of draining", k)
		}
		for ci, c := range h.clients {
			h.deliver(ci, c)
		}
		h.tick++
	}
}

var fullCodecs = []proto.Codec{proto.CodecNone, proto.CodecLZ4, proto.CodecZstd, proto.CodecS2, proto.CodecXORRLE}

func (h *harness) fullCodec() proto.Codec { return fullCodecs[h.rng.IntN(len(fullCodecs))] }

// sendFull answers a resync: the encoder forgets the client's baselines and
// the latest state goes in a full snapshot over the (simulated) reliable
// channel; when it is delivered the encoder takes it as baseline.
func (h *harness) sendFull(c *client, codec proto.Codec, cause proto.SnapshotCause) {
	h.resyncs++
	c.enc.Reset()
	lat := h.ring.Latest()
	b, err := h.codecs.AppendFullSnapshot(nil, lat, cause, h.ring.Revision(), codec)
	if err != nil {
		h.tb.Fatalf("AppendFullSnapshot(%v): %v", codec, err)
	}
	h.send(c, c.rel, packet{full: true, fullRev: h.ring.Revision(), fullIDs: append([]proto.NetworkID(nil), lat.IDs...)}, b)
}
