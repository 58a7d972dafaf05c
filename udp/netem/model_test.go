package netem

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"testing"
	"time"
)

// epoch is the virtual start of every model test.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// delivery is one datagram that left an Impairment.
type delivery struct {
	idx int           // which offered datagram (from its payload)
	at  time.Duration // when it left, since epoch
	p   Packet
}

// simulate offers n datagrams of size bytes (the first 4 hold the index)
// every interval and takes each out exactly when it falls due.
func simulate(q *Impairment, n int, interval time.Duration, size int) []delivery {
	var out []delivery
	clock := epoch
	release := func(until time.Time) {
		for {
			next, ok := q.Next()
			if !ok || next.After(until) {
				return
			}
			if next.After(clock) {
				clock = next
			}
			p, ok := q.Dequeue(clock)
			if !ok {
				panic("Next said due, Dequeue disagreed")
			}
			out = append(out, delivery{int(binary.BigEndian.Uint32(p.Data)), clock.Sub(epoch), p})
		}
	}
	for i := range n {
		t := epoch.Add(time.Duration(i) * interval)
		release(t)
		clock = t
		data := make([]byte, size)
		binary.BigEndian.PutUint32(data, uint32(i))
		for j := 4; j < size; j++ {
			data[j] = byte(i*7 + j)
		}
		q.Enqueue(t, Packet{Data: data})
		release(t)
	}
	release(epoch.Add(1000 * time.Hour))
	return out
}

// within fails unless got is within tol of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.5g, want %.5g ± %.3g", what, got, want, tol)
	} else {
		t.Logf("%s = %.5g (want %.5g ± %.3g)", what, got, want, tol)
	}
}

// binomialTol is 4.5 standard deviations of a rate p over n trials.
func binomialTol(p float64, n int) float64 { return 4.5 * math.Sqrt(p*(1-p)/float64(n)) }

func TestLossRate(t *testing.T) {
	for _, p := range []float64{1, 10, 50} {
		const n = 200_000
		q := NewImpairment(Spec{Loss: Loss{Model: LossRandom, Percent: p}}, 1)
		out := simulate(q, n, time.Millisecond, 16)
		s := q.Stats()
		lost := float64(n-len(out)) / n
		within(t, "loss rate", lost, p/100, binomialTol(p/100, n))
		if s.Dropped != uint64(n-len(out)) || s.Offered != n || s.Forwarded != uint64(len(out)) {
			t.Errorf("stats %+v for %d delivered", s, len(out))
		}
	}
}

func TestDuplicateRate(t *testing.T) {
	const n = 200_000
	q := NewImpairment(MustParse("duplicate 5%"), 2)
	out := simulate(q, n, time.Millisecond, 32)
	dups := len(out) - n
	within(t, "duplicate rate", float64(dups)/n, 0.05, binomialTol(0.05, n))
	// Each duplicate is an identical copy delivered right before its original.
	copies := 0
	for i := 1; i < len(out); i++ {
		if out[i-1].p.Duplicate {
			copies++
			if out[i].idx != out[i-1].idx || !bytes.Equal(out[i].p.Data, out[i-1].p.Data) || out[i].p.Duplicate {
				t.Fatalf("duplicate at %d not followed by its original", i-1)
			}
		}
	}
	if copies != dups || q.Stats().Duplicated != uint64(dups) {
		t.Errorf("%d copies flagged, %d extra deliveries, stats %d", copies, dups, q.Stats().Duplicated)
	}
}

func TestCorruptRate(t *testing.T) {
	const n, size = 200_000, 32
	q := NewImpairment(MustParse("corrupt 3%"), 3)
	out := simulate(q, n, time.Millisecond, size)
	corrupted := 0
	for i, d := range out {
		if d.p.Corrupted {
			corrupted++
			continue
		}
		// Untouched datagrams arrive intact (TestCorruptFlipsOneBit
		// checks what corruption does).
		want := make([]byte, size)
		binary.BigEndian.PutUint32(want, uint32(i))
		for j := 4; j < size; j++ {
			want[j] = byte(i*7 + j)
		}
		if !bytes.Equal(d.p.Data, want) {
			t.Fatalf("datagram %d changed without being marked corrupted", i)
		}
	}
	within(t, "corrupt rate", float64(corrupted)/n, 0.03, binomialTol(0.03, n))
	if q.Stats().Corrupted != uint64(corrupted) || len(out) != n {
		t.Errorf("stats count %d corrupted, flags say %d; %d delivered", q.Stats().Corrupted, corrupted, len(out))
	}
}

