package netem

import (
	"math"
	"sync"
)

// The delay distributions, rebuilt the way iproute2 generates its
// normal.dist, pareto.dist and paretonormal.dist (tc/../netem/*.c): 4096
// signed 16-bit samples of the inverse CDF scaled by distScale, drawn
// from with a uniform index, as sch_netem's tabledist does.

const (
	distScale = 8192 // NETEM_DIST_SCALE
	distSize  = 4096
	// iproute2 fills a 16384-entry quantile table and keeps every 4th.
	distQuantiles = 16384
	paretoAlpha   = 3.0
)

var (
	distOnce   sync.Once
	distTables [4][]int16 // by Distribution; Uniform has none
)

func table(d Distribution) []int16 {
	distOnce.Do(buildTables)
	return distTables[d]
}

func clamp16(v float64) int16 {
	return int16(max(math.MinInt16, min(math.MaxInt16, v)))
}

func buildTables() {
	normal := make([]int16, distSize)
	pareto := make([]int16, distSize)
	paretoNormal := make([]int16, distSize)
	for k := range distSize {
		// normal.c keeps, for quantile slot i = 4k, the largest x (in
		// steps of 0.00005) with rint(16384·Φ(x)) == i, that is
		// Φ(x) just under (i+0.5)/16384.
		q := (float64(4*k) + 0.5) / distQuantiles
		x := math.Sqrt2 * math.Erfinv(2*q-1)
		nv := math.RoundToEven(x * distScale)
		normal[k] = clamp16(nv)

		// pareto.c: i runs from 65536 down in steps of 16;
		// value = (i/65536)^(-1/a) - 1.5, times 4/3 of the scale.
		u := float64(65536-16*k) / 65536
		pv := math.RoundToEven((math.Pow(u, -1/paretoAlpha) - 1.5) * (4.0 / 3.0) * distScale)
		pv = min(pv, math.MaxInt16)
		pareto[k] = clamp16(pv)

		// paretonormal.c: (normal + 3·pareto) / 4 at the same quantile,
		// with C's truncating integer division.
		paretoNormal[k] = clamp16(float64((int64(nv) + 3*int64(pv)) / 4))
	}
	distTables[Normal], distTables[Pareto], distTables[ParetoNormal] = normal, pareto, paretoNormal
}
