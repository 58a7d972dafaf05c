package webclient

import (
	"context"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// shotTicks is how long a shot stays drawn (one second at 60 Hz).
const shotTicks = 60

// rateWindow is the shortest span the overlay's rates are measured over.
const rateWindow = 500 * time.Millisecond

// Player is one browser player of the arena.
type Player struct {
	client *tickwire.Client
	gc     *game.Client
	slot   uint16

	mu      sync.Mutex // guards everything below
	in      arena.Input
	shots   []shot
	frames  uint64 // engine frames so far
	ready   bool
	desyncs uint64
	ended   string
	// rejoining: the session was lost and the player is coming back;
	// interrupted: the players the server says are silent
	rejoining   bool
	interrupted []uint16
	bodies      []sim.Body // scratch for Frame
	rate        rateSample // at the start of the current rate window
	rates       rates      // over the last window
}

// shot is one hitscan shot: as the client predicted it or as the server
// judged it.
type shot struct {
	sim.Effect
	server bool
}

type rateSample struct {
	at                     time.Time
	bytesIn, bytesOut      uint64
	frames                 uint64
	rollbacks, resimulated uint64
}

type rates struct {
	bytesIn, bytesOut      float64 // per second
	rollbacks, resimulated float64 // per frame
}

// Dial connects a player holding token (the lobby's connect token, as
// text) over pipe and starts playing.
func Dial(ctx context.Context, token string, pipe *Pipe) (*Player, error) {
	tok, err := tickwire.ParseConnectToken(token)
	if err != nil {
		return nil, err
	}
	p := &Player{}
	gc, err := game.NewClient(arena.NewGame(0), p.sample, sim.ClientConfig{})
	if err != nil {
		return nil, err
	}
	gc.Handle(p)
	gc.OnFrame(p.frame)
	d := tickwire.Dialer{
		// A browser tab stalls longer than a native client (a busy main
		// thread, a collection, a throttled timer): past the server's
		// timeout it comes back into its slot by itself, over the same
		// page's transport.
		Rejoin:  &tickwire.Rejoin{},
		Conn:    pipe,
		Game:    gc,
		Resolve: func(context.Context, string) (netip.AddrPort, error) { return pipe.Peer(), nil },
	}
	c, err := d.Dial(ctx, tok)
	if err != nil {
		return nil, err
	}
	p.client, p.gc = c, gc
	if pl := c.Players(); len(pl) > 0 {
		p.slot = pl[0]
	}
	return p, nil
}

// Slot is the player's slot in the game.
func (p *Player) Slot() uint16 { return p.slot }

// Close leaves the game.
func (p *Player) Close() error { return p.client.Close() }

// SetInput sets what the player does from the next tick on: the stick
// (-127..127 each way), the aim (radians, 0 = +x, counterclockwise
// towards +y) and the buttons (arena.FireRay, arena.FireProjectile).
func (p *Player) SetInput(moveX, moveY int8, aim float64, buttons uint8) {
	a := math.Mod(aim, 2*math.Pi)
	if a < 0 {
		a += 2 * math.Pi
	}
	p.mu.Lock()
	p.in = arena.Input{MoveX: moveX, MoveY: moveY, Aim: uint16(a / (2 * math.Pi) * 65536), Buttons: buttons}
	p.mu.Unlock()
}

// sample is the game.Client's InputFunc.
func (p *Player) sample(_ uint16, _ uint32, dst []byte) []byte {
	p.mu.Lock()
	in := p.in
	p.mu.Unlock()
	return arena.AppendInput(dst, in)
}

// frame is the game.Client's FrameFunc: it keeps the shots the client
// predicted in this frame.
func (p *Player) frame(eng *sim.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frames++
	for _, e := range eng.Effects() {
		if e.Kind == arena.EffectShot && e.Status == sim.EffectPredicted {
			p.addShot(shot{Effect: e.Effect})
		}
	}
}

// game.Event implements tickwire.GameHandler: the server's judgement of
// this player's shots, readiness, desyncs and the end.
func (p *Player) GameEvent(_ *sim.Client, e *game.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case game.EventReady:
		p.ready = true
	case game.EventDesync:
		p.desyncs++
	case game.EventEffect:
		if e.Effect.Kind == arena.EffectShot {
			p.addShot(shot{Effect: e.Effect, server: true})
		}
	case game.EventDisconnected:
		p.ended = e.Disconnect.String()
		p.rejoining = false
	case game.EventRejoining:
		p.rejoining = true
	case game.EventRejoined:
		p.rejoining = false
	case game.EventPlayerInterrupted:
		if !slices.Contains(p.interrupted, e.Player) {
			p.interrupted = append(p.interrupted, e.Player)
		}
	case game.EventPlayerBack, game.EventPlayerLeft:
		p.interrupted = slices.DeleteFunc(p.interrupted, func(q uint16) bool { return q == e.Player })
	}
}