func TestCorruptFlipsOneBit(t *testing.T) {
	q := NewImpairment(MustParse("corrupt 100%"), 4)
	for i := range 1000 {
		orig := bytes.Repeat([]byte{byte(i)}, 1+i%50)
		q.Enqueue(epoch, Packet{Data: slices.Clone(orig)})
		p, ok := q.Dequeue(epoch)
		if !ok || !p.Corrupted {
			t.Fatal("not corrupted at 100%")
		}
		flipped := 0
		for j := range orig {
			flipped += bits.OnesCount8(orig[j] ^ p.Data[j])
		}
		if flipped != 1 {
			t.Fatalf("%d bits flipped, want 1", flipped)
		}
	}
}

func TestReorderRate(t *testing.T) {
	const n = 100_000
	q := NewImpairment(MustParse("delay 10ms reorder 25%"), 5)
	out := simulate(q, n, time.Millisecond, 8)
	reordered := 0
	maxSeen := -1
	for _, d := range out {
		if d.p.Reordered {
			reordered++
			if d.at != time.Duration(d.idx)*time.Millisecond {
				t.Fatalf("reordered datagram %d left at %v, not at once", d.idx, d.at)
			}
		} else if d.at != time.Duration(d.idx)*time.Millisecond+10*time.Millisecond {
			t.Fatalf("delayed datagram %d left at %v", d.idx, d.at)
		}
		maxSeen = max(maxSeen, d.idx)
	}
	within(t, "reorder rate", float64(reordered)/n, 0.25, binomialTol(0.25, n))
	// From the receiver's side: datagrams arriving after a later-sent one.
	late, highest := 0, -1
	for _, d := range out {
		if d.idx < highest {
			late++
		}
		highest = max(highest, d.idx)
	}
	if float64(late)/n < 0.5 {
		t.Errorf("only %d of %d datagrams arrived out of order", late, n)
	}
}

func TestReorderGap(t *testing.T) {
	q := NewImpairment(MustParse("delay 10ms reorder 100% gap 5"), 6)
	out := simulate(q, 50, time.Millisecond, 8)
	var got []int
	for _, d := range out {
		if d.p.Reordered {
			got = append(got, d.idx)
		}
	}
	want := []int{4, 9, 14, 19, 24, 29, 34, 39, 44, 49}
	if !slices.Equal(got, want) {
		t.Fatalf("reordered %v, want every 5th: %v", got, want)
	}
}

// delayStats returns the mean, standard deviation, lag-1 autocorrelation
// and skewness of the delays in offer order, in ms.
func delayStats(out []delivery, interval time.Duration) (mean, sd, ac1, skew float64) {
	ds := make([]float64, len(out))
	for _, d := range out {
		ds[d.idx] = float64(d.at-time.Duration(d.idx)*interval) / float64(time.Millisecond)
	}
	for _, d := range ds {
		mean += d
	}
	mean /= float64(len(ds))
	var m2, m3, c1 float64
	for i, d := range ds {
		m2 += (d - mean) * (d - mean)
		m3 += (d - mean) * (d - mean) * (d - mean)
		if i > 0 {
			c1 += (d - mean) * (ds[i-1] - mean)
		}
	}
	sd = math.Sqrt(m2 / float64(len(ds)))
	return mean, sd, c1 / m2, m3 / float64(len(ds)) / (sd * sd * sd)
}

// tableMoments are a distribution table's mean, sd and skewness in units
// of the jitter.
func tableMoments(d Distribution) (mean, sd, skew float64) {
	tab := table(d)
	for _, v := range tab {
		mean += float64(v) / distScale
	}
	mean /= float64(len(tab))
	var m2, m3 float64
	for _, v := range tab {
		x := float64(v)/distScale - mean
		m2 += x * x
		m3 += x * x * x
	}
	sd = math.Sqrt(m2 / float64(len(tab)))
	return mean, sd, m3 / float64(len(tab)) / (sd * sd * sd)
}

