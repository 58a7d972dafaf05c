package session

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// tickSink records the tick at which each numbered message arrived.
type tickSink struct {
	at   map[int]int
	tick *int
}

func (c *tickSink) Message(m *Message, _ *PacketInfo) {
	c.at[int(m.Data[0])|int(m.Data[1])<<8] = *c.tick
}
func (c *tickSink) Frame(proto.FrameType, []byte, *PacketInfo) error   { return nil }
func (c *tickSink) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte { return b }
func (c *tickSink) Delivered(uint64)                                   {}
func (c *tickSink) Lost(uint64)                                        {}

// link is a session's Output onto one direction of a netem path.
type link struct {
	q   *netem.Impairment
	now time.Time
}

func (l *link) Buffer() []byte { return make([]byte, 0, 1500) }
func (l *link) Emit(p []byte)  { l.q.Enqueue(l.now, netem.Packet{Data: p}) }

// deliver hands to s every packet of l due by now.
func (l *link) deliver(s *Session, now time.Time) {
	for p, ok := l.q.Dequeue(now); ok; p, ok = l.q.Dequeue(now) {
		h, _, err := proto.ParseHeader(p.Data)
		if err != nil {
			continue
		}
		if pn, payload, _, ok := s.Open(p.Data, &h); ok {
			s.Receive(now, &h, pn, len(p.Data), payload)
		}
	}
}

// newPair returns the two sessions of one connection, a and b (with
// handlers ha and hb), made at now, and the paths between them, a netem
// impairment of spec each way: a sends on ab, b on ba.
func newPair(t *testing.T, now time.Time, spec string, ha, hb Handler) (a, b *Session, ab, ba *countingLink) {
	t.Helper()
	var k1, k2 [32]byte
	k1[0], k2[0] = 1, 2
	sp, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(tx, rx *[32]byte, h Handler) Config {
		return Config{ID: 7, MaxPacket: 1200, TxKey: tx, RxKey: rx, Heartbeat: time.Second, Timeout: time.Minute, Handler: h}
	}
	if a, err = New(cfg(&k1, &k2, ha), now); err != nil {
		t.Fatal(err)
	}
	if b, err = New(cfg(&k2, &k1, hb), now); err != nil {
		t.Fatal(err)
	}
	ab = &countingLink{link: link{q: netem.NewImpairment(sp, 1)}}
	ba = &countingLink{link: link{q: netem.NewImpairment(sp, 2)}}
	return a, b, ab, ba
}

// TestRedundantReliableDelivery runs two sessions in virtual time over a
// link with 2 ticks of one-way delay and 5 % loss each way, a 1 KB
// reliable message every tick, and checks the parity over new reliable
// data: a single loss costs at most a tick, so at least 98 % of messages
// arrive within one tick of the base delay (the rest wait for a second
// parity frame, or behind a message no parity frame could rebuild).
func TestRedundantReliableDelivery(t *testing.T) {
	hist, _, _ := redundancyRun(t, "delay 33ms loss 5%", 1024) // 2 ticks
	t.Logf("delivery delay in ticks: %v", hist)
	if fast := hist[2] + hist[3]; fast < 2900*98/100 {
		t.Fatalf("%d of 2900 messages within 3 ticks, want 98 %%: %v", fast, hist)
	}
}

