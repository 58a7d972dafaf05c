package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// TestForwardVirtual: two players bind the two sides of an allocation;
// every datagram one sends to its relayed address reaches the other,
// unchanged, from the other's relayed address, both ways; the relay's
// stats count the allocation, both bindings and every byte.
func TestForwardVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, Config{})
		j, h, pj, ph := l.pair(1, 1<<20)
		if pj.Addr() != l.ctrl.Addr() || pj == ph || pj == l.ctrl {
			t.Fatalf("relayed addresses %v %v, control %v", pj, ph, l.ctrl)
		}
		var sent int
		for i := range 10 {
			a := twPacket(100 + i)
			send(t, j, a, pj)
			got, from := recv(t, h, time.Second)
			if !bytes.Equal(got, a) || from != ph {
				t.Fatalf("host got %x from %v, want %x from %v", got, from, a, ph)
			}
			b := twPacket(90 - i)
			send(t, h, b, ph)
			if got, from = recv(t, j, time.Second); !bytes.Equal(got, b) || from != pj {
				t.Fatalf("joiner got %x from %v, want %x from %v", got, from, b, pj)
			}
			sent += len(a) + len(b)
		}
		st := l.srv.Stats()
		if st.Allocations != 1 || st.Bound != 2 || st.Forwarded != 20 || st.ForwardedBytes != uint64(sent) {
			t.Fatalf("stats %+v, want 1 allocation, 2 bound, 20 forwarded, %d bytes", st, sent)
		}
		for r, n := range st.Dropped {
			if n != 0 {
				t.Errorf("%d dropped (%v)", n, DropReason(r))
			}
		}
	})
}

// TestRefusals: what a relay refuses, and how it tells.
//   - a grant with a bad MAC (or garbage) gets no answer, at the control
//     address or a relayed port, and opens nothing;
//   - an expired grant gets StatusExpired and opens nothing;
//   - a grant sent to the other side's port gets no answer and binds
//     nothing;
//   - a new allocation beyond MaxAllocations gets StatusFull.
func TestRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, Config{MaxAllocations: 2})
		p := l.player(1)
		gj, gh := l.grants(time.Hour, 1<<20)

		bad := bytes.Clone(gj)
		bad[len(bad)-1] ^= 1
		silent(t, p, AppendBindRequest(nil, bad), l.ctrl)
		silent(t, p, []byte("Rw\x01\x01 not a grant"), l.ctrl)
		silent(t, p, []byte("tw\x03\x06 a stray tickwire packet"), l.ctrl)
		if st := l.srv.Stats(); st.Allocations != 0 || st.Dropped[DropBadGrant] != 1 || st.Dropped[DropMalformed] != 2 {
			t.Fatalf("after bad requests: %+v", st)
		}

		old, _, _ := MintPair(testKey, time.Now().Add(-time.Second), 100)
		if r := reply(t, p, old, l.ctrl); r.Status != StatusExpired {
			t.Fatalf("expired grant: %v", r.Status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var refused *RefusedError
		if _, err := Bind(ctx, p, l.ctrl, old); !errors.As(err, &refused) || refused.Status != StatusExpired || !errors.Is(err, ErrRefused) {
			t.Fatalf("Bind with an expired grant: %v", err)
		}
		if st := l.srv.Stats(); st.Allocations != 0 || st.Dropped[DropExpired] != 2 {
			t.Fatalf("after expired grants: %+v", st)
		}

		pj := l.bind(p, gj)
		ph := reply(t, p, gh, l.ctrl).Relayed(l.ctrl)
		silent(t, p, AppendBindRequest(nil, gh), pj) // the host's grant at the joiner's port
		silent(t, p, AppendBindRequest(nil, bad), ph)
		silent(t, p, []byte("Rw\x01\x01 junk"), ph)
		if st := l.srv.Stats(); st.Bound != 1 || st.Dropped[DropWrongPort] != 1 || st.Dropped[DropBadGrant] != 2 {
			t.Fatalf("after the wrong side's grant: %+v", st)
		}

		l.pair(2, 1<<20) // the second allocation
		g3, _ := l.grants(time.Hour, 1<<20)
		if r := reply(t, p, g3, l.ctrl); r.Status != StatusFull {
			t.Fatalf("third allocation: %v", r.Status)
		}
		if st := l.srv.Stats(); st.Allocations != 2 || st.Dropped[DropFull] != 1 {
			t.Fatalf("after the third: %+v", st)
		}
	})
}

