package reliability

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// fateRecorder checks the AckListener contract against ground truth.
type fateRecorder struct {
	delivered map[uint64]int
	lost      map[uint64]int
	errs      []string
	truth     *map[uint64]bool // packets the peer really received
}

func newFateRecorder(truth *map[uint64]bool) *fateRecorder {
	return &fateRecorder{delivered: map[uint64]int{}, lost: map[uint64]int{}, truth: truth}
}

func (r *fateRecorder) Delivered(pn uint64) {
	r.delivered[pn]++
	if r.delivered[pn] > 1 {
		r.errs = append(r.errs, fmt.Sprintf("pn %d delivered %d times", pn, r.delivered[pn]))
	}
	if !(*r.truth)[pn] {
		r.errs = append(r.errs, fmt.Sprintf("pn %d delivered but the peer never received it (false ack)", pn))
	}
}

func (r *fateRecorder) Lost(pn uint64) {
	r.lost[pn]++
	if r.lost[pn] > 1 {
		r.errs = append(r.errs, fmt.Sprintf("pn %d lost %d times", pn, r.lost[pn]))
	}
	if r.delivered[pn] > 0 {
		r.errs = append(r.errs, fmt.Sprintf("pn %d lost after delivered", pn))
	}
}

// ackEnd is one side of an ack-only conversation. Packets carry the
// header and, for the test only, the true packet number.
type ackEnd struct {
	acks     *PacketAcks
	out      *netem.Impairment // the link towards the peer
	rec      *fateRecorder
	received map[uint64]bool // true packet numbers received (ground truth for the peer's recorder)
	sentPN   uint64
	errs     []string
	// desynced counts packets whose 16-bit seq expanded to the wrong
	// packet number (expected only after 32768+ consecutive losses); they
	// are dropped, as a failed AEAD open would drop them.
	desynced    int
	allowDesync bool
}

func newAckEnd(peerReceived *map[uint64]bool) *ackEnd {
	e := &ackEnd{received: map[uint64]bool{}}
	e.rec = newFateRecorder(peerReceived)
	e.acks = NewPacketAcks(AckConfig{}, e.rec)
	return e
}

func (e *ackEnd) send(now time.Time) {
	h := proto.Header{Type: proto.PacketKeepAlive, ConnID: 1}
	pn := e.acks.Send(now, &h, proto.HeaderSize+8)
	if pn != e.sentPN+1 {
		e.errs = append(e.errs, fmt.Sprintf("Send returned %d after %d", pn, e.sentPN))
	}
	e.sentPN = pn
	b, _ := h.Append(nil)
	b = binary.LittleEndian.AppendUint64(b, pn)
	e.out.Enqueue(now, netem.Packet{Data: b})
}

func (e *ackEnd) receive(now time.Time, pkt []byte) {
	h, n, err := proto.ParseHeader(pkt)
	if err != nil {
		e.errs = append(e.errs, err.Error())
		return
	}
	truePN := binary.LittleEndian.Uint64(pkt[n:])
	pn, fresh := e.acks.ExpandSeq(h.Seq)
	if !fresh {
		if !e.received[truePN] && e.acks.LargestReceived()-truePN < ReplayWindowSize {
			e.errs = append(e.errs, fmt.Sprintf("fresh packet %d rejected", truePN))
		}
		return
	}
	if pn != truePN {
		e.desynced++
		if !e.allowDesync {
			e.errs = append(e.errs, fmt.Sprintf("seq %d expanded to %d, true %d", h.Seq, pn, truePN))
		}
		return
	}
	e.received[pn] = true
	e.acks.OnReceive(now, &h, pn, len(pkt), 0)
}

func (e *ackEnd) check(t *testing.T, name string) {
	t.Helper()
	for _, s := range append(e.errs, e.rec.errs...) {
		t.Errorf("%s: %s", name, s)
		if t.Failed() && len(e.errs)+len(e.rec.errs) > 10 {
			t.Fatalf("%s: more errors follow", name)
		}
	}
}

type ackScenario struct {
	ab, ba   netem.Spec
	tick     time.Duration
	aPerTick int // packets A sends per tick (B sends one)
	ticks    int
	// optional: per-tick control of who sends and which links are up
	aSends, bSends func(tick int) bool
	abUp, baUp     func(tick int) bool
	bAllowDesync   bool
}