// TestCopiesBurstKeepsFirstFrames: a tick whose new reliable frames
// exceed the copy budget still gets copies of its first frames (the ones
// the rest wait for in order), whole frames only, within the budget.
func TestCopiesBurstKeepsFirstFrames(t *testing.T) {
	var burst []byte
	for i := range 10 {
		f := proto.ReliableFrame{Data: make([]byte, 1000+i)}
		burst, _ = f.Append(burst)
	}
	frameLen := func(b []byte) int {
		_, k, err := proto.SkipFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	limit := 3500
	owed := appendWhole([]byte{}, burst, limit)
	want := 0
	for n := 0; n < 3; n++ {
		want += frameLen(burst[want:])
	}
	if len(owed) != want || string(owed) != string(burst[:want]) {
		t.Fatalf("owed %d bytes, want the first 3 frames (%d bytes)", len(owed), want)
	}
	if more := appendWhole(owed, burst, limit); len(more) != len(owed) {
		t.Fatalf("a full budget took %d more bytes", len(more)-len(owed))
	}
}

// countingLink counts the packets it carries, and the large ones (a 1
// KB message's).
type countingLink struct {
	link
	big, all int
}

func (l *countingLink) Emit(p []byte) {
	l.all++
	if len(p) > 1000 {
		l.big++
	}
	l.link.Emit(p)
}

// TestFlushCopies: on a lossy link a no-delay message too large for a
// parity frame to follow it in one packet (Send then Flush between two
// ticks) gets its first copy right after its packet, as a tick's message
// does after the tick's, and then one copy fewer in the following
// ticks; a Flush does not renew the copies of the tick's own messages.
func TestFlushCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tick := 0
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		a, b, ab, ba := newPair(t, time.Now(), "delay 33ms loss 5%", nop, nop)
		const size = 1120 // its frame's data (1148 bytes) leaves no room for a parity frame
		step := func(send, flush bool) {
			time.Sleep(time.Second / 60)
			now := time.Now()
			ab.now, ba.now = now, now
			if send {
				a.Send(Reliable, 1, false, 0, make([]byte, size))
				if flush {
					a.Flush(now, Ticks{}, ab)
					return
				}
			}
			a.Tick(now, Ticks{}, SendAlways, ab)
			b.Tick(now, Ticks{}, SendAlways, ba)
			ab.deliver(b, now)
			ba.deliver(a, now)
		}
		for range 600 { // the loss rate is measured: 3 copies at 5 %
			step(false, false)
		}
		if n := copiesFor(a.acks.Stats()); n != 3 {
			t.Fatalf("copiesFor = %d at %.3f loss, want 3", n, a.acks.Stats().Loss)
		}
		for range 20 {
			step(false, false) // everything acknowledged
		}
		count := func(what string, want int, steps ...[2]bool) {
			t.Helper()
			ab.big = 0
			var per []int
			for _, s := range steps {
				before := ab.big
				step(s[0], s[1])
				per = append(per, ab.big-before)
			}
			if per[0] != 2 || ab.big != want {
				t.Errorf("%s: large packets per step %v, want 2 at once and %d in all", what, per, want)
			}
		}
		onTick, flushed, idle := [2]bool{true, false}, [2]bool{true, true}, [2]bool{false, false}
		count("a tick's message", 3, onTick, idle, idle, idle)
		for range 20 {
			step(false, false)
		}
		count("a flushed message", 3, flushed, idle, idle, idle)
		for range 20 {
			step(false, false)
		}
		// A tick's message, then a flushed one before the next tick: each
		// is sent 3 times.
		count("a tick's and a flushed message", 6, onTick, flushed, idle, idle, idle)
	})
}