// TestSecondAddress: a side's grant binds one address at a time. From a
// second address it is refused (StatusInUse) while the bound address is
// live, and that address's datagrams go on being forwarded while the
// second's are dropped; once the bound address has been silent for
// RebindQuiet, the second takes the side over (a NAT that remapped the
// player), and the first is dropped. After the grant's expiry the bound
// address's keep-alives are still answered, but no other address binds.
func TestSecondAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 3 * time.Second
		l := newLab(t, Config{RebindQuiet: quiet})
		gj, gh := l.grants(time.Minute, 1<<20)
		j, h, thief := l.player(1), l.player(2), l.player(3)
		pj, ph := l.bind(j, gj), l.bind(h, gh)

		send(t, j, []byte("tw live"), pj)
		if got, _ := recv(t, h, time.Second); string(got) != "tw live" {
			t.Fatalf("host got %q", got)
		}
		if r := reply(t, thief, gj, pj); r.Status != StatusInUse {
			t.Fatalf("second address while the first is live: %v", r.Status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var refused *RefusedError
		if _, err := Bind(ctx, thief, l.ctrl, gj); !errors.As(err, &refused) || refused.Status != StatusInUse || refused.At != pj {
			t.Fatalf("Bind from a second address while the first is live: %v", err)
		}
		cancel()
		send(t, j, []byte("tw live"), pj)
		recv(t, h, time.Second)
		send(t, thief, []byte("tw thief"), pj)
		send(t, j, []byte("tw still"), pj)
		if got := recvAll(t, h, time.Second); len(got) != 1 || string(got[0]) != "tw still" {
			t.Fatalf("host got %q, want the bound joiner's datagram only", got)
		}
		st := l.srv.Stats()
		if st.Dropped[DropInUse] < 2 || st.Dropped[DropUnbound] != 1 {
			t.Fatalf("stats %+v", st)
		}

		// The joiner falls silent (its NAT remapped it): Bind from the
		// new address is refused until the old one has been quiet for
		// RebindQuiet, and goes on asking until then.
		start := time.Now()
		if _, err := l.bindErr(thief, gj); err != nil {
			t.Fatalf("Bind from the new address: %v", err)
		}
		if took := time.Since(start); took < quiet-time.Second || took > quiet+3*time.Second {
			t.Fatalf("Bind from the new address took %v, want about %v", took, quiet)
		}
		send(t, j, []byte("tw old"), pj)
		send(t, thief, []byte("tw new"), pj)
		if got := recvAll(t, h, time.Second); len(got) != 1 || string(got[0]) != "tw new" {
			t.Fatalf("host got %q, want the new address's datagram only", got)
		}
		send(t, h, []byte("tw back"), ph)
		if got, _ := recv(t, thief, time.Second); string(got) != "tw back" {
			t.Fatalf("new address got %q", got)
		}

		time.Sleep(time.Minute) // the grants expire
		if r := reply(t, thief, gj, pj); r.Status != StatusOK {
			t.Fatalf("keep-alive of the bound address after expiry: %v", r.Status)
		}
		time.Sleep(quiet)
		if r := reply(t, j, gj, pj); r.Status != StatusExpired {
			t.Fatalf("rebind after expiry: %v", r.Status)
		}
	})
}