func runAckScenario(t *testing.T, sc ackScenario) (a, b *ackEnd) {
	var aRecv, bRecv map[uint64]bool
	a = newAckEnd(&bRecv)
	b = newAckEnd(&aRecv)
	aRecv, bRecv = a.received, b.received
	b.allowDesync = sc.bAllowDesync
	a.out, b.out = netem.NewImpairment(sc.ab, 11), netem.NewImpairment(sc.ba, 12)
	always := func(int) bool { return true }
	for _, f := range []*func(int) bool{&sc.aSends, &sc.bSends, &sc.abUp, &sc.baUp} {
		if *f == nil {
			*f = always
		}
	}
	if sc.aPerTick == 0 {
		sc.aPerTick = 1
	}
	for i := range sc.ticks {
		now := time.Now()
		for p, ok := a.out.Dequeue(now); ok; p, ok = a.out.Dequeue(now) {
			if sc.abUp(i) {
				b.receive(now, p.Data)
			}
		}
		for p, ok := b.out.Dequeue(now); ok; p, ok = b.out.Dequeue(now) {
			if sc.baUp(i) {
				a.receive(now, p.Data)
			}
		}
		if sc.aSends(i) {
			for range sc.aPerTick {
				a.send(now)
			}
		}
		if sc.bSends(i) {
			b.send(now)
		}
		time.Sleep(sc.tick)
	}
	return a, b
}

// wantLoss is the share of packets a link with spec loses, as netem
// decides it: a packet both duplicated and hit by the loss draw goes out
// once (the two decisions cancel, as in sch_netem), so the rate is
// loss·(1−duplicate). tol is three standard deviations of a rate measured
// over the lossWindowLen packets PacketAcks judges it by.
func wantLoss(spec netem.Spec) (want, tol float64) {
	want = spec.Loss.Percent / 100 * (1 - spec.Duplicate/100)
	return want, 3 * math.Sqrt(want*(1-want)/lossWindowLen)
}

// checkResolved: every packet sent more than a second before the end is
// delivered or lost, and Delivered matches ground truth exactly.
func checkResolved(t *testing.T, name string, e *ackEnd, peerReceived map[uint64]bool, upTo uint64) {
	t.Helper()
	missing := 0
	for pn := uint64(1); pn <= upTo; pn++ {
		d, l := e.rec.delivered[pn], e.rec.lost[pn]
		if d == 0 && l == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d packets never resolved", name, missing, upTo)
	}
}

func TestAcksLossless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 40ms")
		a, b := runAckScenario(t, ackScenario{ab: spec, ba: spec, tick: 10 * time.Millisecond, ticks: 1000})
		a.check(t, "a")
		b.check(t, "b")
		for _, e := range []*ackEnd{a, b} {
			st := e.acks.Stats()
			if st.PacketsLost != 0 || st.Loss != 0 {
				t.Errorf("lossless link: %+v", st)
			}
			if st.PacketsAcked < 990 {
				t.Errorf("only %d acked", st.PacketsAcked)
			}
			// 80 ms path plus up to one tick held at the peer.
			if st.RTT < 80*time.Millisecond || st.RTT > 90*time.Millisecond || st.MinRTT < 80*time.Millisecond {
				t.Errorf("RTT %v min %v, want 80-90 ms", st.RTT, st.MinRTT)
			}
			if st.RTTVar > 10*time.Millisecond {
				t.Errorf("RTTVar %v on a fixed-delay link", st.RTTVar)
			}
		}
		checkResolved(t, "a", a, b.received, a.sentPN-20)
	})
}

func TestAcksLossEstimate(t *testing.T) {
	for _, loss := range []float64{0.01, 0.05, 0.20, 0.40} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spec := netem.MustParse(fmt.Sprintf("delay 50ms 20ms loss %g%% duplicate 5%% reorder 10%%", loss*100))
				a, b := runAckScenario(t, ackScenario{ab: spec, ba: spec, tick: 16 * time.Millisecond, ticks: 20000})
				a.check(t, "a")
				b.check(t, "b")
				for _, e := range []*ackEnd{a, b} {
					st := e.acks.Stats()
					if want, tol := wantLoss(spec); math.Abs(st.Loss-want) > tol {
						t.Errorf("loss estimate %.4f, want %.4f ± %.4f (link: %v)", st.Loss, want, tol, e.out.Stats())
					}
					if st.LossSamples != lossWindowLen {
						t.Errorf("loss samples %d", st.LossSamples)
					}
				}
				checkResolved(t, "a", a, b.received, a.sentPN-100)
				t.Logf("a: %+v; link a→b: %v", a.acks.Stats(), a.out.Stats())
			})
		})
	}
}

