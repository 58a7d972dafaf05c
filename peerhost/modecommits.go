package peerhost

import (
	"errors"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
)

// commitsGame is the mode of a commits game (Config.Commits): the host
// is a commits.Relay, and a warm standby is this peer's client itself,
// whose worlds keep the recent committed commands (KeepCommitted) and
// acknowledge the committed tick they hold.
type commitsGame struct {
	p     *Player
	relay *commits.Relay // when hosting
}

// keepSeconds is how many seconds of committed commands a commits
// player that can host keeps for the players whose committed world
// trails when it takes over.
const keepSeconds = 2

func (m *commitsGame) attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	if m.p.cfg.HostConn != nil {
		m.p.cfg.Commits.KeepCommitted(keepSeconds * c.TickRate())
	}
	return m.p.cfg.Commits.Attach(c, a)
}
func (m *commitsGame) resume()                               { m.p.cfg.Commits.Resume() }
func (m *commitsGame) resumeFailed(r proto.DisconnectReason) { m.p.cfg.Commits.ResumeFailed(r) }

func (m *commitsGame) serve(srv *tickwire.Server, mig *hostMigration) error {
	rcfg := m.p.cfg.Relay
	rcfg.Hooks = mig
	relay, err := commits.NewRelay(srv, rcfg)
	m.relay = relay
	return mig.serve(srv, relay, relayHosted{relay}, rcfg.Handler, err)
}

func (m *commitsGame) hostStats(st *Stats) { st.HostRelay = m.relay.Stats() }

// standbyTick is the committed tick while this peer is in line for a
// warm standby of the relay it follows.
func (m *commitsGame) standbyTick() (uint32, migrate.Epoch, bool) {
	p := m.p
	r := p.follower.Following()
	n := p.cfg.Standbys
	if n <= 0 {
		n = DefaultStandbys
	}
	var buf [8]migrate.Member
	succ := r.Succession(buf[:0])
	if len(p.players) == 0 || !slices.ContainsFunc(succ[:min(n, len(succ))], func(s migrate.Member) bool { return s.Slot == p.players[0] }) {
		return 0, 0, false
	}
	return p.cfg.Commits.CommittedTick(), r.Epoch, true
}

func (m *commitsGame) takeOver(now time.Time, _ migrate.Epoch) (uint32, func(adoption) error, error) {
	st, ok := m.p.cfg.Commits.RelayState(now)
	if !ok {
		return 0, nil, errNoCommitted
	}
	return st.Committed, func(a adoption) error {
		return m.relay.Adopt(m.p.game, st, commits.Migration{Epoch: a.epoch, Host: a.self, Addr: a.addr, Grace: a.grace, Gone: []uint16{a.lost}})
	}, nil
}

func (m *commitsGame) standbyFrame(proto.FrameType, []byte, int) error { return errUnexpectedFrame }

// standbyEnd does nothing: a commits standby is the client's worlds,
// which every player keeps.
func (m *commitsGame) standbyEnd(migrate.Epoch) {}

var errNoCommitted = errors.New("peerhost: the commits client holds no committed state")
