package replay

import (
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// ClientRecorder records a state-sync client (a sim.Client, as
// game.Client runs it): its players' inputs as sampled; for each
// authoritative state, the client's own entities in the world its game
// code stepped one tick from it (the only state a state-sync client
// computes itself, which tickwire-replay -bisect compares with the
// server's); a confirmed state every Config.KeyEvery ticks; the
// checksums it checked, and what happened (events). Call its methods
// from the client's loop.
type ClientRecorder struct {
	w          *Writer
	rate       int
	inputSize  int
	recordSize int
	snap       deltacomp.Snapshot
	key        uint32
	hasKey     bool
}

// NewClientRecorder starts recording on w a client of game gameID (game
// is a world of it, for the schema) playing players at tickRate.
func NewClientRecorder(w *Writer, gameID uint64, game sim.Game, players []uint16, tickRate int) (*ClientRecorder, error) {
	schema := game.Schema()
	h := Header{Role: RoleClient, GameID: gameID, TickRate: tickRate, Schema: schema, Players: players}
	if err := w.begin(&h); err != nil {
		return nil, err
	}
	return &ClientRecorder{w: w, rate: tickRate, inputSize: schema.InputSize, recordSize: schema.RecordSize}, nil
}

// Input records player's input for tick, as sampled.
func (c *ClientRecorder) Input(tick uint32, player uint16, input []byte) {
	if len(input) != c.inputSize {
		return
	}
	at := c.w.open(RecordInput, tick)
	c.w.buf = le.AppendUint16(c.w.buf, player)
	c.w.buf = append(c.w.buf, input...)
	c.w.end(at)
}

// FirstStep records the entities own selects of world, the client's
// game stepped to tick from the authoritative state of tick−1
// (sim.ClientConfig.FirstStep).
func (c *ClientRecorder) FirstStep(tick uint32, world sim.Game, own func(proto.NetworkID) bool) {
	c.snap.Reset(tick, c.recordSize)
	world.WriteSnapshot(&c.snap)
	at := c.w.open(RecordPredicted, tick)
	c.w.buf = appendEntities(c.w.buf, &c.snap, own)
	c.w.end(at)
}

// Confirmed takes the client's new confirmed state (its replica of the
// server's, of s.Tick) and records it every Config.KeyEvery ticks.
func (c *ClientRecorder) Confirmed(s *deltacomp.Snapshot) {
	if due, _ := c.w.keyDue(s.Tick, c.key, c.hasKey); !due {
		return
	}
	at := c.w.open(RecordConfirmed, s.Tick)
	c.w.buf = appendEntities(c.w.buf, s, nil)
	c.w.end(at)
	c.key, c.hasKey = s.Tick, true
}

// Check records the server's checksum for tick and whether the
// client's replica matched it.
func (c *ClientRecorder) Check(tick uint32, sum uint64, ok bool) {
	at := c.w.open(RecordCheck, tick)
	c.w.buf = le.AppendUint64(c.w.buf, sum)
	var v byte
	if ok {
		v = 1
	}
	c.w.buf = append(c.w.buf, v)
	c.w.end(at)
}

// Event records e at tick.
func (c *ClientRecorder) Event(tick uint32, e Event) { c.w.event(tick, &e) }

// Frame ends a client frame at the predicted tick: the records go to
// the Writer's goroutine a second of ticks at a time.
func (c *ClientRecorder) Frame(tick uint32) { c.w.tickDone(tick, c.rate) }

// Close ends the recording and closes its Writer.
func (c *ClientRecorder) Close() error { return c.w.Close() }