// TestAcksWrap runs past several 16-bit wraps with loss and reordering, A
// sending faster than B (more than one packet per B packet).
func TestAcksWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 30ms 5ms loss 10% duplicate 2% reorder 5%")
		a, b := runAckScenario(t, ackScenario{ab: spec, ba: spec, tick: 5 * time.Millisecond, aPerTick: 3, ticks: 70000})
		a.check(t, "a")
		b.check(t, "b")
		if a.sentPN < 3*seqSpace {
			t.Fatalf("only %d packets", a.sentPN)
		}
		checkResolved(t, "a", a, b.received, a.sentPN-100)
		checkResolved(t, "b", b, a.received, b.sentPN-100)
		if want, tol := wantLoss(spec); math.Abs(a.acks.Loss()-want) > tol {
			t.Errorf("loss %.4f, want %.4f ± %.4f (link a→b: %v)", a.acks.Loss(), want, tol, a.out.Stats())
		}
	})
}

// TestAcksSilentPeer: B hears nothing for ten minutes (the A→B link is
// down) while A keeps sending, 120 packets a second: 72,000 packets, past a
// full 16-bit cycle, so B's stale Ack aliases packets A sent during the
// outage. B keeps sending its stale acks. None of A's packets from the
// outage may be reported delivered (the recorder checks every Delivered
// against what B really received). After 32768 consecutive losses B can
// no longer place A's sequence numbers (the documented limit; the
// connection has long timed out), so the test stops at the outage's end.
func TestAcksSilentPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 20ms")
		tick := time.Second / 60
		down0, down1 := 600, 600+60*600 // ticks: 10 s in, 10 min out
		a, b := runAckScenario(t, ackScenario{ab: spec, ba: spec, tick: tick, aPerTick: 2, ticks: down1 + 600,
			abUp: func(i int) bool { return i < down0 || i >= down1 }, bAllowDesync: true})
		a.check(t, "a")
		b.check(t, "b")
		if a.sentPN < uint64(seqSpace+2*down0) {
			t.Fatalf("sent %d", a.sentPN)
		}
		if got := a.acks.Stats().PacketsAcked; got > uint64(2*down0) {
			t.Errorf("%d packets acknowledged, but only %d were sent before the outage", got, 2*down0)
		}
		if b.desynced == 0 {
			t.Error("expected B to lose track of A's sequence after the outage")
		}
		checkResolved(t, "a", a, b.received, uint64(2*down0)-40)
	})
}

// TestAcksIdleSide: B sends nothing for ten minutes while it keeps
// receiving A's packets at 60 Hz (more than 32768 sequence numbers), then
// resumes: its acks must be recognised and nothing falsely acked.
func TestAcksIdleSide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 20ms loss 5%")
		tick := time.Second / 60
		idle0, idle1 := 600, 600+60*600
		a, b := runAckScenario(t, ackScenario{ab: spec, ba: spec, tick: tick, ticks: idle1 + 600,
			bSends: func(i int) bool { return i < idle0 || i >= idle1 }})
		a.check(t, "a")
		b.check(t, "b")
		recent := 0
		for pn := a.sentPN - 300; pn < a.sentPN-20; pn++ {
			if a.rec.delivered[pn] == 1 {
				recent++
			}
		}
		if recent < 250 {
			t.Errorf("after B resumed only %d of 280 recent packets acknowledged", recent)
		}
		// And A idle towards B: B's acks of its own traffic are unaffected.
		checkResolved(t, "b", b, a.received, b.sentPN-20)
	})
}

