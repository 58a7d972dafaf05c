package reliability

import "testing"

// TestRedundancyFor: new reliable data goes out once on a path that lost
// nothing, or too little to matter, and more often as the measured loss
// rises; before the loss window has its samples the early estimate
// (losses against acks, spurious losses not counted) decides.
func TestRedundancyFor(t *testing.T) {
	for _, c := range []struct {
		name   string
		st     AckStats
		copies int
	}{
		{"nothing resolved", AckStats{}, 1},
		{"early, clean", AckStats{PacketsAcked: 20}, 1},
		{"early, spurious losses only", AckStats{PacketsAcked: 20, PacketsLost: 3, SpuriousLosses: 3}, 1},
		{"early, a stray loss", AckStats{PacketsAcked: 19, PacketsLost: 1}, 1},
		{"early, 2 lost of 40", AckStats{PacketsAcked: 38, PacketsLost: 2}, 3},
		{"early, 4 lost of 20", AckStats{PacketsAcked: 16, PacketsLost: 4}, 4},
		{"measured clean", AckStats{LossSamples: 1024, PacketsAcked: 5000, PacketsLost: 3}, 1},
		{"measured 1 %", AckStats{LossSamples: 1024, Loss: 0.01}, 1},
		{"measured 2 %", AckStats{LossSamples: 1024, Loss: 0.02}, 2},
		{"measured 5 %", AckStats{LossSamples: 1024, Loss: 0.05}, 3},
		{"measured 20 %", AckStats{LossSamples: 1024, Loss: 0.20}, MaxCopies},
		{"measured 60 %", AckStats{LossSamples: 1024, Loss: 0.60}, MaxCopies},
	} {
		if got := RedundancyFor(c.st).Copies; got != c.copies {
			t.Errorf("%s: %d copies (loss estimate %.3f), want %d", c.name, got, c.st.LossEstimate(), c.copies)
		}
	}
}
