package main

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/sim/fixed"
)

// dots is the game: each player moves a dot toward the point it last
// ordered. It is a sim.CommitGame: every client runs it, stepped by the
// same commands at the same ticks, so it uses integer arithmetic only.
type dots struct {
	tick uint32
	dots []dot // one per present player, by player
}

type dot struct {
	player       uint16
	x, y, tx, ty int32
}

// The rules.
const (
	field = 1000 // the field is field × field
	speed = 7    // how far a dot moves in a tick
)

// A command is a target point: x, y as two uint16, little endian.
const commandSize = 4

// command is the order to move to (x, y).
func command(x, y int) []byte {
	return binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(nil, uint16(x)), uint16(y))
}

var errOutside = errors.New("dots: target outside the field")

// Schema: every byte of a command is an action byte, so a tick without
// a command has none (nothing repeats).
func (g *dots) Schema() sim.Schema {
	return sim.Schema{InputSize: commandSize, ActionBytes: commandSize}
}

// Clone and CopyFrom give the client its committed and live worlds and
// roll live back; CopyFrom reuses g's memory.
func (g *dots) Clone() sim.CommitGame {
	c := &dots{}
	c.CopyFrom(g)
	return c
}

func (g *dots) CopyFrom(src sim.CommitGame) {
	s := src.(*dots)
	g.tick = s.tick
	g.dots = append(g.dots[:0], s.dots...)
}

// ValidateAction refuses a target outside the field (every client
// refuses the same commands; the issuer's ClientConfig.Rejected hears
// of it).
func (g *dots) ValidateAction(player uint16, tick uint32, action []byte) error {
	if binary.LittleEndian.Uint16(action) >= field || binary.LittleEndian.Uint16(action[2:]) >= field {
		return errOutside
	}
	return nil
}

// OnPlayerJoin puts the player's dot in a corner, at rest.
func (g *dots) OnPlayerJoin(t *sim.Tick, player uint16) error {
	i, found := slices.BinarySearchFunc(g.dots, player, byPlayer)
	if !found {
		x := int32(player%2) * (field - 1)
		y := int32(player/2%2) * (field - 1)
		g.dots = slices.Insert(g.dots, i, dot{player: player, x: x, y: y, tx: x, ty: y})
	}
	return nil
}

// OnPlayerLeave takes the player's dot away.
func (g *dots) OnPlayerLeave(t *sim.Tick, player uint16, reason string) {
	if i, found := slices.BinarySearchFunc(g.dots, player, byPlayer); found {
		g.dots = slices.Delete(g.dots, i, i+1)
	}
}

func byPlayer(d dot, p uint16) int { return int(d.player) - int(p) }

// Step takes the tick's orders, then moves every dot toward its target.
func (g *dots) Step(t *sim.Tick) {
	g.tick = t.Tick
	for _, in := range t.Inputs {
		if in.Missing || in.Rejected {
			continue
		}
		if i, found := slices.BinarySearchFunc(g.dots, in.Player, byPlayer); found {
			g.dots[i].tx = int32(binary.LittleEndian.Uint16(in.Data))
			g.dots[i].ty = int32(binary.LittleEndian.Uint16(in.Data[2:]))
		}
	}
	for i := range g.dots {
		d := &g.dots[i]
		dx, dy := fixed.Limit(d.tx-d.x, d.ty-d.y, speed)
		d.x, d.y = d.x+dx, d.y+dy
	}
}

// AppendCanonical writes the whole world: the checksums compare it, and
// a joining client loads it (LoadCanonical).
func (g *dots) AppendCanonical(b []byte) []byte {
	w := sim.NewCanonicalWriter(b)
	w.Uint32(g.tick)
	w.Count(len(g.dots))
	for _, d := range g.dots {
		w.Uint16(d.player)
		w.Int32(d.x)
		w.Int32(d.y)
		w.Int32(d.tx)
		w.Int32(d.ty)
	}
	return w.Bytes()
}

// LoadCanonical reads AppendCanonical's bytes, which come from the
// network: the reader refuses what is truncated or malformed.
func (g *dots) LoadCanonical(b []byte) error {
	r := sim.NewCanonicalReader(b)
	tick := r.Uint32()
	ds := make([]dot, r.Count(2+4*4))
	for i := range ds {
		ds[i] = dot{player: r.Uint16(), x: r.Int32(), y: r.Int32(), tx: r.Int32(), ty: r.Int32()}
		if i > 0 && ds[i].player <= ds[i-1].player {
			r.Fail(errors.New("dots: players out of order"))
		}
	}
	if err := r.Finish(); err != nil {
		return err
	}
	g.tick, g.dots = tick, ds
	return nil
}
