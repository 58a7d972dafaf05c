package peerhost

import (
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// StandbyFeed streams one hosted game to its warm standby (host
// migration, docs/MIGRATION.md) over the standby's connection, on the
// reliable channel: a standby state frame (the engine state with the
// snapshots of the state's tick and of the ticks before it, for lag
// compensation) when the standby is set and every AnchorEvery, and a
// standby step frame after every step. Hang Stepped on game.Config.Stepped;
// call every method from the server's loop.
type StandbyFeed struct {
	// Game is the id of the game fed.
	Game uint64
	// Epoch is the host's epoch the frames carry (1 for the lobby's host).
	Epoch migrate.Epoch
	// AnchorEvery is how often a new standby state goes out (default 2 s).
	AnchorEvery time.Duration
	// Past is how many ticks of snapshots before the state a standby
	// state carries (default: MaxRewind's worth plus 4 ticks at the
	// engine's rate).
	Past int
	// Codec compresses the state's snapshots (default zstd).
	Codec proto.Codec

	standby   *tickwire.Conn
	needState bool
	lastState uint32
	rec       sim.StepRecord
	frame     proto.StandbyStepFrame
	buf       []byte
	past      []*deltacomp.Snapshot // ring of copies, by tick % len
	order     []*deltacomp.Snapshot
	codecs    deltacomp.Codecs
	stats     StandbyFeedStats
}

// StandbyFeedStats count what a feed sent.
type StandbyFeedStats struct {
	States, Steps         uint64
	StateBytes, StepBytes uint64
	SendErrors            uint64 // frames the connection refused (queue full, closed)
}

// Stats returns the counters.
func (f *StandbyFeed) Stats() StandbyFeedStats { return f.stats }

// SetStandby makes c (a connection of the game) the standby: it gets a
// standby state after the next step, then every step. nil stops the
// feed.
func (f *StandbyFeed) SetStandby(c *tickwire.Conn) {
	f.standby, f.needState = c, c != nil
}

func (f *StandbyFeed) defaults(eng *sim.Server) {
	if f.AnchorEvery == 0 {
		f.AnchorEvery = 2 * time.Second
	}
	if f.Past == 0 {
		f.Past = int(200*time.Millisecond/eng.Period()) + 4
	}
	if f.Codec == 0 {
		f.Codec = proto.CodecZstd
	}
	if len(f.past) != f.Past {
		f.past = make([]*deltacomp.Snapshot, f.Past)
		for i := range f.past {
			f.past[i] = new(deltacomp.Snapshot)
		}
	}
}

// Stepped records the step eng just ran (for game gameID; other games
// are ignored) and sends it to the standby, preceded by a standby state
// when one is due. It keeps copies of the last Past snapshots.
func (f *StandbyFeed) Stepped(gameID uint64, eng *sim.Server) {
	if gameID != f.Game {
		return
	}
	if f.past == nil {
		f.defaults(eng)
	}
	tick := eng.Tick()
	if f.standby != nil && !f.standby.Closed() {
		anchor := time.Duration(tick-f.lastState) * eng.Period()
		if f.needState || anchor >= f.AnchorEvery {
			f.sendState(eng)
		} else {
			eng.Record(&f.rec)
			migrate.StepFrame(&f.frame, f.Epoch, eng.World().Schema().InputSize, &f.rec)
			f.send(&f.frame, &f.stats.Steps, &f.stats.StepBytes)
		}
	}
	f.past[int(tick)%len(f.past)].CopyFrom(eng.Snapshot())
}

// sendState sends the state of eng's last step with the snapshots held
// of the ticks before it.
func (f *StandbyFeed) sendState(eng *sim.Server) {
	tick := eng.Tick()
	f.order = f.order[:0]
	for d := len(f.past); d >= 1; d-- {
		if s := f.past[int(tick-uint32(d))%len(f.past)]; s.Tick == tick-uint32(d) && s.RecordSize != 0 {
			f.order = append(f.order, s)
		}
	}
	b, err := migrate.AppendStateFrame(f.buf[:0], &f.codecs, f.Codec, f.Epoch, eng, f.order)
	if err != nil {
		f.stats.SendErrors++
		return
	}
	f.buf = b
	if f.standby.SendFrame(b) != nil {
		f.stats.SendErrors++
		return
	}
	f.stats.States++
	f.stats.StateBytes += uint64(len(b))
	f.needState, f.lastState = false, tick
}

func (f *StandbyFeed) send(fr *proto.StandbyStepFrame, count, bytes *uint64) {
	b, err := fr.Append(f.buf[:0])
	if err != nil {
		f.stats.SendErrors++
		return
	}
	f.buf = b
	if f.standby.SendFrame(b) != nil {
		// A lost step breaks the standby's chain: start again from a state.
		f.stats.SendErrors++
		f.needState = true
		return
	}
	*count++
	*bytes += uint64(len(b))
}