// TestUnboundSender: a third socket that sends to both relayed ports of
// a bound allocation gets nothing through and nothing back; every
// datagram is counted as dropped.
func TestUnboundSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, Config{})
		j, h, pj, ph := l.pair(1, 1<<20)
		stranger := l.player(9)
		for i := range 20 {
			pkt := fmt.Appendf(nil, "tw stranger %d", i)
			send(t, stranger, pkt, pj)
			send(t, stranger, pkt, ph)
		}
		if got := recvAll(t, j, time.Second); len(got) != 0 {
			t.Fatalf("joiner got %q", got)
		}
		if got := recvAll(t, h, time.Second); len(got) != 0 {
			t.Fatalf("host got %q", got)
		}
		if got := recvAll(t, stranger, time.Second); len(got) != 0 {
			t.Fatalf("stranger got %q", got)
		}
		if st := l.srv.Stats(); st.Dropped[DropUnbound] != 40 || st.Forwarded != 0 {
			t.Fatalf("stats %+v, want 40 unbound drops, nothing forwarded", st)
		}
	})
}

// TestRateLimit: an allocation forwards no more than its burst at once
// and its rate after: 100 datagrams of 1000 bytes sent at once pass
// Burst/1000 of them; sent at twice the rate for 5 s, about half pass.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, burst, size = 20_000, 4_000, 1000
		l := newLab(t, Config{Rate: rate, Burst: burst})
		j, h, pj, _ := l.pair(1, 1<<30)
		pkt := twPacket(size)
		for range 100 {
			send(t, j, pkt, pj)
		}
		if got := recvAll(t, h, time.Second); len(got) != burst/size {
			t.Fatalf("a burst of 100 passed %d, want %d", len(got), burst/size)
		}
		dropped := l.srv.Stats().Dropped[DropRate]
		if dropped != 100-burst/size {
			t.Fatalf("rate drops %d, want %d", dropped, 100-burst/size)
		}
		// At 2× the rate for 5 s after a refill of the bucket.
		time.Sleep(time.Second)
		const every = size * time.Second / (2 * rate)
		before := l.srv.Stats().ForwardedBytes
		for range int(5 * time.Second / every) {
			send(t, j, pkt, pj)
			time.Sleep(every)
		}
		synctest.Wait()
		got := l.srv.Stats().ForwardedBytes - before
		if max := uint64(burst + 5*rate); got > max || got < 5*rate {
			t.Fatalf("forwarded %d bytes in 5 s at twice the rate, want %d..%d", got, 5*rate, max)
		}
	})
}

// TestBudget: an allocation forwards its grant's budget and no more;
// after that a bind gets StatusSpent, and an allocation closed for
// idleness and opened again by the same grants keeps what it spent.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget, size = 5000, 1000
		l := newLab(t, Config{IdleTimeout: 10 * time.Second})
		gj, gh := l.grants(time.Hour, budget)
		j, h := l.player(1), l.player(2)
		pj := l.bind(j, gj)
		l.bind(h, gh)
		pkt := twPacket(size)
		for range 3 {
			send(t, j, pkt, pj)
		}
		if got := recvAll(t, h, time.Second); len(got) != 3 {
			t.Fatalf("host got %d of 3", len(got))
		}
		// Idle: closed, then opened again by the same grants.
		time.Sleep(20 * time.Second)
		if st := l.srv.Stats(); st.Allocations != 0 || st.AllocationsExpired != 1 {
			t.Fatalf("after idling: %+v", st)
		}
		pj = l.bind(j, gj)
		l.bind(h, gh)
		for range 5 {
			send(t, j, pkt, pj)
		}
		if got := recvAll(t, h, time.Second); len(got) != 2 {
			t.Fatalf("host got %d, want the budget's remaining 2", len(got))
		}
		if st := l.srv.Stats(); st.Dropped[DropBudget] != 3 || st.ForwardedBytes != budget {
			t.Fatalf("stats %+v, want 3 budget drops and %d bytes forwarded", st, budget)
		}
		if r := reply(t, j, gj, pj); r.Status != StatusSpent {
			t.Fatalf("bind after the budget: %v", r.Status)
		}
		if r := reply(t, j, gj, l.ctrl); r.Status != StatusSpent {
			t.Fatalf("control bind after the budget: %v", r.Status)
		}
	})
}

