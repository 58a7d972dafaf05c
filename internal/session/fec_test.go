package session

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// redundancyRun sends a 1 KB reliable message every tick from a to b
// over spec and returns the delivery delay histogram in ticks, a's bytes
// out and b's frames rebuilt from parity.
func redundancyRun(t *testing.T, spec string, fec bool) (hist map[int]int, bytesOut, rebuilt uint64) {
	synctest.Test(t, func(t *testing.T) {
		tick := 0
		got := &tickSink{at: map[int]int{}, tick: &tick}
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		a, b, ab, ba := newPair(t, time.Now(), spec, nop, got, fec)
		for tick = 0; tick < 3000; tick++ {
			time.Sleep(time.Second / 60)
			now := time.Now()
			if tick < 2900 {
				msg := make([]byte, 1024)
				msg[0], msg[1] = byte(tick), byte(tick>>8)
				a.Send(Reliable, 1, false, 0, msg)
			}
			ab.now, ba.now = now, now
			a.Tick(now, Ticks{}, SendOwed, ab)
			b.Tick(now, Ticks{}, SendOwed, ba)
			ab.deliver(b, now)
			ba.deliver(a, now)
		}
		hist = map[int]int{}
		for i := range 2900 {
			d, ok := got.at[i]
			if !ok {
				t.Fatalf("message %d never arrived", i)
			}
			hist[d-i]++
		}
		bytesOut, rebuilt = a.Stats().BytesOut, b.Stats().ReliableRebuilt
	})
	return hist, bytesOut, rebuilt
}

// TestFECRebuilds: with Config.FEC a lossy link's lost reliable frames
// are rebuilt from parity (no retransmission), at most a tick or so
// late, for fewer bytes than copies. (The link's first losses, before
// the second shows it lossy, meet no parity: those messages wait for a
// retransmission.)
func TestFECRebuilds(t *testing.T) {
	for _, c := range []struct {
		spec   string
		within float64 // of the messages within a tick of the base delay (2 ticks)
		saving float64 // bytes saved against copies, at least
	}{
		{"delay 33ms loss 5%", 0.994, 0.25},
		{"delay 33ms loss 20%", 0.97, 0.10},
	} {
		ch, cb, _ := redundancyRun(t, c.spec, false)
		fh, fb, rebuilt := redundancyRun(t, c.spec, true)
		t.Logf("%s: copies %v, %d bytes; FEC %v, %d bytes, %d frames rebuilt", c.spec, ch, cb, fh, fb, rebuilt)
		if rebuilt == 0 {
			t.Errorf("%s: no reliable frame rebuilt from parity", c.spec)
		}
		if on := float64(fh[2]+fh[3]) / 2900; on < c.within {
			t.Errorf("%s: %.3f of the messages within a tick of the path's delay with FEC, want %.3f", c.spec, on, c.within)
		}
		if saved := 1 - float64(fb)/float64(cb); saved < c.saving {
			t.Errorf("%s: FEC sent %d bytes against copies' %d (%.0f %% less), want at least %.0f %% less", c.spec, fb, cb, 100*saved, 100*c.saving)
		}
	}
}

// TestParityRoundTrip: any m of a group's k + m packets may be lost and
// the missing members' frames come back exactly, for group shapes up
// to fecMembers with members of different lengths.
func TestParityRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 1; k <= fecMembers; k++ {
		for m := 1; m <= 3; m++ {
			var tx fecSender
			var rx fecReceiver
			members := make([][]byte, k)
			pn := uint64(1000 + rng.IntN(100))
			pns := make([]uint64, k)
			for i := range k {
				members[i] = make([]byte, 1+rng.IntN(1100))
				for j := range members[i] {
					members[i][j] = byte(rng.Uint32())
				}
				pns[i] = pn
				tx.add(pn, members[i], 0, func() { t.Fatal("group closed early") })
				pn += uint64(1 + rng.IntN(3))
			}
			frames := tx.close(nil, m)
			// Lose m members (or all of them when there are fewer).
			lost := rng.Perm(k)[:min(m, k)]
			isLost := func(i int) bool {
				for _, l := range lost {
					if l == i {
						return true
					}
				}
				return false
			}
			for i := range k {
				if !isLost(i) {
					rx.store(pns[i], members[i])
				}
			}
			var rebuilt [][]byte
			for len(frames) > 0 {
				f, n, err := proto.ParseParityFrame(frames)
				if err != nil {
					t.Fatal(err)
				}
				frames = frames[n:]
				for _, d := range rx.parity(pn, &f) {
					rebuilt = append(rebuilt, bytes.Clone(d))
				}
			}
			if len(rebuilt) != len(lost) {
				t.Fatalf("k=%d m=%d: %d rebuilt, %d lost", k, m, len(rebuilt), len(lost))
			}
			for _, d := range rebuilt {
				found := false
				for _, l := range lost {
					found = found || bytes.Equal(d, members[l])
				}
				if !found {
					t.Fatalf("k=%d m=%d: a rebuilt frame of %d bytes is none of the lost members", k, m, len(d))
				}
			}
		}
	}
}

// TestParityFor: parity shards follow the loss rate.
func TestParityFor(t *testing.T) {
	for _, c := range []struct {
		loss float64
		k, m int
	}{{0.05, 2, 2}, {0.05, 4, 3}, {0.2, 2, 5}, {0.2, 4, 6}, {0.6, 4, proto.MaxParityShards}} {
		if m := parityFor(c.loss, c.k); m != c.m {
			t.Errorf("parityFor(%v, %d) = %d, want %d", c.loss, c.k, m, c.m)
		}
	}
}

// FuzzParity: parity frames from a peer (authenticated, but a peer may
// be hostile) never panic the receiver, and what it rebuilds has the
// lengths the frames declared.
func FuzzParity(f *testing.F) {
	var tx fecSender
	for i := range 3 {
		tx.add(uint64(10+i), bytes.Repeat([]byte{byte(i)}, 50+i), 0, func() {})
	}
	f.Add(uint64(14), tx.close(nil, 2), uint8(1))
	f.Add(uint64(1), []byte{byte(proto.FrameParity), 0, 0, 0, 0, 1, 1, 0, 1, 0, 7}, uint8(0))
	f.Fuzz(func(t *testing.T, pn uint64, frames []byte, seed uint8) {
		var rx fecReceiver
		for i := range uint64(20) {
			if (i+uint64(seed))%3 != 0 {
				rx.store(pn-i, bytes.Repeat([]byte{byte(i)}, 1+int(i)*7))
			}
		}
		for len(frames) > 0 {
			p, n, err := proto.ParseParityFrame(frames)
			if err != nil {
				return
			}
			frames = frames[n:]
			for _, d := range rx.parity(pn, &p) {
				if len(d) == 0 || len(d) > proto.MaxPacketSizeLimit {
					t.Fatalf("rebuilt %d bytes", len(d))
				}
			}
		}
	})
}
