package peerhost

import (
	"fmt"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// stateSync is the mode of a state-sync game (Config.Game).
type stateSync struct {
	p    *Player
	host *game.Host // when hosting
}

func (m *stateSync) attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	return m.p.cfg.Game.Attach(c, a)
}
func (m *stateSync) resume()                               { m.p.cfg.Game.Resume() }
func (m *stateSync) resumeFailed(r proto.DisconnectReason) { m.p.cfg.Game.ResumeFailed(r) }

func (m *stateSync) serve(srv *tickwire.Server, mig *hostMigration) error {
	gcfg := m.p.cfg.Host
	codec, ok := gcfg.FullCodec.Codec()
	if !ok {
		return fmt.Errorf("peerhost: game.Config.FullCodec %d is not a codec", gcfg.FullCodec)
	}
	mig.feedCfg.Codec = codec
	gcfg.Hooks = mig
	host, err := game.NewHost(srv, m.p.cfg.Factory, gcfg)
	m.host = host
	return mig.serve(srv, host, gameHosted{host}, gcfg.Handler, err)
}

func (m *stateSync) hostStats(st *Stats) { st.HostGame = m.host.Stats() }

func (m *stateSync) standbyTick() (uint32, migrate.Epoch, bool) {
	tick, ok := m.p.standby.Ready()
	return tick, m.p.standby.Epoch(), ok
}

func (m *stateSync) takeOver(now time.Time, lost migrate.Epoch) (uint32, func(adoption) error, error) {
	p := m.p
	if p.standby.Epoch() != lost {
		// Of an older host: the one lost did not feed it.
		p.standby.Drop()
	}
	at, _ := p.standby.Ready()
	eng, err := p.standby.Promote(now)
	if err != nil {
		return at, nil, err
	}
	return at, m.adopter(eng), nil
}

// adopter adopts the game on this peer's host with engine eng.
func (m *stateSync) adopter(eng *sim.Server) func(adoption) error {
	return func(a adoption) error {
		return m.host.Adopt(m.p.game, eng, game.Migration{Epoch: a.epoch, Host: a.self, Addr: a.addr, Grace: a.grace, Hold: a.hold, Gone: a.gone})
	}
}

func (m *stateSync) standbyEnd(epoch migrate.Epoch) {
	if epoch >= m.p.standby.Epoch() {
		m.p.standby.Drop()
	}
}

func (m *stateSync) standbyFrame(t proto.FrameType, b []byte, tickRate int) error {
	p := m.p
	if p.cfg.Factory == nil {
		return errUnexpectedFrame
	}
	var err error
	if t == proto.FrameStandbyState {
		var f proto.StandbyStateFrame
		if f, _, err = proto.ParseStandbyStateFrame(b); err == nil {
			var world game.Game
			if world, err = p.cfg.Factory(p.game); err == nil {
				cfg := p.cfg.Host.Sim
				cfg.TickRate = tickRate
				err = migrate.LoadStateFrame(&p.standby, &f, world, cfg, &p.codecs)
			}
		}
		if err == nil {
			p.stats.StandbyState++
		}
	} else {
		var f proto.StandbyStepFrame
		if f, _, err = proto.ParseStandbyStepFrame(b); err == nil {
			var e migrate.Epoch
			if e, err = migrate.StepRecordFromFrame(&p.rec, &f); err == nil {
				err = p.standby.Step(e, &p.rec)
			}
		}
		if err == nil {
			p.stats.StandbySteps++
		}
	}
	if err != nil {
		p.stats.StandbyErrs++
	}
	return nil // counted here; the host's stream goes on
}
