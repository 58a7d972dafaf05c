package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// gameStats are one bot's game-side counters.
type gameStats struct {
	desyncs, resyncs       uint64
	inputsSent, lateInputs uint64
	corrections, rollbacks uint64
	interpFrames, stalls   uint64
	stallsBounded          uint64                         // stalls the lag-compensation bound won
	settled                interpCounts                   // the same since game.ConvergeTime
	events                 [game.NumEventKinds]uint64     // by tickwire.GameEventKind
	resyncCauses           [proto.NumResyncReasons]uint64 // by proto.ResyncReason
}

// botGame plays the arena for one bot: scripted random inputs (a heading
// held for a second or two, aim sweeping, a shot now and then).
type botGame struct {
	gc *game.Client
	r  *rand.Rand
	// cur is each player's script, in the order of the token's players
	// (a connection plays at most 4: a search is cheaper than a map).
	cur []script
}

type script struct {
	player uint16
	in     arena.Input
	until  uint32
}

// newBotGame plays for one bot; a headless one that does not verify only
// acks the snapshots (sim.ClientConfig.SkipState). interpLag bounds the
// interpolation delay (0: the engine's default); inputInterval is the
// ticks between its packets (game.Client.SetInputInterval).
func newBotGame(seed uint64, players []uint16, headless, verify bool, interpLag time.Duration, inputInterval int) *botGame {
	b := &botGame{r: rand.New(rand.NewPCG(seed, 0x7e57))}
	for _, p := range players {
		b.cur = append(b.cur, script{player: p})
	}
	gc, err := game.NewClient(arena.NewGame(0), b.input, sim.ClientConfig{Headless: headless, SkipState: headless && !verify, MaxInterpLag: interpLag})
	if err != nil {
		panic(err) // the default engine configuration is valid
	}
	if err := gc.SetInputInterval(inputInterval); err != nil {
		panic(err) // validated with the flags
	}
	b.gc = gc
	return b
}

// input is the game.Client's InputFunc (called on the client's loop).
func (b *botGame) input(player uint16, tick uint32, dst []byte) []byte {
	i := slices.IndexFunc(b.cur, func(s script) bool { return s.player == player })
	if i < 0 { // a player the token did not name: the server's roster is the truth
		b.cur = append(b.cur, script{player: player})
		i = len(b.cur) - 1
	}
	s := &b.cur[i]
	if int32(tick-s.until) >= 0 {
		s.in.MoveX = int8(b.r.IntN(255) - 127)
		s.in.MoveY = int8(b.r.IntN(255) - 127)
		s.until = tick + 60 + uint32(b.r.IntN(60))
	}
	s.in.Aim += 300
	in := s.in
	switch n := b.r.IntN(40); n {
	case 0:
		in.Buttons = arena.FireRay
	case 1:
		in.Buttons = arena.FireProjectile
	}
	return arena.AppendInput(dst, in)
}

func (b *botGame) attach(d *tickwire.Dialer) { d.Game = b.gc }

func (b *botGame) stats() gameStats {
	st := b.gc.Stats()
	return gameStats{
		desyncs:    st.Desyncs,
		resyncs:    st.Resyncs,
		inputsSent: st.Engine.InputsSampled,
		lateInputs: st.LateInputs,
		// Re-simulations that moved the bot's own avatar or projectiles
		// at a tick it had shown (smoothed, not snapped).
		corrections: st.Engine.Corrections,
		rollbacks:   st.Engine.Rollbacks,
		// Frames that showed remote entities, and those whose
		// interpolation time had run past the newest snapshot.
		interpFrames:  st.Engine.InterpFrames,
		stalls:        st.Engine.InterpStalls,
		stallsBounded: st.Engine.InterpStallsBounded,
		settled:       settledInterp(st),
		events:        st.Events,
		resyncCauses:  st.ResyncCauses,
	}
}

// eventCounts are the summary's form of event counts.
func eventCounts(n *[game.NumEventKinds]uint64) botproto.Events {
	return botproto.Events{
		Ready:           n[game.EventReady],
		PlayersJoined:   n[game.EventPlayerJoined],
		PlayersLeft:     n[game.EventPlayerLeft],
		ActionsAccepted: n[game.EventActionAccepted],
		ActionsRejected: n[game.EventActionRejected],
		MessagesLate:    n[game.EventMessageLate],
		ResyncsStarted:  n[game.EventResyncStarted],
		ResyncsFinished: n[game.EventResyncFinished],
		Desyncs:         n[game.EventDesync],
		Disconnects:     n[game.EventDisconnected],

		PlayersInterrupted: n[game.EventPlayerInterrupted],
		PlayersBack:        n[game.EventPlayerBack],
		Rejoining:          n[game.EventRejoining],
		Rejoined:           n[game.EventRejoined],
	}
}

func gameProgress(bots []*bot) string {
	var g gameStats
	for _, b := range bots {
		if b.game != nil && b.client != nil {
			s := b.game.stats()
			g.inputsSent += s.inputsSent
			g.lateInputs += s.lateInputs
			g.desyncs += s.desyncs
			g.resyncs += s.resyncs
			g.interpFrames += s.interpFrames
			g.stalls += s.stalls
			g.stallsBounded += s.stallsBounded
		}
	}
	return fmt.Sprintf("inputs %d (late %d), resyncs %d, desyncs %d, interpolation stalls %d of %d frames (%d bounded)",
		g.inputsSent, g.lateInputs, g.resyncs, g.desyncs, g.stalls, g.interpFrames, g.stallsBounded)
}

// interpCounts are interpolated frames, stalls and the stalls the
// lag-compensation bound won.
type interpCounts struct{ frames, stalls, bounded uint64 }

// settledInterp is what interpolation did once the client had played
// game.ConvergeTime (nothing before).
func settledInterp(st game.ClientStats) interpCounts {
	if st.Settled.InterpFrames == 0 {
		return interpCounts{}
	}
	e, s := &st.Engine, &st.Settled
	return interpCounts{e.InterpFrames - s.InterpFrames, e.InterpStalls - s.InterpStalls, e.InterpStallsBounded - s.InterpStallsBounded}
}
