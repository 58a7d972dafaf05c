package game

import (
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/netem"
)

// fieldArena is the arena with its records laid out by a
// deltacomp.Schema (fieldArenaSchema) instead of its own byte layout, so
// that a Predictor can extrapolate the position: its snapshots convert
// each record between the two layouts (a bijection). Its Schema carries
// pred (nil: none).
type fieldArena struct {
	*arena.Game
	pred *deltacomp.Predictor
	tmp  deltacomp.Snapshot
}

// fieldArenaSchema holds the arena's 16-byte record: the position's two
// 16-bit fields, then the other 12 bytes as they are (the arena's bytes 4
// to 15, read as fields of 8 bits).
var fieldArenaSchema = func() *deltacomp.Schema {
	f := []deltacomp.Field{{Name: "x", Bits: 16}, {Name: "y", Bits: 16}}
	for range arena.RecordSize - 4 {
		f = append(f, deltacomp.Field{Name: "b", Bits: 8})
	}
	s, err := deltacomp.NewSchema(f...)
	if err != nil {
		panic(err)
	}
	return s
}()

var fieldArenaPredictor = func() *deltacomp.Predictor {
	p, err := deltacomp.NewPredictor(fieldArenaSchema, "x", "y")
	if err != nil {
		panic(err)
	}
	return p
}()

func (g *fieldArena) Schema() sim.Schema {
	s := g.Game.Schema()
	s.Predictor = g.pred
	return s
}

func (g *fieldArena) Clone() sim.Game {
	return &fieldArena{Game: g.Game.Clone().(*arena.Game), pred: g.pred}
}

func (g *fieldArena) CopyFrom(src sim.Game) { g.Game.CopyFrom(src.(*fieldArena).Game) }

// toFields rewrites an arena record (x low, y low, x high, y high, then
// 12 bytes) into fieldArenaSchema's layout, in place.
func toFields(r []byte) {
	var vals [2 + arena.RecordSize - 4]uint32
	vals[0], vals[1] = uint32(r[0])|uint32(r[2])<<8, uint32(r[1])|uint32(r[3])<<8
	for i, b := range r[4:arena.RecordSize] {
		vals[2+i] = uint32(b)
	}
	fieldArenaSchema.Pack(r, vals[:])
}

// fromFields is toFields' inverse.
func fromFields(r []byte) {
	var vals [2 + arena.RecordSize - 4]uint32
	fieldArenaSchema.Unpack(vals[:], r)
	r[0], r[1], r[2], r[3] = byte(vals[0]), byte(vals[1]), byte(vals[0]>>8), byte(vals[1]>>8)
	for i := range arena.RecordSize - 4 {
		r[4+i] = byte(vals[2+i])
	}
}

func (g *fieldArena) WriteSnapshot(s *deltacomp.Snapshot) {
	n := s.Len()
	g.Game.WriteSnapshot(s)
	for i := n; i < s.Len(); i++ {
		toFields(s.Record(i))
	}
}

func (g *fieldArena) ReadSnapshot(s *deltacomp.Snapshot) error {
	g.tmp.CopyFrom(s)
	for i := range g.tmp.Len() {
		fromFields(g.tmp.Record(i))
	}
	return g.Game.ReadSnapshot(&g.tmp)
}

func TestFieldArenaLayout(t *testing.T) {
	var r, want [arena.RecordSize]byte
	for i := range r {
		r[i] = byte(37*i + 11)
	}
	want = r
	toFields(r[:])
	if got := fieldArenaSchema.Get(r[:], 0); got != uint32(want[0])|uint32(want[2])<<8 {
		t.Fatalf("x reads %#x", got)
	}
	fromFields(r[:])
	if r != want {
		t.Fatalf("round trip: %x, want %x", r, want)
	}
}

// TestSchemaPredictor: a game whose Schema carries a deltacomp.Predictor
// is sent in predicted deltas (codec 5) by the host and decoded by its
// clients: eight players and 40 NPCs over a 20 ms link with 4 % loss stay
// in sync (replicas equal to the server's states, no resync, no desync),
// and the server sends fewer bytes than for the same game and inputs
// without the predictor. A predictor of the wrong size is refused.
func TestSchemaPredictor(t *testing.T) {
	loss, err := netem.Parse("loss 4%")
	if err != nil {
		t.Fatal(err)
	}
	bytes := func(name string, newArena func(npcs int) Game) uint64 {
		var sent atomic.Uint64
		synctest.Test(t, func(t *testing.T) {
			r := newGameRigLink(t, Config{}, 20*time.Millisecond, func(pc net.PacketConn, seed uint64) net.PacketConn {
				pc = netem.Wrap(pc, netem.Config{Egress: loss, Seed: seed})
				if seed == 1 { // the server's socket
					return &countingConn{PacketConn: pc, n: &sent}
				}
				return pc
			})
			r.npcs = 40
			r.arena = newArena
			var cs []*tickwire.Client
			var gcs []*Client
			for i := range 8 {
				c, gc := r.dial(uint64(i+1), uint16(i+1), nil)
				cs, gcs = append(cs, c), append(gcs, gc)
			}
			time.Sleep(10 * time.Second)
			r.waitSynced("after 10 s", checksummed(10), gcs...)
			for i, gc := range gcs {
				if st := gc.Stats(); st.Resyncs != 0 || st.Desyncs != 0 || st.BadStates != 0 {
					t.Errorf("%s, client %d: %d resyncs %v, %d desyncs, %d bad states", name, i+1, st.Resyncs, st.ResyncCauses, st.Desyncs, st.BadStates)
				}
			}
			for _, c := range cs {
				c.Close()
			}
			r.close()
		})
		return sent.Load()
	}
	fields := func(pred *deltacomp.Predictor) func(int) Game {
		return func(npcs int) Game { return &fieldArena{Game: arena.NewGame(npcs), pred: pred} }
	}
	own := bytes("the arena's layout", nil)
	plain, predicted := bytes("fields", fields(nil)), bytes("fields, predicted", fields(fieldArenaPredictor))
	t.Logf("server bytes in 10 s: %d in the arena's own layout, %d in fields, %d in fields with the predictor (%.1f %%)",
		own, plain, predicted, 100*(float64(predicted)/float64(plain)-1))
	if predicted >= plain {
		t.Errorf("the predictor sent %d bytes, no fewer than %d without it", predicted, plain)
	}

	short, err := deltacomp.NewSchema(deltacomp.Field{Name: "x", Bits: 16})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := deltacomp.NewPredictor(short, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewClient(&fieldArena{Game: arena.NewGame(0), pred: bad}, randomInputs(1), sim.ClientConfig{}); err == nil {
		t.Error("a client took a predictor of another record size")
	}
}

// countingConn counts the bytes written through it.
type countingConn struct {
	net.PacketConn
	n *atomic.Uint64
}

func (c *countingConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.n.Add(uint64(len(b)))
	return c.PacketConn.WriteTo(b, addr)
}