// TestIdleExpiry: an allocation whose sides keep binding every
// KeepAliveInterval outlives IdleTimeout many times over; once they stop,
// it is closed within IdleTimeout and a quarter, and its ports with it
// (datagrams to them reach no socket).
func TestIdleExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 60 * time.Second
		l := newLab(t, Config{IdleTimeout: idle})
		gj, gh := l.grants(time.Hour, 1<<20)
		j, h := l.player(1), l.player(2)
		pj, ph := l.bind(j, gj), l.bind(h, gh)
		for range 10 {
			time.Sleep(KeepAliveInterval)
			if r := reply(t, j, gj, pj); r.Status != StatusOK {
				t.Fatalf("keep-alive: %v", r.Status)
			}
			if r := reply(t, h, gh, ph); r.Status != StatusOK {
				t.Fatalf("keep-alive: %v", r.Status)
			}
		}
		if st := l.srv.Stats(); st.Allocations != 1 {
			t.Fatalf("kept alive for %v: %+v", 10*KeepAliveInterval, st)
		}
		stopped := time.Now()
		for l.srv.Stats().Allocations != 0 {
			time.Sleep(time.Second)
		}
		if took := time.Since(stopped); took < idle || took > idle+idle/4+2*time.Second {
			t.Fatalf("closed %v after the last keep-alive, want %v..%v", took, idle, idle+idle/4)
		}
		before := l.net.Stats()
		send(t, j, []byte("tw late"), pj)
		synctest.Wait()
		time.Sleep(time.Second)
		if after := l.net.Stats(); after.NoListener != before.NoListener+1 {
			t.Fatalf("a datagram to a closed port: network stats %+v -> %+v", before, after)
		}
		if st := l.srv.Stats(); st.Bound != 0 || st.AllocationsExpired != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// twPacket is a datagram of size bytes that starts like a tickwire
// packet, as the relay forwards only those.
func twPacket(size int) []byte {
	b := bytes.Repeat([]byte{'.'}, size)
	b[0], b[1] = 't', 'w'
	return b
}

// TestForwardsTickwireOnly: a bound side's datagrams that do not start
// with tickwire's magic bytes, or exceed MaxDatagram, are dropped.
func TestForwardsTickwireOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, Config{})
		j, h, pj, _ := l.pair(1, 1<<20)
		send(t, j, []byte("GET / HTTP/1.1"), pj)
		send(t, j, twPacket(MaxDatagram+1), pj)
		send(t, j, twPacket(MaxDatagram), pj)
		if got := recvAll(t, h, time.Second); len(got) != 1 || len(got[0]) != MaxDatagram {
			t.Fatalf("host got %d datagrams, want the one of %d bytes", len(got), MaxDatagram)
		}
		if st := l.srv.Stats(); st.Dropped[DropMalformed] != 2 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestPortRange: relayed ports come from Config.PortMin..PortMax; when
// the range is used up a new allocation gets StatusFull, and the ports
// of an allocation closed for idleness serve again.
func TestPortRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lo, hi = 40000, 40003
		l := newLab(t, Config{PortMin: lo, PortMax: hi, IdleTimeout: 10 * time.Second})
		_, _, p1, p2 := l.pair(1, 1<<20)
		_, _, p3, p4 := l.pair(3, 1<<20)
		for _, p := range []netip.AddrPort{p1, p2, p3, p4} {
			if p.Port() < lo || p.Port() > hi {
				t.Fatalf("relayed port %d outside %d..%d", p.Port(), lo, hi)
			}
		}
		g, _ := l.grants(time.Hour, 1<<20)
		p := l.player(9)
		if r := reply(t, p, g, l.ctrl); r.Status != StatusFull {
			t.Fatalf("a third allocation on four ports: %v", r.Status)
		}
		time.Sleep(20 * time.Second) // both allocations idle out
		if r := reply(t, p, g, l.ctrl); r.Status != StatusOK || r.Port < lo || r.Port > hi {
			t.Fatalf("after the others closed: %+v", r)
		}
	})
}

// TestConfigRefused: a configuration the relay cannot run with is
// refused, naming the field.
func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{
		{MaxAllocations: -1},
		{PortMin: 40000},
		{PortMin: 41000, PortMax: 40000},
		{Rate: -1},
		{Burst: 100},
		{IdleTimeout: -time.Second},
	} {
		if _, err := NewServer(testKey, c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