// TestSendHeld: a paced owner's off ticks (SendHeld) send nothing for
// the acks owed, which go with its next SendAlways packet; data queued
// goes at once whatever the mode, and a keep-alive after a heartbeat of
// silence.
func TestSendHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tick := 0
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		a, b, ab, ba := newPair(t, time.Now(), "delay 0ms", nop, nop)
		sent := func(l *countingLink) int { return l.all }
		step := func(mode SendMode) (fromB int) {
			time.Sleep(time.Second / 60)
			now := time.Now()
			ab.now, ba.now = now, now
			a.Send(Unreliable, 1, false, 0, []byte{0, 1}) // a client's input
			a.Tick(now, Ticks{}, SendAlways, ab)
			ab.deliver(b, now)
			before := sent(ba)
			b.Tick(now, Ticks{}, mode, ba)
			ba.deliver(a, now)
			return sent(ba) - before
		}
		for range 3 {
			if n := step(SendHeld); n != 0 {
				t.Fatalf("an off tick with acks owed sent %d packets", n)
			}
		}
		pn := a.acks.Stats().PacketsAcked
		if n := step(SendAlways); n != 1 {
			t.Fatalf("a due tick sent %d packets, want 1", n)
		}
		if got := a.acks.Stats().PacketsAcked - pn; got != 4 {
			t.Fatalf("the due tick's packet acknowledged %d packets, want the 4 held", got)
		}
		if n := step(SendOwed); n != 1 {
			t.Fatalf("an unpaced tick with an ack owed sent %d packets, want 1", n)
		}
		// The reliable channel's acks wait too: b owes one for a's
		// message, which is not data of its own.
		a.Send(Reliable, 1, false, 0, []byte{2, 0})
		if n := step(SendHeld); n != 0 {
			t.Fatalf("an off tick owing a reliable ack sent %d packets", n)
		}
		if b.rel.Pending() == 0 {
			t.Fatal("no reliable ack was owed: the check above proves nothing")
		}
		if n := step(SendAlways); n != 1 {
			t.Fatalf("a due tick owing a reliable ack sent %d packets, want 1", n)
		}
		b.Send(Reliable, 1, false, 0, []byte{1, 0})
		if n := step(SendHeld); n == 0 {
			t.Fatal("an off tick held queued data")
		}
		for range 5 {
			step(SendAlways)
		}
		if n := b.ReliableQueued(); n != 0 {
			t.Fatalf("b's message not acknowledged after 5 ticks: %d segments queued", n)
		}
		// A second of silence: the held side still sends keep-alives.
		keep := 0
		for range 70 {
			time.Sleep(time.Second / 60)
			before := sent(ba)
			b.Tick(time.Now(), Ticks{}, SendHeld, ba)
			keep += sent(ba) - before
		}
		if keep != 1 {
			t.Fatalf("%d keep-alives in 70 silent held ticks, want 1", keep)
		}
	})
}

// TestRedundancyFollowsLoss: new reliable data goes out once on a clean
// link (one large packet per 1 KB message, no copy, and no parity frame
// but the start-up's, before 32 packets were resolved), and parity
// frames go on on a lossy one, one per two messages at 5 %.
func TestRedundancyFollowsLoss(t *testing.T) {
	for _, c := range []struct {
		spec   string
		parity float64 // parity frames per message, at least
	}{{"delay 33ms", 0}, {"delay 33ms loss 5%", 0.45}} {
		synctest.Test(t, func(t *testing.T) {
			tick := 0
			nop := &tickSink{at: map[int]int{}, tick: &tick}
			a, b, ab, ba := newPair(t, time.Now(), c.spec, nop, nop)
			const n = 600
			for tick = 0; tick < n+10; tick++ {
				time.Sleep(time.Second / 60)
				now := time.Now()
				if tick < n {
					a.Send(Reliable, 1, false, 0, make([]byte, 1024))
				}
				ab.now, ba.now = now, now
				a.Tick(now, Ticks{}, SendOwed, ab)
				b.Tick(now, Ticks{}, SendOwed, ba)
				ab.deliver(b, now)
				ba.deliver(a, now)
			}
			st := a.Stats()
			t.Logf("%s: %d large packets for %d messages, %d copies, %d parity frames, %d frames rebuilt", c.spec, ab.big, n, st.ReliableRepeats, st.ParityFrames, b.Stats().ReliableRebuilt)
			if st.ReliableRepeats != 0 {
				t.Fatalf("%s: %d copies of 1 KB messages, want none (parity or nothing)", c.spec, st.ReliableRepeats)
			}
			if c.parity == 0 {
				if st.ParityFrames > 20 || ab.big != n+int(st.ParityFrames) {
					t.Fatalf("%s: %d parity frames and %d large packets for %d messages, want at most 20 (the start-up's) and one a message", c.spec, st.ParityFrames, ab.big, n)
				}
				return
			}
			if per := float64(st.ParityFrames) / n; per < c.parity || per > 0.6 {
				t.Fatalf("%s: %.2f parity frames per message, want %.2f to 0.6", c.spec, per, c.parity)
			}
		})
	}
}
