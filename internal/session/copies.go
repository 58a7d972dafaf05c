package session

import (
	"encoding/binary"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/reliability"
)

// copies sends new reliable data more than once on lossy links: the
// first copy right after the packets that carried it (the tick's, or a
// Flush's), the others in the following ticks (see copiesFor). hist
// holds the reliable frames with new data of the last ticks (hist[cur]
// collects this tick's) and how many more times each goes out. At every
// tick the ones still owed a copy are gathered in owed and go out once
// more, in the first packet if they fit, else in packets of their own.
type copies struct {
	hist [maxCopies - 1]tickFrames
	cur  int
	owed []byte
	// flushing: the frames being sent come from a Flush; flushMark is
	// where that Flush's frames start in hist[cur].flushed.
	flushing  bool
	flushMark int
}

// tickFrames is one tick's new reliable frames and the copies they are
// still owed: the tick's own, and those that no-delay Flushes sent
// between this tick and the next (their first copy already went out).
type tickFrames struct {
	tick, flushed owedRun
}

// owedRun is reliable frames and how many more copies of them go out.
type owedRun struct {
	frames []byte
	left   int
}

// take appends one more copy of the run's whole frames that fit within
// limit bytes of owed, if it is still owed one.
func (o *owedRun) take(owed []byte, limit int) []byte {
	if o.left == 0 {
		return owed
	}
	o.left--
	return appendWhole(owed, o.frames, limit)
}

func (o *owedRun) reset() { o.frames, o.left = o.frames[:0], 0 }

// maxCopies bounds how many times new reliable data goes out.
const maxCopies = reliability.MaxCopies

// maxRepeat bounds the packets of repeated reliable data per tick. A
// retransmission releases the messages that waited behind it at once,
// and the peer answers them in one tick, so a tick's copies come in
// bursts: with a bound of 4 packets those bursts lost their copies and
// caused the next retransmission. At 20 % loss (TestEchoLatencyVirtual20)
// 8 takes the echo's p99 from 262 to 216 ms for 5 % more bytes; 16 gives
// 205 ms for the same bytes, 5 copies instead of 4 give 177 ms for 23 %
// more.
const maxRepeat = 8

// copiesFor says how many times new reliable data goes out (twice in its
// tick, then once in each following tick): reliability.RedundancyFor at
// the loss the acks measured, so none but the first on a clean path.
// A lost copy then costs at most a tick instead of a retransmission
// timeout, and the messages behind it in order do not wait either,
// which keeps the tail latency of game messages near one round trip,
// at the price of sending reliable data more than once on lossy links
// (KCP drops the duplicates).
func copiesFor(st reliability.AckStats) int { return reliability.RedundancyFor(st).Copies }

// gather collects in owed the earlier ticks' reliable frames still owed a
// copy, oldest first, and starts a new tick's collection.
func (c *copies) gather(room int) {
	c.owed = c.owed[:0]
	limit := maxRepeat * room
	for i := range len(c.hist) {
		r := &c.hist[(c.cur+1+i)%len(c.hist)]
		c.owed = r.tick.take(c.owed, limit)
		c.owed = r.flushed.take(c.owed, limit)
	}
	c.cur = (c.cur + 1) % len(c.hist)
	c.hist[c.cur].tick.reset()
	c.hist[c.cur].flushed.reset()
}

// owedNow adds the first copy of this tick's frames to what is owed, to
// go in packets of their own right after the tick's. A lost packet then
// costs no tick at all when its copy arrives; the later copies still come
// a tick apart, for losses that last. What it gained and cost in virtual
// and real echoes is in bench/README.md ("Reliable messaging").
func (c *copies) owedNow(room int) {
	c.owed = c.hist[c.cur].tick.take(c.owed, maxRepeat*room)
}

// beginFlush marks the frames a Flush is about to send as no-delay ones.
func (c *copies) beginFlush() {
	c.flushing = true
	c.flushMark = len(c.hist[c.cur].flushed.frames)
}

