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

// RoamingInputs plays the arena as a player who roams: each heading is
// held for one to two seconds (so the avatar crosses the arena, and its
// projectiles end up far from it), the aim sweeps, and a hitscan shot or
// a projectile goes off one tick in 40 each, as tickwire-bot plays.
func RoamingInputs(seed uint64) func(player uint16, tick uint32, dst []byte) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	var in arena.Input
	next := uint32(0)
	return func(player uint16, tick uint32, dst []byte) []byte {
		if int32(tick-next) >= 0 {
			next = tick + 60 + uint32(r.IntN(60))
			in.MoveX, in.MoveY = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
		}
		in.Aim += 300
		shot := in
		if b := r.IntN(40); b < 2 {
			shot.Buttons = []uint8{arena.FireRay, arena.FireProjectile}[b]
		}
		return arena.AppendInput(dst, shot)
	}
}
