package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// ErrRefused is wrapped by Bind's error when the relay answered with a
// status other than StatusOK (RefusedError says which).
var ErrRefused = errors.New("relay: bind refused")

// RefusedError is a bind the relay refused.
type RefusedError struct {
	Status Status
	At     netip.AddrPort // the address that refused: control or relayed
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("relay: bind refused by %v: %v", e.At, e.Status)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// bindResend is Bind's schedule: the wait for an answer before the
// request is sent again, doubling from the first to the last.
const (
	bindResendFirst = 200 * time.Millisecond
	bindResendMax   = 2 * time.Second
)

// Bind binds pc's address to the side of the allocation that grant
// names, on the relay whose control address is relayAddr: it asks the
// control address for the side's relayed port, then sends the same
// request to that port, which binds the address it comes from (and
// opens pc's NAT toward it). It returns the relayed address: where the
// other side's datagrams come from and where this side sends its own.
//
// Bind resends on a schedule until ctx ends, and returns a
// *RefusedError if the relay refuses. StatusInUse (another address holds
// the side, as when this socket's NAT remapped it and the old mapping
// was heard within Config.RebindQuiet) is not final: Bind goes on asking
// until ctx ends, and returns it then. It reads pc, setting its read
// deadline (cleared on return), and discards everything else that
// arrives meanwhile: call it before another reader starts. Keep the
// binding with a bind request (AppendBindRequest) to the relayed
// address every KeepAliveInterval.
func Bind(ctx context.Context, pc net.PacketConn, relayAddr netip.AddrPort, grant []byte) (netip.AddrPort, error) {
	g, err := ReadGrant(grant)
	if err != nil {
		return netip.AddrPort{}, err
	}
	relayAddr = netip.AddrPortFrom(relayAddr.Addr().Unmap(), relayAddr.Port())
	defer pc.SetReadDeadline(time.Time{})
	req := AppendBindRequest(nil, grant)
	r, err := exchange(ctx, pc, relayAddr, req, g)
	if err != nil {
		return netip.AddrPort{}, err
	}
	relayed := r.Relayed(relayAddr)
	if _, err := exchange(ctx, pc, relayed, req, g); err != nil {
		return netip.AddrPort{}, err
	}
	return relayed, nil
}

// exchange sends req to to until a reply for g comes from there.
func exchange(ctx context.Context, pc net.PacketConn, to netip.AddrPort, req []byte, g Grant) (BindReply, error) {
	dst := net.UDPAddrFromAddrPort(to)
	buf := make([]byte, 1500)
	wait := bindResendFirst
	var inUse *RefusedError // the side's address is live: ask again later
	for {
		if _, err := pc.WriteTo(req, dst); err != nil {
			return BindReply{}, fmt.Errorf("relay: bind: %w", err)
		}
		deadline := time.Now().Add(wait)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		pc.SetReadDeadline(deadline)
		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return BindReply{}, fmt.Errorf("relay: bind: %w", err)
			}
			if addrPort(from) != to {
				continue
			}
			r, err := ParseBindReply(buf[:n])
			if err != nil || r.Alloc != g.Alloc || r.Side != g.Side {
				continue
			}
			switch r.Status {
			case StatusOK:
				return r, nil
			case StatusInUse:
				inUse = &RefusedError{Status: r.Status, At: to}
				continue
			}
			return r, &RefusedError{Status: r.Status, At: to}
		}
		if err := ctx.Err(); err != nil {
			if inUse != nil {
				return BindReply{}, inUse
			}
			return BindReply{}, fmt.Errorf("relay: bind at %v: no answer: %w", to, err)
		}
		wait = min(2*wait, bindResendMax)
	}
}

// addrPort is a's address and port, unmapped; the zero value for an
// address that is not UDP.
func addrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		ap := ua.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
