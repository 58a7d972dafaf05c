package sim

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// effectTrace collects every effect event of a harness's first client,
// frame by frame.
type effectTrace struct {
	events []EffectEvent
}

func (e *effectTrace) run(h *Harness, d time.Duration) {
	c := h.clients[0].Client
	for range d / time.Millisecond {
		frame := c.lastFrame
		h.Run(time.Millisecond)
		if c.lastFrame != frame { // an Advance ran
			e.events = append(e.events, c.Effects()...)
		}
	}
}

// statuses lists the statuses reported for an effect kind at tick.
func (e *effectTrace) statuses(kind uint16, tick uint32) (out []EffectStatus, entity proto.NetworkID) {
	for _, ev := range e.events {
		if ev.Kind == kind && ev.Tick == tick {
			out = append(out, ev.Status)
			entity = ev.Entity
		}
	}
	return out, entity
}

func equalStatuses(a []EffectStatus, b ...EffectStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A shot fired by the client: its effect and its spawn are reported
// predicted once (although every frame re-simulates the tick), then
// confirmed, and the predicted bullet id is the one the server assigns.
func TestClientEffectPredictedThenConfirmed(t *testing.T) {
	const fireAt = 150
	h, c := lossless(t, 40*time.Millisecond, ClientConfig{}, 1)
	c.input = func(player uint16, tick uint32, dst []byte) []byte {
		if tick == fireAt {
			return append(dst, tgInputBytes(1, 0, actFire, 1)...)
		}
		return append(dst, tgInputBytes(1, 0, 0, 0)...)
	}
	var tr effectTrace
	tr.run(h, 4*time.Second)
	shot, bullet := tr.statuses(tgEffectShot, fireAt)
	if !equalStatuses(shot, EffectPredicted, EffectConfirmed) {
		t.Fatalf("shot: %v, want predicted then confirmed", shot)
	}
	spawn, id := tr.statuses(EffectSpawn, fireAt)
	if !equalStatuses(spawn, EffectPredicted, EffectConfirmed) || id != bullet || id.Spawner() != 1 {
		t.Fatalf("spawn: %v of %v (shot entity %v)", spawn, id, bullet)
	}
	if st := c.Client.Stats(); st.Rollbacks < 100 {
		t.Fatalf("only %d rollbacks", st.Rollbacks)
	}
	// The server spawned exactly that id at that tick.
	if len(tr.events) != 4 {
		t.Errorf("events %v", tr.events)
	}
	h2, c2 := lossless(t, 40*time.Millisecond, ClientConfig{}, 1)
	c2.input = c.input
	for h2.Server.Tick() < fireAt {
		h2.Run(time.Millisecond)
	}
	if h2.Server.World().(*testGame).entity(id) == nil {
		t.Errorf("server has no entity %v after tick %d: %+v", id, fireAt, h2.Server.World().(*testGame).ents)
	}
}

// Another player disarms us just before our shot; the client predicted
// the shot (it could not know), and cancels it once the authoritative
// state shows the disarm.
func TestClientEffectMispredictedCancelled(t *testing.T) {
	const disarmAt, fireAt = 200, 202
	h, c := lossless(t, 40*time.Millisecond, ClientConfig{}, 1, 2)
	c.input = func(player uint16, tick uint32, dst []byte) []byte {
		if tick == fireAt {
			return append(dst, tgInputBytes(0, 0, actFire, 1)...)
		}
		return append(dst, tgInputBytes(0, 0, 0, 0)...)
	}
	var tr effectTrace
	for h.Server.Tick() < disarmAt-10 {
		tr.run(h, time.Millisecond)
	}
	f := proto.InputFrame{Player: 2, Tick: disarmAt, Count: 1, Size: tgInputSize, Data: tgInputBytes(0, 0, actDisarm, 0)}
	if err := h.Server.ReceiveInput(h.now, nil, &f); err != nil {
		t.Fatal(err)
	}
	tr.run(h, 2*time.Second)
	if shot, _ := tr.statuses(tgEffectShot, fireAt); !equalStatuses(shot, EffectPredicted, EffectCancelled) {
		t.Fatalf("shot: %v, want predicted then cancelled", shot)
	}
	if spawn, _ := tr.statuses(EffectSpawn, fireAt); !equalStatuses(spawn, EffectPredicted, EffectCancelled) {
		t.Fatalf("spawn: %v, want predicted then cancelled", spawn)
	}
	if d, _ := tr.statuses(tgEffectDisarm, disarmAt); len(d) != 0 {
		t.Errorf("another player's effect was predicted: %v", d)
	}
	if p := c.Client.Predicted().(*testGame).entity(tgPlayerID(1)); p == nil || p.ammo != 0 {
		t.Errorf("predicted player %+v, want disarmed", p)
	}
}

// The server rejects an action the client's rules accept: the client
// predicted it, and drops it (effect cancelled, bullet gone) once told.
func TestClientRejectedActionDisappears(t *testing.T) {
	const fireAt = 150
	h, c := lossless(t, 40*time.Millisecond, ClientConfig{}, 1)
	h.Server.World().(*testGame).strict = true
	c.input = func(player uint16, tick uint32, dst []byte) []byte {
		if tick == fireAt {
			return append(dst, tgInputBytes(0, 0, actFire|actOdd, 1)...)
		}
		return append(dst, tgInputBytes(0, 0, 0, 0)...)
	}
	var tr effectTrace
	var bullet proto.NetworkID
	for range 4000 {
		tr.run(h, time.Millisecond)
		if _, id := tr.statuses(EffectSpawn, fireAt); id != 0 && bullet == 0 {
			bullet = id
			if c.Client.Predicted().(*testGame).entity(bullet) == nil {
				t.Fatal("predicted spawn not in the predicted world")
			}
		}
	}
	if shot, _ := tr.statuses(tgEffectShot, fireAt); !equalStatuses(shot, EffectPredicted, EffectCancelled) {
		t.Fatalf("shot: %v, want predicted then cancelled", shot)
	}
	if st := c.Client.Stats(); st.RejectedActions != 1 {
		t.Fatalf("rejected %d", st.RejectedActions)
	}
	if c.Client.Predicted().(*testGame).entity(bullet) != nil || h.Server.World().(*testGame).entity(bullet) != nil {
		t.Fatal("rejected bullet still exists")
	}
	if p := c.Client.Predicted().(*testGame).entity(tgPlayerID(1)); p.ammo != 100 {
		t.Fatalf("ammo %d, want the rejected shot not counted", p.ammo)
	}
}