func TestDistributionTables(t *testing.T) {
	for _, d := range []Distribution{Normal, Pareto, ParetoNormal} {
		tab := table(d)
		if len(tab) != distSize || !slices.IsSorted(tab) {
			t.Errorf("%v: %d entries, sorted %v", d, len(tab), slices.IsSorted(tab))
		}
		mean, sd, skew := tableMoments(d)
		t.Logf("%v table: mean %.4f sd %.4f skew %.2f, range [%d, %d]", d, mean, sd, skew, tab[0], tab[len(tab)-1])
	}
	// normal.dist: the inverse normal CDF, clamped to int16 at the far left.
	n := table(Normal)
	if n[0] != math.MinInt16 || n[1] < -28400 || n[1] > -28200 || n[2048] != 0 && n[2048] != 1 {
		t.Errorf("normal table starts %v, middle %d", n[:3], n[2048])
	}
	if mean, sd, _ := tableMoments(Normal); math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
		t.Errorf("normal table mean %.4f sd %.4f, want 0 and 1", mean, sd)
	}
	// pareto.dist starts at (1-1.5)·4/3 of the scale and is clamped at
	// 32767; ·4/3 for X ~ Pareto(3) has mean 0 before clamping.
	p := table(Pareto)
	if p[0] != -5461 || p[len(p)-1] != math.MaxInt16 {
		t.Errorf("pareto table spans [%d, %d], want [-5461, 32767]", p[0], p[len(p)-1])
	}
	if _, _, skew := tableMoments(Pareto); skew < 2 {
		t.Errorf("pareto table skewness %.2f: not heavy-tailed", skew)
	}
}

func TestDelayDistributions(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct {
		spec string
		dist Distribution
	}{
		{"delay 100ms 20ms", Uniform},
		{"delay 100ms 20ms distribution normal", Normal},
		{"delay 100ms 20ms distribution pareto", Pareto},
		{"delay 100ms 20ms distribution paretonormal", ParetoNormal},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			// Uniform over [mu-sigma, mu+sigma); tables scale by sigma.
			wantMean, wantSD, wantSkew := 100.0, 20/math.Sqrt(3), 0.0
			if tc.dist != Uniform {
				m, sd, skew := tableMoments(tc.dist)
				wantMean, wantSD, wantSkew = 100+20*m, 20*sd, skew
			}
			q := NewImpairment(MustParse(tc.spec), 7)
			out := simulate(q, n, time.Millisecond, 8)
			mean, sd, ac1, skew := delayStats(out, time.Millisecond)
			within(t, "mean delay ms", mean, wantMean, 4.5*wantSD/math.Sqrt(n))
			within(t, "delay sd ms", sd, wantSD, wantSD*0.02)
			within(t, "skewness", skew, wantSkew, 0.05+wantSkew*0.1)
			within(t, "lag-1 autocorrelation", ac1, 0, 0.02)
			if s := q.Stats(); math.Abs(float64(s.DelayMean)/1e6-mean) > 0.01 {
				t.Errorf("Stats.DelayMean %v, measured %.3fms", s.DelayMean, mean)
			}
		})
	}
}

func TestUniformDelayBounds(t *testing.T) {
	q := NewImpairment(MustParse("delay 100ms 20ms"), 8)
	out := simulate(q, 50_000, time.Millisecond, 8)
	lo, hi := time.Hour, time.Duration(0)
	for _, d := range out {
		delay := d.at - time.Duration(d.idx)*time.Millisecond
		lo, hi = min(lo, delay), max(hi, delay)
	}
	if lo < 80*time.Millisecond || hi >= 120*time.Millisecond || lo > 80100*time.Microsecond || hi < 119900*time.Microsecond {
		t.Errorf("delays span [%v, %v], want [80ms, 120ms)", lo, hi)
	}
	// Jitter larger than the spacing reorders, as in netem.
	inversions := 0
	for i := 1; i < len(out); i++ {
		if out[i].idx < out[i-1].idx {
			inversions++
		}
	}
	if inversions == 0 {
		t.Error("40ms of jitter at 1ms spacing reordered nothing")
	}
	if s := q.Stats(); s.DelayP99 < 118*time.Millisecond || s.DelayP99 > 120*time.Millisecond {
		t.Errorf("p99 %v, want about 119.6ms", s.DelayP99)
	}
}

