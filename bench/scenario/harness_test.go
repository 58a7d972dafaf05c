package scenario_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
}

type packet struct {
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
	seq     uint16
	transit []packet
	bytes   int
	frames  int
	// sent[id] = last tick an entity was written (for starvation checks)
	waitingSince map[proto.NetworkID]int
	maxWait      int
}

type harness struct {
	tb      testing.TB
	sc      scenario.Scenario
	ring    *deltacomp.Ring
	world   *interest.World
	frame   scenario.Frame
	clients []*client
	net     netModel
	rng     *rand.Rand
	tick    int
	buf     []byte
	check   bool // verify replicas every tick (slow)
	pos     []interest.Vec3
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
		if h.net.Radius != 0 && len(h.frame.Pos) > 0 {
			// client ci views from entity ci's position (a player)
			c.sch.SetView(h.frame.Pos[ci%len(h.frame.Pos)])
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
			b, err := c.enc.AppendFrame(h.buf[:0], c.seq, sel)
			if err != nil {
				h.tb.Fatalf("tick %d: AppendFrame: %v", h.tick, err)
			}
			if len(b) > budget {
				h.tb.Fatalf("tick %d: frame of %d bytes over budget %d", h.tick, len(b), budget)
			}
			h.buf = b
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
		}
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
		if p.arrive == h.tick && !p.lost {
			f, n, err := proto.ParseSnapshotDeltaFrame(p.data)
			if err != nil || n != len(p.data) {
				h.tb.Fatalf("client %d: parse: %v", ci, err)
			}
			if err := c.rep.Apply(&f); err != nil && !errors.Is(err, deltacomp.ErrStale) {
				h.tb.Fatalf("client %d tick %d: Apply: %v", ci, h.tick, err)
			}
			if h.check {
				h.verify(ci, c)
			}
		}
		if p.notify == h.tick {
			if p.lost {
				c.enc.Lost(p.seq)
				c.sch.Lost(p.seq)
			} else {
				c.enc.Delivered(p.seq)
				c.sch.Delivered(p.seq)
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
	for i, id := range lat.IDs {
		j := -1
		for k, x := range st.IDs {
			if x == id {
				j = k
				break
			}
		}
		if h.net.Radius != 0 {
			continue
		}
		if j < 0 {
			return errors.New("entity missing on client")
		}
		if !bytes.Equal(st.Record(j), lat.Record(i)) {
			return errors.New("entity differs on client")
		}
	}
	if h.net.Radius == 0 && st.Len() != lat.Len() {
		return errors.New("client holds removed entities")
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
