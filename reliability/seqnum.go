package reliability

// Packet numbers are 64-bit and never repeat within a session; the session
// header carries their low 16 bits (proto.Header.Seq and Ack). Packet
// number 0 is never sent, so a header with Ack 0 and AckBits 0 from a peer
// that has received nothing acknowledges nothing.

const (
	seqSpace = 1 << 16 // distinct 16-bit sequence numbers
	seqHalf  = 1 << 15 // reconstruction reach either side of the reference
)

// ExpandSeq reconstructs the 64-bit packet number whose low 16 bits are seq
// and which lies nearest to ref (normally the largest packet number
// received so far): the result is in (ref-32768, ref+32768], clamped to
// [0, 2^64-1] at the ends of the range. It is correct as long as fewer than
// 32768 consecutive packets went missing, far longer than any connection
// timeout at game send rates.
func ExpandSeq(ref uint64, seq uint16) uint64 {
	cand := ref&^(seqSpace-1) | uint64(seq)
	switch {
	case cand+seqHalf <= ref && cand <= ^uint64(0)-seqSpace:
		// cand is 32768 or more behind ref: the next wrap is nearer.
		cand += seqSpace
	case cand > ref+seqHalf && ref+seqHalf > ref && cand >= seqSpace:
		// cand is more than 32768 ahead of ref: the previous wrap is nearer.
		cand -= seqSpace
	}
	return cand
}

// expandAck reconstructs the packet number a peer's Ack field names, given
// that it must be one we already sent: the newest packet number at or
// below last whose low 16 bits are ack. ok is false if that would be
// below 1 (no such packet was sent).
func expandAck(last uint64, ack uint16) (pn uint64, ok bool) {
	back := uint64(uint16(last) - ack)
	if back >= last {
		return 0, false
	}
	return last - back, true
}

// SeqNewer reports whether 16-bit sequence a is newer than b, treating the
// space as circular: a is newer if it is 1 to 32767 steps ahead of b.
func SeqNewer(a, b uint16) bool {
	d := a - b
	return d != 0 && d < seqHalf
}
