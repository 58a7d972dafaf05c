package scenario_test

import (
	"bytes"
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
)

// netModel is a simulated client link in ticks.
type netModel struct {
	RTT      int     // ticks from send to the delivered/lost notification
	Jitter   int     // extra random ticks of one-way delay (reorders)
	Loss     float64 // chance a packet is lost
	Budget   int     // bytes per snapshot frame; 0: lifted (several frames per tick until all is sent)
	Radius   float32 // interest radius, 0: everything relevant
	Capacity int     // bandwidth cap bytes/s, 0 none
	Skip     float64 // chance a client gets no packet in a tick
}

type packet struct {
	full     bool              // a reliable full snapshot (never lost)
	fullRev  uint32            // its revision
	fullIDs  []proto.NetworkID // its entities
	seq      uint16
	arrive   int
	notify   int
	lost     bool
	data     []byte
	frameLen int
}

type client struct {
	enc     *deltacomp.Encoder
	sch     *interest.Scheduler
	rep     *deltacomp.Replica
	codecs  deltacomp.Codecs
	resync  bool // the replica asked for a resync
	seq     uint16
	transit []packet
	bytes   int
	frames  int
	// sent[id] = last tick an entity was written (for starvation checks)
	waitingSince map[proto.NetworkID]int
	maxWait      int
}

type harness struct {
	tb        testing.TB
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
	// timing of the server's per-client work (Prepare, Schedule,
	// AppendFrame, Delivered/Lost) when timeIt is set
	timeIt     bool
	clientTime time.Duration
	relevant   int // sum over ticks and clients of relevant entities
}

func newHarness(tb testing.TB, sc scenario.Scenario, nm netModel, clients int, seed uint64) *harness {
	h := &harness{tb: tb, sc: sc, net: nm, rng: rand.New(rand.NewPCG(seed, 7)),
		ring:  deltacomp.NewRing(deltacomp.RingConfig{}),
		world: interest.NewWorld(interest.WorldConfig{CellSize: 16, Kinds: []interest.Kind{scenario.KindPlayer: {Weight: 4}}}),
	}
	for c := 0; c < clients; c++ {
		rep, err := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: sc.RecordSize()})
		if err != nil {
			tb.Fatal(err)
		}
		h.clients = append(h.clients, &client{
			enc: deltacomp.NewEncoder(h.ring, deltacomp.EncoderConfig{}),
			sch: interest.NewScheduler(interest.SchedulerConfig{Radius: nm.Radius, BandwidthCap: nm.Capacity}),
			rep: rep, seq: uint16(c * 1000), waitingSince: map[proto.NetworkID]int{},
		})
	}
	return h
}

var epoch = time.Unix(1_700_000_000, 0)

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
	now := epoch.Add(time.Duration(h.tick) * time.Second / 60)
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
			sel, ok := c.sch.Schedule(c.seq, now, w, budget, c.enc)
			if !ok {
				break
			}
			want := c.enc.FixedSize()
			prev := -1
			for _, i := range sel {
				want += c.enc.BodySize(int(i)) + c.enc.LinkSize(prev, int(i))
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
			p := packet{seq: c.seq, arrive: h.tick + h.net.RTT/2, notify: h.tick + h.net.RTT, data: bytes.Clone(b), frameLen: len(b)}
			if h.net.Jitter > 0 {
				p.arrive += h.rng.IntN(h.net.Jitter + 1)
				p.notify = max(p.notify, p.arrive+h.net.RTT/2)
			}
			p.lost = h.rng.Float64() < h.net.Loss
			c.transit = append(c.transit, p)
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

// deliver processes arrivals and notifications due at this tick.
func (h *harness) deliver(ci int, c *client) {
	keep := c.transit[:0]
	for _, p := range c.transit {
		if p.arrive == h.tick && p.full {
			f, n, err := proto.ParseFullSnapshotFrame(p.data)
			if err != nil || n != len(p.data) {
				h.tb.Fatalf("client %d: parse full: %v", ci, err)
			}
			if err := c.rep.ApplyFull(&f, &c.codecs); err != nil {
				h.tb.Fatalf("client %d: ApplyFull: %v", ci, err)
			}
			if h.check {
				h.verify(ci, c)
			}
		} else if p.arrive == h.tick && !p.lost {
			f, n, err := proto.ParseSnapshotDeltaFrame(p.data)
			if err != nil || n != len(p.data) {
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
			if h.check {
				h.verify(ci, c)
			}
		}
		if p.notify == h.tick {
			var t0 time.Time
			if h.timeIt {
				t0 = time.Now()
			}
			if p.full {
				c.enc.FullDelivered(p.fullRev, p.fullIDs)
			} else if p.lost {
				c.enc.Lost(p.seq)
				c.sch.Lost(p.seq)
			} else {
				c.enc.Delivered(p.seq)
				c.sch.Delivered(p.seq)
			}
			if h.timeIt {
				h.clientTime += time.Since(t0)
			}
			continue
		}
		keep = append(keep, p)
	}
	c.transit = keep
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

// drain runs the network without new ticks until nothing is in transit.
func (h *harness) drain() {
	for k := 0; k < 4*h.net.RTT+h.net.Jitter+4; k++ {
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
	c.transit = append(c.transit, packet{full: true, fullRev: h.ring.Revision(), fullIDs: append([]proto.NetworkID(nil), lat.IDs...),
		arrive: h.tick + h.net.RTT/2, notify: h.tick + h.net.RTT, data: b})
}
