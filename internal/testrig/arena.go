package testrig

import (
	"math/rand/v2"

	"github.com/tickwire/tickwire/examples/arena"
)

// FiringInputs plays arena moves and aims drawn from seed (and stream),
// pressing buttons one tick in every on average: a game client's input
// function (game.InputFunc).
func FiringInputs(seed, stream uint64, every int, buttons uint8) func(player uint16, tick uint32, dst []byte) []byte {
	r := rand.New(rand.NewPCG(seed, stream))
	return func(player uint16, tick uint32, dst []byte) []byte {
		in := arena.Input{MoveX: int8(r.IntN(255) - 127), MoveY: int8(r.IntN(255) - 127), Aim: uint16(r.Uint32())}
		if r.IntN(every) == 0 {
			in.Buttons = buttons
		}
		return arena.AppendInput(dst, in)
	}
}

// RandomInputs plays the arena with seeded random inputs, firing a
// projectile one tick in 20.
func RandomInputs(seed uint64) func(player uint16, tick uint32, dst []byte) []byte {
	return FiringInputs(seed, 2, 20, arena.FireProjectile)
}
