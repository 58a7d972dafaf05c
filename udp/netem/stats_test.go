package netem

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestDelayPercentile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []time.Duration{time.Microsecond, time.Millisecond, time.Second} {
		var s statsCounter
		var all []time.Duration
		for range 100_000 {
			d := time.Duration(rng.ExpFloat64() * float64(scale))
			all = append(all, d)
			s.forward(d, 1)
		}
		slices.Sort(all)
		exact := all[len(all)*99/100-1]
		got := s.snapshot().DelayP99
		if diff := float64(got-exact) / float64(exact); diff > 0.016 || diff < -0.016 {
			t.Errorf("scale %v: p99 %v, exact %v (%.2f%% off)", scale, got, exact, diff*100)
		}
	}
	for _, v := range []uint64{0, 1, 63, 64, 65, 1000, 1 << 40, 1<<63 + 12345} {
		if i := histIndex(v); i < 0 || i >= histSize || (v >= histLinear && (histValue(i) < v-v/32 || histValue(i) > v+v/32)) {
			t.Errorf("value %d: bucket %d holds %d", v, i, histValue(i))
		}
	}
}
