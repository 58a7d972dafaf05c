package reliability

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// TestRepairWaitSparesRebuiltSegments: a message a tick on a 25 ms path
// each way, both ends on one tick grid, and one frame reaches the peer
// two ticks late, as a member rebuilt from a later parity frame would.
// Without a repair wait KCP's timeout (its smoothed RTT, 65 ms here, and
// 10 ms) runs out before the late ack comes back, and it sends the
// segment again; with SetRepairWait of a tick and 10 ms (the floor of the
// timeout's variance term) it sends it once.
func TestRepairWaitSparesRebuiltSegments(t *testing.T) {
	const tick = time.Second / 60
	for _, c := range []struct {
		wait  time.Duration
		sends int
	}{{0, 2}, {tick + 10*time.Millisecond, 1}} {
		synctest.Test(t, func(t *testing.T) {
			a, err := NewReliable(9, ReliableConfig{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewReliable(9, ReliableConfig{})
			a.SetRepairWait(c.wait)
			type inFlight struct {
				at   time.Time
				data []byte
			}
			var ab, ba []inFlight
			deliver := func(q []inFlight, to *Reliable, now time.Time) []inFlight {
				kept := q[:0]
				for _, p := range q {
					if p.at.After(now) {
						kept = append(kept, p)
						continue
					}
					if err := to.Input(now, p.data); err != nil {
						t.Fatal(err)
					}
				}
				return kept
			}
			room := proto.DefaultMaxPacketSize - proto.HeaderSize - proto.SealOverhead
			const late = 40 // the message whose frame is late
			sends := 0
			got := 0
			for i := range 120 {
				now := time.Now()
				ab = deliver(ab, b, now)
				ba = deliver(ba, a, now)
				for {
					if _, ok := b.Receive(nil); !ok {
						break
					}
					got++
				}
				if i < 100 {
					if err := a.Send(make([]byte, 1000)); err != nil {
						t.Fatal(err)
					}
				}
				a.Update(now)
				b.Update(now)
				for {
					pkt, n := a.AppendFrame(nil, room)
					if n == 0 {
						break
					}
					f, _, _ := proto.ParseReliableFrame(pkt)
					delay := 25 * time.Millisecond
					for d := f.Data; len(d) > 0; {
						s, k, err := parseSegment(d, a.MSS())
						if err != nil {
							t.Fatal(err)
						}
						if s.Cmd == cmdPush && s.SN == late {
							sends++
							if sends == 1 {
								delay += 2 * tick
							}
						}
						d = d[k:]
					}
					ab = append(ab, inFlight{now.Add(delay), f.Data})
				}
				for {
					pkt, n := b.AppendFrame(nil, room)
					if n == 0 {
						break
					}
					f, _, _ := proto.ParseReliableFrame(pkt)
					ba = append(ba, inFlight{now.Add(25 * time.Millisecond), f.Data})
				}
				time.Sleep(tick)
			}
			if got != 100 {
				t.Fatalf("%d of 100 messages arrived", got)
			}
			if sends != c.sends {
				t.Fatalf("repair wait %v: the late segment went out %d times, want %d", c.wait, sends, c.sends)
			}
		})
	}
}
