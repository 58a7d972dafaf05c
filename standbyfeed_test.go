package tickwire

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// standbyLayer is a player's warm standby as a client layer: it loads
// the host's standby states and replays its standby steps as they
// arrive (on the client's loop), and ignores the game's other frames.
type standbyLayer struct {
	sb     migrate.Standby
	codecs deltacomp.Codecs
	rec    sim.StepRecord
	states int
	errs   []error
}

func (l *standbyLayer) Attach(*Client, Accepted) (FrameHandler, error) { return l, nil }
func (l *standbyLayer) Delivered(uint64)                               {}
func (l *standbyLayer) Lost(uint64)                                    {}
func (l *standbyLayer) Ticks() Ticks                                   { return Ticks{} }
func (l *standbyLayer) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte {
	return b
}

func (l *standbyLayer) Frame(t proto.FrameType, b []byte, _ *PacketInfo) error {
	var err error
	switch t {
	case proto.FrameStandbyState:
		var f proto.StandbyStateFrame
		if f, _, err = proto.ParseStandbyStateFrame(b); err == nil {
			err = migrate.LoadStateFrame(&l.sb, &f, arena.NewGame(0), sim.ServerConfig{}, &l.codecs)
			l.states++
		}
	case proto.FrameStandbyStep:
		var f proto.StandbyStepFrame
		if f, _, err = proto.ParseStandbyStepFrame(b); err == nil {
			var e migrate.Epoch
			if e, err = migrate.StepRecordFromFrame(&l.rec, &f); err == nil {
				err = l.sb.Step(e, &l.rec)
			}
		}
	}
	if err != nil {
		l.errs = append(l.errs, err)
	}
	return nil
}

// TestStandbyFeedPromotes: in virtual time, a GameHost feeds a player's
// warm standby (StandbyFeed on GameConfig.Stepped, frames on the
// standby's reliable channel over a 15 ms link) while another player
// plays; the host's server then stops without notice. The standby,
// promoted, holds exactly the host's state at the last tick it received,
// which is within a few ticks of the host's last, and it runs on.
func TestStandbyFeedPromotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		feed := &StandbyFeed{Game: rigGame, Epoch: 1}
		r := newGameRigConfig(t, GameConfig{Stepped: feed.Stepped})
		c, _ := r.dial(1, 1, nil)
		defer c.Close()
		layer := &standbyLayer{}
		sc := r.dialLayer(2, 2, layer, nil)
		defer sc.Close()
		r.srv.Do(func() {
			for _, conn := range r.srv.conns {
				if conn.ClientID() == 2 {
					feed.SetStandby(conn)
				}
			}
		})
		time.Sleep(5 * time.Second)
		var (
			hostTick uint32
			st       StandbyFeedStats
		)
		r.srv.Do(func() { hostTick, st = r.host.Engine(rigGame).Tick(), feed.Stats() })
		r.close() // the host's server stops: no goodbye to anyone

		var (
			eng  *sim.Server
			err  error
			errs []error
			sbst migrate.StandbyStats
		)
		sc.Do(func() {
			errs, sbst = layer.errs, layer.sb.Stats()
			eng, err = layer.sb.Promote(time.Now())
		})
		if err != nil || len(errs) != 0 {
			t.Fatalf("standby: %v (frame errors %v)", err, errs)
		}
		t.Logf("feed %+v; standby %+v; host at tick %d, standby at %d", st, sbst, hostTick, eng.Tick())
		if st.States < 3 || st.Steps < 200 || st.SendErrors != 0 || sbst.ReplayErrors != 0 {
			t.Fatalf("feed %+v, standby %+v", st, sbst)
		}
		if lag := hostTick - eng.Tick(); lag > 6 {
			t.Fatalf("standby %d ticks behind the host when it stopped", lag)
		}
		var sv stateCopy
		var held bool
		// The rig's history is written on the server's loop, which has
		// ended: read it directly.
		sv, held = r.hist[eng.Tick()]
		snap := eng.Snapshot()
		if !held || !(stateCopy{snap.IDs, snap.Records}).equal(sv) {
			t.Fatalf("promoted state at tick %d differs from the host's", eng.Tick())
		}
		tick := eng.Tick()
		time.Sleep(100 * time.Millisecond)
		for n := eng.Due(time.Now()); n > 0; n = eng.Due(time.Now()) {
			for range n {
				eng.Step()
			}
		}
		if eng.Tick() < tick+5 || !slices.Equal(eng.Players(nil), []uint16{1, 2}) {
			t.Fatalf("promoted engine at tick %d with players %v after 100 ms", eng.Tick(), eng.Players(nil))
		}
	})
}
