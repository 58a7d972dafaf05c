package sim

import (
	"cmp"
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// EffectSpawn is the Kind of the effect Tick.Spawn records for every
// spawn, so spawns are confirmed or cancelled like other effects.
const EffectSpawn uint16 = 0xffff

// Effect is a presentation event produced by a step: a sound, particles,
// a hit marker. Kind, Entity, Player and Data are the game's; the engine
// only matches effects by (Tick, Kind, Entity, Player) across
// re-simulations.
type Effect struct {
	Tick   uint32
	Kind   uint16
	Player uint16
	Entity proto.NetworkID
	Data   [4]int32
}

func (e *Effect) sameKey(o *Effect) bool {
	return e.Tick == o.Tick && e.Kind == o.Kind && e.Entity == o.Entity && e.Player == o.Player
}

// EffectStatus is the life cycle of a predicted effect.
type EffectStatus uint8

const (
	// EffectPredicted: first produced by prediction; play it now.
	// Re-simulations that produce it again do not report it again.
	EffectPredicted EffectStatus = 1
	// EffectConfirmed: its tick is now covered by authoritative state and
	// it survived every re-simulation up to then; for spawns, the
	// authoritative state holds the entity (or, if it had already
	// disappeared in prediction too, nothing contradicts it).
	EffectConfirmed EffectStatus = 2
	// EffectCancelled: a re-simulation from newer authoritative state no
	// longer produces it, or a predicted spawn is absent from the
	// authoritative state while prediction still had it: it was
	// mispredicted; fade it out.
	EffectCancelled EffectStatus = 3
	// EffectAuthoritative: produced by the server's own step.
	EffectAuthoritative EffectStatus = 4
)

func (s EffectStatus) String() string {
	switch s {
	case EffectPredicted:
		return "predicted"
	case EffectConfirmed:
		return "confirmed"
	case EffectCancelled:
		return "cancelled"
	case EffectAuthoritative:
		return "authoritative"
	}
	return "unknown"
}

// EffectEvent is a status change of an effect.
type EffectEvent struct {
	Effect
	Status EffectStatus
}

type trackedEffect struct {
	Effect
	gen uint32
}

// effectLog collects effects. On the server it just lists this tick's
// effects; on a client it tracks predicted effects across
// re-simulations.
type effectLog struct {
	track   bool
	gen     uint32
	pending []trackedEffect
	events  []EffectEvent
}

func (l *effectLog) emit(e Effect, predicted bool) {
	if !l.track || !predicted {
		l.events = append(l.events, EffectEvent{Effect: e, Status: EffectAuthoritative})
		return
	}
	for i := range l.pending {
		p := &l.pending[i]
		if p.gen != l.gen && p.sameKey(&e) {
			p.gen = l.gen
			p.Data = e.Data
			return
		}
	}
	l.pending = append(l.pending, trackedEffect{Effect: e, gen: l.gen})
	l.events = append(l.events, EffectEvent{Effect: e, Status: EffectPredicted})
}

// rejection names an action the server rejected.
type rejection struct {
	player uint16
	tick   uint32
}

// settle ends the prediction of the effects of ticks up to auth, which
// the authoritative state now covers: each is confirmed, or cancelled if
// it came from an action the server rejected (same player and tick) or
// if it is a spawn the authoritative state lacks while the prediction
// (shown) still had it.
func (l *effectLog) settle(auth uint32, authIDs []proto.NetworkID, shown []Body, rejected []rejection) {
	keep := l.pending[:0]
	for _, p := range l.pending {
		if int32(p.Tick-auth) > 0 {
			keep = append(keep, p)
			continue
		}
		status := EffectConfirmed
		switch {
		case slices.Contains(rejected, rejection{p.Player, p.Tick}):
			status = EffectCancelled
		case p.Kind == EffectSpawn:
			_, inAuth := slices.BinarySearch(authIDs, p.Entity)
			_, wasShown := slices.BinarySearchFunc(shown, p.Entity, func(b Body, id proto.NetworkID) int {
				return cmp.Compare(b.ID, id)
			})
			if !inAuth && wasShown {
				status = EffectCancelled
			}
		}
		l.events = append(l.events, EffectEvent{Effect: p.Effect, Status: status})
	}
	l.pending = keep
}

// beginPass starts a re-simulation: every pending effect must be emitted
// again to survive it.
func (l *effectLog) beginPass() { l.gen++ }

// endPass cancels the pending effects the re-simulation did not emit
// again (it covered every tick they belong to).
func (l *effectLog) endPass() {
	keep := l.pending[:0]
	for _, p := range l.pending {
		if p.gen != l.gen {
			l.events = append(l.events, EffectEvent{Effect: p.Effect, Status: EffectCancelled})
			continue
		}
		keep = append(keep, p)
	}
	l.pending = keep
}
