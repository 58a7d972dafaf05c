package peerhost

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
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

func (l *standbyLayer) Attach(*tickwire.Client, tickwire.Accepted) (tickwire.FrameHandler, error) {
	return l, nil
}
func (l *standbyLayer) Ticks() tickwire.Ticks { return tickwire.Ticks{} }
func (l *standbyLayer) AppendFrames(b []byte, _ int, _ *tickwire.PacketInfo) []byte {
	return b
}

func (l *standbyLayer) Frame(t proto.FrameType, b []byte, _ *tickwire.PacketInfo) error {
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

// newFeedRig is a game rig whose host feeds a warm standby: player 1
// plays (client c), player 2 is the standby (client sc, layer).
func newFeedRig(t *testing.T) (*gameRig, *StandbyFeed, *standbyLayer, *tickwire.Client, *tickwire.Client) {
	feed := &StandbyFeed{Game: rigGame, Epoch: 1}
	r := newGameRigConfig(t, game.Config{Stepped: feed.Stepped})
	c, _ := r.dial(1, 1)
	layer := &standbyLayer{}
	sc := r.dialLayer(2, 2, layer)
	r.srv.Do(func() {
		r.srv.Each(func(conn *tickwire.Conn) {
			if conn.ClientID() == 2 {
				feed.SetStandby(conn)
			}
		})
	})
	return r, feed, layer, c, sc
}

// TestStandbyFeedPromotes: in virtual time, a game.Host feeds a player's
// warm standby (StandbyFeed on game.Config.Stepped, frames on the
// standby's reliable channel over a 15 ms link) while another player
// plays; the host's server then stops without notice. The standby,
// promoted, holds exactly the host's state at the last tick it received,
// which is within a few ticks of the host's last, and it runs on.
func TestStandbyFeedPromotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, feed, layer, c, sc := newFeedRig(t)
		defer c.Close()
		defer sc.Close()
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
		var sv testrig.State
		var held bool
		// The rig's history is written on the server's loop, which has
		// ended: read it directly.
		sv, held = r.hist[eng.Tick()]
		snap := eng.Snapshot()
		if !held || !(testrig.State{IDs: snap.IDs, Records: snap.Records}).Equal(sv) {
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

// TestMigrationResumesPlayer: in virtual time, the host feeds its
// standby and has minted the credentials for it; the host's server stops
// without notice; the standby promotes and its own server (another
// address, the successor key) adopts the promoted engine; the other
// player re-dials it with its successor token and is resumed, not
// joined: its replica equals the new host's state; the standby's own
// slot, not re-dialled, leaves after the grace.
func TestMigrationResumesPlayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _, layer, c, sc := newFeedRig(t)
		defer sc.Close()
		const newAddr = "10.0.2.1:7777"
		creds, err := MintSuccessorCredentials(rigGame, newAddr, []SuccessorPlayer{{ClientID: 1, Players: []uint16{1}}},
			0, [proto.UserDataSize]byte{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		r.close()
		c.Close()
		stopped := time.Now()

		var eng *sim.Server
		sc.Do(func() { eng, err = layer.sb.Promote(time.Now()) })
		if err != nil {
			t.Fatal(err)
		}
		promoted := eng.Tick()
		s := r.successor(newAddr, creds.Key)
		defer s.close()
		s.srv.Do(func() {
			err = s.host.Adopt(rigGame, eng, game.Migration{Epoch: 2, Host: 2, Addr: newAddr, Grace: 2 * time.Second})
		})
		if err != nil {
			t.Fatal(err)
		}
		gc, err := game.NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := r.net.Listen("10.0.3.1:5000")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var migrated []proto.ControlFrame // what the player's client saw (its loop; read after its close)
		seen := func(t proto.FrameType, b []byte) []byte {
			if t == proto.FrameControl {
				if f, _, err := proto.ParseControlFrame(b); err == nil && f.Code == proto.ControlHostMigration {
					f.Text = slices.Clone(f.Text)
					migrated = append(migrated, f)
				}
			}
			return b
		}
		c2, err := (&tickwire.Dialer{Game: testrig.FilterLayer{ClientLayer: gc, Filter: seen}, Conn: udp.FromPacketConn(pc)}).Dial(ctx, creds.Tokens[1])
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		s.waitSynced("resumed on the new host", func(_ int, st game.ClientStats) bool { return st.FullSnapshots >= 1 }, gc)
		// Detection (1.5 s, migrate.HostMonitor) is not in this figure:
		// the promotion starts at once.
		t.Logf("from the host's stop to the player's replica on the new host: %v (virtual, 15 ms one way, polled every 20 ms)", time.Since(stopped))
		time.Sleep(3 * time.Second)
		var (
			players []uint16
			hst     game.HostStats
		)
		s.srv.Do(func() { players, hst = s.host.Engine(rigGame).Players(nil), s.host.Stats() })
		if !slices.Equal(players, []uint16{1}) || hst.Joins != 0 || hst.Leaves != 1 {
			t.Fatalf("new host: players %v, stats %+v (want player 1 resumed, slot 2 left)", players, hst)
		}
		s.waitSynced("on the new host after the grace", checksummed(2), gc)
		if st := gc.Stats(); st.Desyncs != 0 {
			t.Fatalf("resumed player: %+v", st)
		}
		c2.Close()
		if len(migrated) != 1 || migrated[0].Player != 2 || migrated[0].Arg != 2 || string(migrated[0].Text) != newAddr || migrated[0].Tick < promoted || migrated[0].Tick > promoted+10 {
			t.Fatalf("host migration controls seen: %+v", migrated)
		}
	})
}

// TestAdoptedGameEndsWhenNobodyReturns: a game adopted after a host
// migration whose awaited players never re-dial ends after the grace, as
// any game without players does, instead of running on empty.
func TestAdoptedGameEndsWhenNobodyReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _, layer, c, sc := newFeedRig(t)
		time.Sleep(2 * time.Second)
		r.close()
		c.Close()
		var eng *sim.Server
		var err error
		sc.Do(func() { eng, err = layer.sb.Promote(time.Now()) })
		sc.Close()
		if err != nil {
			t.Fatal(err)
		}
		key, _ := tickwire.GenerateKey()
		s := r.successor("10.0.2.1:7777", key)
		defer s.close()
		s.srv.Do(func() {
			err = s.host.Adopt(rigGame, eng, game.Migration{Epoch: 2, Addr: "10.0.2.1:7777", Grace: time.Second})
		})
		if err != nil {
			t.Fatal(err)
		}
		if st := s.hostStats(); st.Games != 1 {
			t.Fatalf("adopted: %+v", st)
		}
		time.Sleep(2 * time.Second)
		if st := s.hostStats(); st.Games != 0 || st.Leaves != 2 {
			t.Fatalf("after the grace, nobody back: %+v (want the game ended, both players left)", st)
		}
	})
}
