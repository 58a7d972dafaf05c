package sim

import (
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