// TestAcksLateAckAfterLost: a packet declared lost and acknowledged later
// is reported Delivered once, after Lost, and counted spurious.
func TestAcksLateAckAfterLost(t *testing.T) {
	truth := map[uint64]bool{}
	rec := newFateRecorder(&truth)
	a := NewPacketAcks(AckConfig{}, rec)
	now := time.Unix(1000, 0)
	for i := range 10 {
		var h proto.Header
		a.Send(now.Add(time.Duration(i)*time.Millisecond), &h, 100)
	}
	for pn := uint64(1); pn <= 10; pn++ {
		truth[pn] = true
	}
	// Peer header: newest 10, has 9..5 but not 1..4 (bits for 9,8,7,6,5).
	var peer proto.Header
	peer.Seq, peer.Ack, peer.AckBits = 1, 10, 0b11111
	a.OnReceive(now.Add(50*time.Millisecond), &peer, 1, 50, 0)
	for pn := uint64(1); pn <= 4; pn++ {
		if rec.lost[pn] != 1 || rec.delivered[pn] != 0 {
			t.Fatalf("pn %d: lost %d delivered %d", pn, rec.lost[pn], rec.delivered[pn])
		}
	}
	// A reordered older peer packet acknowledges 3 after all.
	peer.Seq, peer.Ack, peer.AckBits = 2, 3, 0
	a.OnReceive(now.Add(60*time.Millisecond), &peer, 2, 50, 0)
	if rec.delivered[3] != 1 || a.Stats().SpuriousLosses != 1 {
		t.Fatalf("late ack: delivered %d spurious %d", rec.delivered[3], a.Stats().SpuriousLosses)
	}
	// Repeats change nothing.
	peer.Seq = 3
	a.OnReceive(now.Add(70*time.Millisecond), &peer, 3, 50, 0)
	if len(rec.errs) != 0 {
		t.Fatal(rec.errs)
	}
	// A duplicate packet number is rejected.
	if a.OnReceive(now, &peer, 3, 50, 0) {
		t.Fatal("duplicate accepted")
	}
}

// TestAcksBitsDeliverOnce: the acks in AckBits deliver each packet once,
// whether it was in flight or judged lost, and never one whose ring slot
// a newer packet took; the acks a header repeats deliver nothing again.
func TestAcksBitsDeliverOnce(t *testing.T) {
	truth := map[uint64]bool{}
	rec := newFateRecorder(&truth)
	a := NewPacketAcks(AckConfig{}, rec)
	now := time.Unix(1000, 0)
	send := func(n int) {
		for range n {
			var h proto.Header
			a.Send(now, &h, 100)
			now = now.Add(time.Millisecond)
		}
	}
	peerPN := uint64(0)
	ack := func(top uint64, bits uint32) {
		peerPN++
		peer := proto.Header{Seq: uint16(peerPN), Ack: uint16(top), AckBits: bits}
		a.OnReceive(now, &peer, peerPN, 50, 0)
	}
	send(40)
	for pn := uint64(1); pn <= 40; pn++ {
		truth[pn] = true
	}
	// 40 and every other one of the 32 before it (39, 37, ... 9).
	ack(40, 0x55555555)
	for pn := uint64(8); pn <= 40; pn++ {
		if want := int(pn % 2); pn == 40 && rec.delivered[pn] != 1 || pn < 40 && rec.delivered[pn] != want {
			t.Fatalf("pn %d delivered %d times", pn, rec.delivered[pn])
		}
	}
	// The rest of them, and the first ones, judged lost by now, all in
	// AckBits of a header that repeats the acks of 40 and the odd ones.
	ack(40, 0xffffffff)
	ack(20, 0x7ffff)
	for pn := uint64(1); pn <= 40; pn++ {
		if rec.delivered[pn] != 1 {
			t.Fatalf("pn %d delivered %d times, lost %d", pn, rec.delivered[pn], rec.lost[pn])
		}
	}
	if st := a.Stats(); st.PacketsAcked != 40 || st.SpuriousLosses == 0 {
		t.Fatalf("acked %d, spurious losses %d", st.PacketsAcked, st.SpuriousLosses)
	}
	// A ring's worth of packets later, acks of packets whose slots were
	// taken again name packets long gone: nothing is delivered, not the
	// packets now in those slots either.
	send(sentRingSize + 40)
	top := a.NextPacketNumber() - 1
	delivered := a.Stats().PacketsAcked
	ack(top-sentRingSize, 0xffffffff)
	if got := a.Stats().PacketsAcked; got != delivered {
		t.Fatalf("acks of forgotten packets delivered %d", got-delivered)
	}
	for pn := top - 32; pn <= top; pn++ {
		truth[pn] = true
	}
	ack(top, 0xffffffff)
	if got := a.Stats().PacketsAcked - delivered; got != 33 {
		t.Fatalf("newest 33 acknowledged: %d delivered", got)
	}
	if len(rec.errs) != 0 {
		t.Fatal(rec.errs)
	}
}