// TestCorrelatedRandom checks netem's get_crandom: with correlation rho
// successive draws have lag-1 autocorrelation rho and keep the mean.
func TestCorrelatedRandom(t *testing.T) {
	q := NewImpairment(Spec{}, 9)
	for _, rho := range []float64{0, 25, 75} {
		var c crandom
		c.init(rho, q.rng)
		const n = 200_000
		xs := make([]float64, n)
		mean := 0.0
		for i := range xs {
			xs[i] = float64(c.next(q.rng)) / math.MaxUint32
			mean += xs[i]
		}
		mean /= n
		var m2, c1 float64
		for i, x := range xs {
			m2 += (x - mean) * (x - mean)
			if i > 0 {
				c1 += (x - mean) * (xs[i-1] - mean)
			}
		}
		within(t, "mean", mean, 0.5, 0.005)
		within(t, "lag-1 autocorrelation", c1/m2, rho/100, 0.015)
	}
}

// TestDelayCorrelationAsLinux documents a netem property kept on purpose:
// tabledist reduces the correlated draw modulo the jitter range (or the
// table size), which scrambles it, so "delay 100ms 20ms 75%" delays are
// practically uncorrelated in Linux and here alike.
func TestDelayCorrelationAsLinux(t *testing.T) {
	q := NewImpairment(MustParse("delay 100ms 20ms 75%"), 9)
	out := simulate(q, 100_000, time.Millisecond, 8)
	mean, sd, ac1, _ := delayStats(out, time.Millisecond)
	within(t, "lag-1 autocorrelation", ac1, 0, 0.03)
	within(t, "mean delay ms", mean, 100, 0.2)
	within(t, "delay sd ms", sd, 20/math.Sqrt(3), 0.5)
}

// bursts returns the mean length of runs of consecutive losses.
func bursts(n int, out []delivery) (mean float64, count int) {
	got := make([]bool, n)
	for _, d := range out {
		got[d.idx] = true
	}
	run, total := 0, 0
	for _, ok := range append(got, true) {
		if !ok {
			run++
			continue
		}
		if run > 0 {
			count++
			total += run
		}
		run = 0
	}
	return float64(total) / float64(count), count
}

func TestGilbertElliott(t *testing.T) {
	const n = 500_000
	// Simple Gilbert: every datagram in the bad state is lost; a bad
	// spell lasts 1/r datagrams; the loss rate is p/(p+r).
	q := NewImpairment(MustParse("loss gemodel 1% 20%"), 10)
	out := simulate(q, n, time.Millisecond, 8)
	mean, count := bursts(n, out)
	// A burst is geometric with success r: sd sqrt(1-r)/r.
	within(t, "mean burst length", mean, 1/0.2, 4.5*math.Sqrt(0.8)/0.2/math.Sqrt(float64(count)))
	within(t, "loss rate", float64(n-len(out))/n, 0.01/0.21, 0.003)

	// The full model: loss 1-h in the bad state and 1-k in the good one.
	q = NewImpairment(MustParse("loss gemodel 2% 25% 80% 1%"), 11)
	out = simulate(q, n, time.Millisecond, 8)
	pBad := 0.02 / 0.27
	within(t, "loss rate (1-h 80%, 1-k 1%)", float64(n-len(out))/n, (1-pBad)*0.01+pBad*0.8, 0.004)

	// Random loss at the same rate has bursts of about 1/(1-loss).
	q = NewImpairment(MustParse("loss 4.76%"), 12)
	out = simulate(q, n, time.Millisecond, 8)
	mean, _ = bursts(n, out)
	within(t, "random-loss mean burst length", mean, 1/(1-0.0476), 0.02)
}

