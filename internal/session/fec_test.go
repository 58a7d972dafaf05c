package session

import (
	"testing"
	"testing/synctest"
	"time"
)

// redundancyRun sends a reliable message of size bytes every tick from
// a to b over spec and returns the delivery delay histogram in ticks,
// a's bytes out and b's frames rebuilt from parity.
func redundancyRun(t *testing.T, spec string, size int) (hist map[int]int, bytesOut, rebuilt uint64) {
	synctest.Test(t, func(t *testing.T) {
		tick := 0
		got := &tickSink{at: map[int]int{}, tick: &tick}
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		a, b, ab, ba := newPair(t, time.Now(), spec, nop, got)
		for tick = 0; tick < 3000; tick++ {
			time.Sleep(time.Second / 60)
			now := time.Now()
			if tick < 2900 {
				msg := make([]byte, size)
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

// TestParityRebuilds: a lossy link's lost reliable frames are rebuilt
// from parity (no retransmission), at most a tick or so late, for fewer
// bytes than copies: 1 KB messages (which parity protects) against
// 1,120-byte ones (too large for a parity frame to follow them in one
// packet, so they get copies). (The link's first losses, before the
// second shows it lossy, meet no redundancy: those messages wait for a
// retransmission.)
func TestParityRebuilds(t *testing.T) {
	for _, c := range []struct {
		spec   string
		within float64 // of the messages within a tick of the base delay (2 ticks)
		saving float64 // bytes per message saved against copies, at least
	}{
		{"delay 33ms loss 5%", 0.985, 0.40},
		{"delay 33ms loss 20%", 0.95, 0.25},
	} {
		ch, cb, _ := redundancyRun(t, c.spec, 1120)
		fh, fb, rebuilt := redundancyRun(t, c.spec, 1024)
		t.Logf("%s: copies %v, %d bytes; parity %v, %d bytes, %d frames rebuilt", c.spec, ch, cb, fh, fb, rebuilt)
		if rebuilt == 0 {
			t.Errorf("%s: no reliable frame rebuilt from parity", c.spec)
		}
		if on := float64(fh[2]+fh[3]) / 2900; on < c.within {
			t.Errorf("%s: %.3f of the messages within a tick of the path's delay with parity, want %.3f", c.spec, on, c.within)
		}
		if saved := 1 - float64(fb)/1024/(float64(cb)/1120); saved < c.saving {
			t.Errorf("%s: parity sent %d bytes against copies' %d (%.0f %% less per message byte), want at least %.0f %% less", c.spec, fb, cb, 100*saved, 100*c.saving)
		}
	}
}