// endFlush adds the first copy of the frames the Flush sent to what is
// owed, to go right after its packets: as for a tick's frames, a lost
// packet then costs nothing when its copy arrives (measured in
// bench/README.md, "Reliable messaging", the no-delay rows).
func (c *copies) endFlush() {
	c.flushing = false
	c.owed = append(c.owed[:0], c.hist[c.cur].flushed.frames[c.flushMark:]...)
}

// appendWhole appends to owed the whole frames at the start of frames
// that fit within limit bytes of owed. A burst (the messages that waited
// behind a retransmission, released together) thus still gets copies of
// its first frames, the ones the rest wait for in order.
func appendWhole(owed, frames []byte, limit int) []byte {
	n := 0
	for n < len(frames) {
		_, k, err := proto.SkipFrame(frames[n:])
		if err != nil || len(owed)+n+k > limit {
			break
		}
		n += k
	}
	return append(owed, frames[:n]...)
}

// appendOwed puts the owed copies into the tick's first packet when they
// all fit in room and in maxFrames frames, and reports how many frames it
// added.
func (c *copies) appendOwed(b []byte, room, maxFrames int, st *Stats) ([]byte, int) {
	if len(c.owed) == 0 || len(c.owed) > room {
		return b, 0
	}
	n := 0
	for off := 0; off < len(c.owed); n++ {
		_, k, err := proto.SkipFrame(c.owed[off:])
		if err != nil {
			return b, 0
		}
		off += k
	}
	if n > maxFrames {
		return b, 0
	}
	b = append(b, c.owed...)
	c.owed = c.owed[:0]
	st.ReliableRepeats++
	return b, n
}

// noteSent records the reliable frame just written, which carries data
// (KCP's retransmissions included), for its n − 1 copies: a segment
// whose copies were all lost is retransmitted only once a loss is
// detected (about a round trip later), and the messages behind it in
// order wait for it, so its retransmission gets copies too (at 20 % loss
// this takes the echo's p99 from 285–523 ms to 260–293 ms over 3,000
// messages, for 4 % more packets).
//
// A Flush's frames are kept apart from the tick's: their first copy
// leaves with the Flush (endFlush), so they are owed one copy fewer in
// the following ticks, and a Flush does not renew the copies of the
// tick's frames.
func (c *copies) noteSent(frame []byte, room, n int) {
	run, left := &c.hist[c.cur].tick, n-1
	if c.flushing {
		run, left = &c.hist[c.cur].flushed, n-2
	}
	if len(run.frames)+len(frame) > maxRepeat*room {
		return
	}
	run.frames = append(run.frames, frame...)
	run.left = left
}

// next returns the next run of whole owed frames that fits one packet's
// room and frame limit, or nil when none is left; what cannot fit is
// dropped.
func (c *copies) next(room int) []byte {
	n := 0
	for frames := 0; n < len(c.owed) && frames < proto.MaxFramesPerPacket; frames++ {
		_, k, err := proto.SkipFrame(c.owed[n:])
		if err != nil || n+k > room {
			break
		}
		n += k
	}
	if n == 0 {
		c.owed = c.owed[:0]
		return nil
	}
	body := c.owed[:n]
	c.owed = c.owed[n:]
	return body
}

// pushes reports whether a reliable frame's data (KCP segments) holds a
// data segment, not only acknowledgements.
func pushes(d []byte) bool {
	for off := 0; off+kcpHeaderSize <= len(d); {
		if d[off+4] == kcpCmdPush {
			return true
		}
		off += kcpHeaderSize + int(binary.LittleEndian.Uint32(d[off+20:]))
	}
	return false
}

// KCP segment header: conv u32, cmd u8, frg u8, wnd u16, ts u32, sn u32,
// una u32, len u32 (at offset 20).
const (
	kcpHeaderSize = 24
	kcpCmdPush    = 81
)