// addShot keeps a shot, forgetting those too old to draw. Called with mu.
func (p *Player) addShot(s shot) {
	keep := p.shots[:0]
	for _, o := range p.shots {
		if int32(s.Tick-o.Tick) < shotTicks*2 {
			keep = append(keep, o)
		}
	}
	p.shots = append(keep, s)
}

// Frame describes what to draw at display time now.
type Frame struct {
	Tick   uint32   `json:"tick"` // the predicted tick
	Self   uint16   `json:"self"` // the player's slot
	Bodies []Sprite `json:"bodies"`
	Shots  []Shot   `json:"shots"`
	Net    Overlay  `json:"net"`
	Ended  string   `json:"ended,omitempty"` // why the session ended
	// Rejoining: the session was lost and the player is coming back
	// into its slot; Interrupted: the players whose connection is silent.
	Rejoining   bool     `json:"rejoining,omitempty"`
	Interrupted []uint16 `json:"interrupted,omitempty"`
}

// Sprite is one body: the player's own avatar and projectiles where it
// predicts them, every other body interpolated in the past. Positions
// are in metres.
type Sprite struct {
	Kind   string  `json:"kind"`   // player, npc or projectile
	Player uint16  `json:"player"` // a player's slot, a projectile's shooter
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Aim    float64 `json:"aim"` // radians
	HP     int     `json:"hp"`
	Score  int     `json:"score"`
	Own    bool    `json:"own"` // predicted: the player's own
}

// Shot is a hitscan shot of the player: as it predicted it, or as the
// server judged it with lag compensation (Server). To is where the
// target was in the view judged against (the end of the ray for a
// miss).
type Shot struct {
	FromX  float64 `json:"fromX"`
	FromY  float64 `json:"fromY"`
	ToX    float64 `json:"toX"`
	ToY    float64 `json:"toY"`
	Hit    bool    `json:"hit"`
	Server bool    `json:"server"`
	Age    float64 `json:"age"` // 0 (new) .. 1 (about to go)
}

// Overlay is the network debug overlay's figures.
type Overlay struct {
	Ready       bool    `json:"ready"`
	RTT         float64 `json:"rttMs"`
	Jitter      float64 `json:"jitterMs"`
	Loss        float64 `json:"loss"` // fraction of the client's packets not acknowledged
	Lead        float64 `json:"leadTicks"`
	InterpDelay float64 `json:"interpDelayMs"`
	InterpGoal  float64 `json:"interpTargetMs"`
	Rollbacks   float64 `json:"rollbacksPerFrame"`
	Resimulated float64 `json:"resimPerFrame"`
	Corrections uint64  `json:"corrections"`
	CorrMax     float64 `json:"correctionMaxM"`
	BytesIn     float64 `json:"bytesInPerSec"`
	BytesOut    float64 `json:"bytesOutPerSec"`
	PacketsIn   uint64  `json:"packetsIn"`
	PacketsOut  uint64  `json:"packetsOut"`
	Desyncs     uint64  `json:"desyncs"`
	Resyncs     uint64  `json:"resyncs"`
	Frames      uint64  `json:"frames"`
	Entities    int     `json:"entities"`
}

