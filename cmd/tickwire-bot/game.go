package main

import (
	"fmt"

	"github.com/tickwire/tickwire"
)

// gameStats are one bot's game-side counters.
type gameStats struct {
	desyncs, resyncs           uint64
	inputsSent, lateInputs     uint64
	corrections                uint64
	interpStalls, interpFrames uint64
}

// botGame plays the game for one bot.
type botGame interface {
	attach(d *tickwire.Dialer)
	stats() gameStats
}

func newBotGame(seed uint64, players []uint16) botGame { return noGame{} }

type noGame struct{}

func (noGame) attach(*tickwire.Dialer) {}
func (noGame) stats() gameStats        { return gameStats{} }

func gameProgress(bots []*bot) string {
	var g gameStats
	for _, b := range bots {
		if b.game != nil {
			s := b.game.stats()
			g.inputsSent += s.inputsSent
			g.desyncs += s.desyncs
			g.resyncs += s.resyncs
		}
	}
	return fmt.Sprintf("inputs %d, resyncs %d, desyncs %d", g.inputsSent, g.resyncs, g.desyncs)
}
