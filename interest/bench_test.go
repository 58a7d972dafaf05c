package interest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// BenchmarkUpdate is the relevance and priority step of many players'
// schedulers over one world, shaped like the arena at 1,000 players: 1,300
// entities moving in a 256 m square, a 64 m view radius, the arena's
// bands, every entity changed every tick. Per-player state for that many
// players does not fit the caches, as in a server. One op is one tick of
// every player.
func BenchmarkUpdate(b *testing.B) {
	for _, players := range []int{100, 1000} {
		b.Run(fmt.Sprintf("players=%d", players), func(b *testing.B) {
			const (
				entities = 1300
				size     = 256 * 256 // the arena's units: 1/256 m
				radius   = 64 * 256
			)
			rng := rand.New(rand.NewPCG(1, 2))
			pos := make([]Vec3, entities)
			for i := range pos {
				pos[i] = Vec3{X: rng.Float32() * size, Y: rng.Float32() * size}
			}
			w := NewWorld(WorldConfig{CellSize: radius / 2})
			cfg := SchedulerConfig{Radius: radius, Bands: []Band{{From: 0.5, Every: 2}, {From: 0.75, Every: 4}}}
			scheds := make([]*Scheduler, players)
			for k := range scheds {
				scheds[k] = NewScheduler(cfg)
			}
			changed := make([]uint64, (entities+63)/64)
			for k := range changed {
				changed[k] = ^uint64(0)
			}
			tick := uint32(0)
			step := func() {
				tick++
				w.Begin(tick)
				for i := range pos {
					pos[i].X = min(max(pos[i].X+float32(rng.IntN(65)-32), 0), size)
					pos[i].Y = min(max(pos[i].Y+float32(rng.IntN(65)-32), 0), size)
					w.Add(proto.NetworkID(i+1), pos[i], 0)
				}
				w.End(changed)
				for k, s := range scheds {
					s.SetView(pos[k%entities])
					s.Update(w)
				}
			}
			for range 8 {
				step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(players), "ns/player")
		})
	}
}