// Frame describes the frame to draw at display time now.
func (p *Player) Frame(now time.Time) Frame {
	cs := p.client.Stats()
	gs := p.gc.Stats()
	f := Frame{Self: p.slot, Bodies: []Sprite{}, Shots: []Shot{}}
	p.gc.Do(func(eng *sim.Client) {
		f.Tick = eng.Tick()
		world, _ := eng.Predicted().(*arena.Game)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.bodies = eng.RenderBodies(now, p.bodies[:0])
		for _, b := range p.bodies {
			f.Bodies = append(f.Bodies, sprite(world, b, eng.Own(b.ID)))
		}
	})

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.shots {
		age := float64(int32(f.Tick-s.Tick)) / shotTicks
		if age < 0 || age >= 1 {
			continue
		}
		f.Shots = append(f.Shots, Shot{
			FromX: metres(s.Data[0]), FromY: metres(s.Data[1]), ToX: metres(s.Data[2]), ToY: metres(s.Data[3]),
			Hit: s.Entity != 0, Server: s.server, Age: age,
		})
	}
	cur := rateSample{at: now, bytesIn: cs.BytesIn, bytesOut: cs.BytesOut, frames: p.frames,
		rollbacks: gs.Engine.Rollbacks, resimulated: gs.Engine.Resimulated}
	if r := p.rate; r.at.IsZero() {
		p.rate = cur
	} else if dt := now.Sub(r.at); dt >= rateWindow {
		sec := dt.Seconds()
		p.rates.bytesIn = float64(cur.bytesIn-r.bytesIn) / sec
		p.rates.bytesOut = float64(cur.bytesOut-r.bytesOut) / sec
		if n := cur.frames - r.frames; n > 0 {
			p.rates.rollbacks = float64(cur.rollbacks-r.rollbacks) / float64(n)
			p.rates.resimulated = float64(cur.resimulated-r.resimulated) / float64(n)
		}
		p.rate = cur
	}
	e := &gs.Engine
	f.Net = Overlay{
		Ready: p.ready, RTT: ms(cs.RTT), Jitter: ms(cs.Jitter), Loss: cs.Loss, Lead: e.Lead,
		InterpDelay: ms(e.InterpDelay), InterpGoal: ms(e.InterpTarget),
		Rollbacks: p.rates.rollbacks, Resimulated: p.rates.resimulated,
		Corrections: e.Corrections, CorrMax: e.CorrectionMax / arena.Unit,
		BytesIn: p.rates.bytesIn, BytesOut: p.rates.bytesOut,
		PacketsIn: cs.PacketsIn, PacketsOut: cs.PacketsOut,
		Desyncs: p.desyncs, Resyncs: gs.Resyncs, Frames: p.frames, Entities: gs.Entities,
	}
	f.Ended = p.ended
	f.Rejoining = p.rejoining
	f.Interrupted = slices.Clone(p.interrupted)
	return f
}

// sprite describes body b of the arena world (the predicted one, for
// what a body does not carry: kind, aim, health).
func sprite(world *arena.Game, b sim.Body, own bool) Sprite {
	s := Sprite{X: metres(b.Pos.X), Y: metres(b.Pos.Y), Own: own, Player: arena.Owner(b.ID)}
	var e *arena.Entity
	if world != nil {
		e = world.W.Entity(b.ID)
	}
	kind := kindOf(b.ID)
	if e != nil {
		kind = e.Kind
		s.Aim = float64(e.Aim) / 256 * 2 * math.Pi
		s.HP, s.Score = int(e.HP), int(e.Score)
	}
	switch kind {
	case arena.KindPlayer:
		s.Kind = "player"
	case arena.KindNPC:
		s.Kind = "npc"
	default:
		s.Kind = "projectile"
	}
	return s
}

// kindOf tells an entity's kind from its id alone (arena's id scheme).
func kindOf(id proto.NetworkID) arena.Kind {
	switch {
	case id.Spawner() != 0:
		return arena.KindProjectile
	case id == arena.PlayerID(arena.Owner(id)):
		return arena.KindPlayer
	}
	return arena.KindNPC
}

func metres(v int32) float64     { return float64(v) / arena.Unit }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
