package rendezvous

import (
	"context"
	"net/netip"
	"time"
)

// PunchSchedule is when, from the moment a host learns its players'
// candidates, it sends each candidate a punch: at once, then at
// doubling intervals for about 6 s, while the players' handshakes (the
// other half of the punch) are retried to the host every 100 ms. It is
// bounded: PunchSize bytes, len(PunchSchedule) times a candidate.
var PunchSchedule = []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond}

// Punch sends a punch to every address of to on PunchSchedule through
// send, until ctx ends or the schedule does. The punch needs no answer:
// it opens the sender's NAT toward each address, so that the peer's
// handshake, sent to the sender's public mapping, comes through.
func Punch(ctx context.Context, to []netip.AddrPort, send func(b []byte, addr netip.AddrPort)) {
	b := AppendPunch(nil)
	start := time.Now()
	for _, at := range PunchSchedule {
		t := time.NewTimer(time.Until(start.Add(at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		for _, a := range to {
			send(b, a)
		}
	}
}
