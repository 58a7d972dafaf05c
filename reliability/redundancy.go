package reliability

import "math"

// Redundancy is how a connection protects new reliable data against
// loss, as a pure function of the path's measured loss
// (RedundancyFor): parity frames over a sliding window of the packets
// that carry it (ParitySender), or copies for a small frame (CopyLimit)
// or one too large for a parity frame to follow it in one packet. A
// clean path pays nothing; a lossy one pays as its loss rate calls for.
type Redundancy struct {
	// Parity is how many parity frames go out per packet of new data;
	// 0: none.
	Parity float64
	// Copies is how many times a frame that gets no parity goes out
	// (1: once, no copy).
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
	// data goes out once, and a loss costs a retransmission.
	CleanLoss = 0.01
	// CopyLimit is the largest reliable frame (its data, in bytes) that
	// gets copies rather than parity on a lossy path: its copies cost a
	// few hundred bytes at most, and the small messages of a game
	// (inputs, commands, chat) want the shortest tail, which a copy right
	// after the packet gives (a parity frame may come a tick later).
	CopyLimit = 256
	// minLossSamples is how many resolved packets Loss needs before it
	// replaces the early estimate (see LossEstimate).
	minLossSamples = 32
	// startupParity is the parity rate until minLossSamples packets
	// were resolved, when nothing shows yet whether the path is clean:
	// at 20 % loss the first messages of a connection, lost before the
	// second loss was detected, waited for KCP's first retransmission
	// timeout (200 ms, no RTT sample yet), and in a 10 s echo they were
	// its p99. A clean path pays about 16 parity frames for it.
	startupParity = 0.5
	// minEarlyLosses is how many packets the early estimate needs lost
	// before it says anything: one stray drop on a clean path (a full
	// socket buffer) is not a loss rate.
	minEarlyLosses = 2
)

// RedundancyFor says how new reliable data travels at the loss st
// measured (LossEstimate). On a clean path it goes out once, with
// parity at startupParity only until 32 packets were resolved. Beyond
// CleanLoss it is covered by parity: one frame per two packets of new
// data up to 8 % loss, one per packet up to 15 %, three per two beyond.
// At 5 % loss on the echo of bench/README.md ("Reliable messaging")
// that costs half a packet per message and takes the p99 to about 105
// ms in virtual time, 0.65 × kcp-go's (the loss costs a tick for half
// the lost packets, which wait for the next parity frame, and two or
// more when a second packet of the two ticks is lost too); one frame
// per packet would give copies' tail (about 85 ms) for twice kcp-go's
// bytes, where this sends 1.43 times, and 0.55 or 0.6 frames per packet
// left the p99 at 102 ms. At 20 % loss three per two give p99 about
// 145 ms for 6.2 KB, against copies' 196 ms for 10.7 KB.
//
// Copies, for a frame that gets no parity, are as many as make losing
// every one less likely than ResidualLoss (3 at 5 %, 4 from 18 %), at
// least two and at most MaxCopies.
func RedundancyFor(st AckStats) Redundancy {
	loss := st.LossEstimate()
	if loss <= CleanLoss {
		if st.LossSamples < minLossSamples && st.PacketsAcked+st.PacketsLost < minLossSamples {
			return Redundancy{Copies: 1, Parity: startupParity}
		}
		return Redundancy{Copies: 1}
	}
	n := int(math.Ceil(math.Log(ResidualLoss) / math.Log(loss)))
	r := Redundancy{Copies: min(max(n, 2), MaxCopies), Parity: 1.5}
	switch {
	case loss <= 0.08:
		r.Parity = 0.5
	case loss <= 0.15:
		r.Parity = 1
	}
	return r
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