func TestLossCorrelation(t *testing.T) {
	const n = 200_000
	q := NewImpairment(MustParse("loss 20% 75%"), 13)
	out := simulate(q, n, time.Millisecond, 8)
	mean, _ := bursts(n, out)
	// Uncorrelated 20% loss has bursts of 1/(1-0.2) = 1.25 (± 0.01 here).
	if mean < 1.35 {
		t.Errorf("correlated loss: mean burst %.2f, want clearly above the uncorrelated 1.25", mean)
	}
	t.Logf("loss 20%% 75%%: rate %.3f, mean burst %.2f (netem's correlation also lowers the rate)", float64(n-len(out))/n, mean)
}

func TestRateHoldsBitRate(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		size     int
		spacing  time.Duration // between departures
		bytesSec float64       // payload throughput
	}{
		{"rate 1mbit limit 100000", 100, 800 * time.Microsecond, 125000},
		{"rate 1mbit 28 limit 100000", 100, 1024 * time.Microsecond, 125000 * 100 / 128.0},
		{"rate 1mbit 28 53 5 limit 100000", 100, 3 * 58 * 8 * time.Microsecond, 100 / (3 * 58 * 8e-6)}, // 128 bytes → 3 cells of 53+5
		{"rate 10mbit limit 100000", 1200, 960 * time.Microsecond, 1.25e6},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			// Offer twice the link's capacity so the queue never empties.
			q := NewImpairment(MustParse(tc.spec), 14)
			out := simulate(q, 20000, tc.spacing/2, tc.size)
			for i := 1; i < len(out); i++ {
				if gap := out[i].at - out[i-1].at; gap != tc.spacing {
					t.Fatalf("departures %d and %d %v apart, want %v", i-1, i, gap, tc.spacing)
				}
			}
			elapsed := (out[len(out)-1].at - out[0].at).Seconds()
			within(t, "payload bytes/s", float64(len(out)-1)*float64(tc.size)/elapsed, tc.bytesSec, tc.bytesSec*0.001)
		})
	}
}

func TestRateWithDelayAndLimit(t *testing.T) {
	// netem counts a datagram's delay from the last queued one's
	// departure: behind a busy queue the delay is already spent, so
	// departures follow the first at the serialisation spacing.
	q := NewImpairment(MustParse("delay 50ms rate 1mbit"), 15)
	out := simulate(q, 20, 100*time.Microsecond, 100)
	for i, d := range out {
		if want := 50*time.Millisecond + time.Duration(i+1)*800*time.Microsecond; d.at != want {
			t.Fatalf("departure %d at %v, want %v", i, d.at, want)
		}
	}
	q = NewImpairment(MustParse("delay 50ms rate 1mbit limit 10"), 15)
	simulate(q, 100, 100*time.Microsecond, 100)
	if s := q.Stats(); s.Overlimit == 0 || s.Forwarded+s.Overlimit != 100 {
		t.Errorf("limit 10 at 8x the rate: %+v", s)
	}
}

func TestDeterministic(t *testing.T) {
	spec := MustParse("delay 30ms 10ms 20% distribution normal loss gemodel 2% 30% duplicate 3% reorder 10% corrupt 2% rate 5mbit")
	run := func(seed uint64) []delivery {
		return simulate(NewImpairment(spec, seed), 5000, 500*time.Microsecond, 64)
	}
	a, b, c := run(42), run(42), run(43)
	equal := func(x, y []delivery) bool {
		return slices.EqualFunc(x, y, func(d, e delivery) bool {
			return d.idx == e.idx && d.at == e.at && bytes.Equal(d.p.Data, e.p.Data) &&
				d.p.Duplicate == e.p.Duplicate && d.p.Reordered == e.p.Reordered && d.p.Corrupted == e.p.Corrupted
		})
	}
	if !equal(a, b) {
		t.Fatal("same seed, same input, different output")
	}
	if equal(a, c) {
		t.Fatal("different seeds gave identical output")
	}
}

func TestZeroSpecPassesThrough(t *testing.T) {
	q := NewImpairment(Spec{}, 1)
	out := simulate(q, 1000, time.Millisecond, 8)
	for i, d := range out {
		if d.idx != i || d.at != time.Duration(i)*time.Millisecond {
			t.Fatalf("datagram %d: %+v", i, d)
		}
	}
}
