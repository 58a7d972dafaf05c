package reliability

import "math"

// Redundancy is how a connection protects new reliable data against
// loss: how many times it goes out (Copies; 1 is once, no copy). It is
// a pure function of the path's measured loss (RedundancyFor), so a
// clean path pays nothing and a lossy one pays as its loss rate calls
// for.
type Redundancy struct {
	Copies int
}

// Redundancy limits and targets.
const (
	// MaxCopies bounds how many times new reliable data goes out.
	MaxCopies = 4
	// ResidualLoss is the probability that every copy of new reliable
	// data is lost which RedundancyFor aims for.
	ResidualLoss = 1e-3
	// CleanLoss is the loss rate at or below which a path is clean: new
	// data goes out once and a loss costs a retransmission.
	CleanLoss = 0.01
	// minLossSamples is how many resolved packets Loss needs before it
	// replaces the early estimate (see LossEstimate).
	minLossSamples = 32
	// minEarlyLosses is how many packets the early estimate needs lost
	// before it says anything: one stray drop on a clean path (a full
	// socket buffer) is not a loss rate.
	minEarlyLosses = 2
)

// RedundancyFor says how new reliable data travels at the loss st
// measured (LossEstimate). On a clean path it goes out once. Beyond
// CleanLoss it goes out as many times as make losing every copy less
// likely than ResidualLoss (3 at 5 %, 4 from 18 %), at least twice and
// at most MaxCopies. A lost copy then costs at most a tick instead of a
// retransmission timeout, and the messages behind it in order do not
// wait either.
func RedundancyFor(st AckStats) Redundancy {
	loss := st.LossEstimate()
	if loss <= CleanLoss {
		return Redundancy{Copies: 1}
	}
	n := int(math.Ceil(math.Log(ResidualLoss) / math.Log(loss)))
	return Redundancy{Copies: min(max(n, 2), MaxCopies)}
}

// LossEstimate is the loss rate to act on: Loss once minLossSamples
// packets have left the ack window; before that, the share of the
// packets resolved so far that were judged lost and never acknowledged
// after all (PacketsLost less SpuriousLosses, against PacketsAcked),
// which shows a lossy path about a round trip after its second loss
// instead of some 65 packets later. 0 until two packets were lost.
func (s AckStats) LossEstimate() float64 {
	if s.LossSamples >= minLossSamples {
		return s.Loss
	}
	lost := s.PacketsLost - min(s.SpuriousLosses, s.PacketsLost)
	if lost < minEarlyLosses {
		return 0
	}
	return float64(lost) / float64(lost+s.PacketsAcked)
}