func TestAcksAckDelay(t *testing.T) {
	a := NewPacketAcks(AckConfig{}, nil)
	now := time.Unix(1000, 0)
	var h proto.Header
	exchange := func(i int, rtt, delay time.Duration) {
		a.Send(now, &h, 100)
		peer := proto.Header{Seq: uint16(i), Ack: uint16(i)}
		now = now.Add(rtt)
		a.OnReceive(now, &peer, uint64(i), 60, delay)
	}
	exchange(1, 60*time.Millisecond, 0) // min RTT 60 ms
	for i := 2; i < 50; i++ {
		// 100 ms, of which the peer held our packet 30 ms: path 70 ms.
		exchange(i, 100*time.Millisecond, 30*time.Millisecond)
	}
	st := a.Stats()
	if st.RTT < 69*time.Millisecond || st.RTT > 71*time.Millisecond || st.LatestRTT != 100*time.Millisecond {
		t.Fatalf("ack delay not removed: %+v", st)
	}
	// A delay that would push a sample below the minimum is ignored.
	for i := 50; i < 100; i++ {
		exchange(i, 80*time.Millisecond, 50*time.Millisecond)
	}
	if st := a.Stats(); st.RTT < 79*time.Millisecond || st.RTT > 81*time.Millisecond {
		t.Fatalf("implausible ack delay was applied: %+v", st)
	}
	if got := a.AckDelay(now.Add(7 * time.Millisecond)); got != 7*time.Millisecond {
		t.Fatalf("AckDelay %v", got)
	}
	if a.AckDelayMicros(now.Add(time.Hour)) != 65535 {
		t.Fatal("AckDelayMicros does not saturate")
	}
}

// nopListener keeps the interface call in the measured path.
type nopListener struct{ d, l int }

func (n *nopListener) Delivered(uint64) { n.d++ }
func (n *nopListener) Lost(uint64)      { n.l++ }

// ackStep sends one packet each way between two PacketAcks with no delay,
// dropping every 5th packet of a, so loss detection runs too.
type ackBench struct {
	a, b *PacketAcks
	now  time.Time
	i    int
}

func newAckBench() *ackBench {
	return &ackBench{
		a:   NewPacketAcks(AckConfig{}, &nopListener{}),
		b:   NewPacketAcks(AckConfig{}, &nopListener{}),
		now: time.Unix(1, 0),
	}
}

func (k *ackBench) step() {
	k.now = k.now.Add(16 * time.Millisecond)
	var ha, hb proto.Header
	k.a.Send(k.now, &ha, 1200)
	if k.i%5 != 0 {
		if pn, ok := k.b.ExpandSeq(ha.Seq); ok {
			k.b.OnReceive(k.now, &ha, pn, 1200, 0)
		}
	}
	k.b.Send(k.now, &hb, 100)
	if pn, ok := k.a.ExpandSeq(hb.Seq); ok {
		k.a.OnReceive(k.now.Add(time.Millisecond), &hb, pn, 100, 0)
	}
	k.i++
}

func TestAcksZeroAlloc(t *testing.T) {
	k := newAckBench()
	for range 2000 {
		k.step()
	}
	if n := testing.AllocsPerRun(5000, k.step); n != 0 {
		t.Fatalf("%v allocs per packet pair", n)
	}
	if l := k.a.Loss(); math.Abs(l-0.2) > 0.001 {
		t.Fatalf("loss %.3f for every 5th dropped", l)
	}
}

// BenchmarkAckProcessing: one received packet's ack processing
// (ExpandSeq + OnReceive with loss detection and notifications).
func BenchmarkAckProcessing(b *testing.B) {
	k := newAckBench()
	for range 2000 {
		k.step()
	}
	var ha proto.Header
	b.ReportAllocs()
	for b.Loop() {
		k.now = k.now.Add(time.Millisecond)
		k.b.Send(k.now, &ha, 100)
		pn, _ := k.a.ExpandSeq(ha.Seq)
		k.a.OnReceive(k.now, &ha, pn, 100, 0)
		k.a.Send(k.now, &ha, 1200)
		pn, _ = k.b.ExpandSeq(ha.Seq)
		k.b.OnReceive(k.now, &ha, pn, 1200, 0)
	}
}
