package reliability

import "testing"

// TestRedundancyFor: new reliable data goes out once on a path that lost
// nothing, or too little to matter, with parity frames only at the
// start, before 32 packets were resolved; on a lossy path the parity
// rate and the copies (for frames that get no parity) rise with the
// measured loss. Before the loss window has its samples the early
// estimate (losses against acks, spurious losses not counted) decides.
func TestRedundancyFor(t *testing.T) {
	for _, c := range []struct {
		name   string
		st     AckStats
		copies int
		parity float64
	}{
		{"nothing resolved", AckStats{}, 1, startupParity},
		{"early, clean", AckStats{PacketsAcked: 20}, 1, startupParity},
		{"early, clean, 32 resolved", AckStats{PacketsAcked: 32}, 1, 0},
		{"early, spurious losses only", AckStats{PacketsAcked: 40, PacketsLost: 3, SpuriousLosses: 3}, 1, 0},
		{"early, a stray loss", AckStats{PacketsAcked: 39, PacketsLost: 1}, 1, 0},
		{"early, 2 lost of 40", AckStats{PacketsAcked: 38, PacketsLost: 2}, 3, 0.5},
		{"early, 4 lost of 20", AckStats{PacketsAcked: 16, PacketsLost: 4}, 4, 1.5},
		{"measured clean", AckStats{LossSamples: 1024, PacketsAcked: 5000, PacketsLost: 3}, 1, 0},
		{"measured 1 %", AckStats{LossSamples: 1024, Loss: 0.01}, 1, 0},
		{"measured 2 %", AckStats{LossSamples: 1024, Loss: 0.02}, 2, 0.5},
		{"measured 5 %", AckStats{LossSamples: 1024, Loss: 0.05}, 3, 0.5},
		{"measured 10 %", AckStats{LossSamples: 1024, Loss: 0.10}, 3, 1},
		{"measured 20 %", AckStats{LossSamples: 1024, Loss: 0.20}, MaxCopies, 1.5},
		{"measured 60 %", AckStats{LossSamples: 1024, Loss: 0.60}, MaxCopies, 1.5},
	} {
		got := RedundancyFor(c.st)
		if got.Copies != c.copies || got.Parity != c.parity {
			t.Errorf("%s: %d copies, parity %v (loss estimate %.3f), want %d and %v", c.name, got.Copies, got.Parity, c.st.LossEstimate(), c.copies, c.parity)
		}
	}
}
