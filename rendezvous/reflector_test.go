package rendezvous

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/udp"
)

// TestReflector: a request with the ticket the lobby knows gets the
// address it came from, and the lobby hears it with the role and local
// addresses; one with another ticket, or no request at all, gets
// nothing and is counted. No reply is larger than its request.
func TestReflector(t *testing.T) {
	known := Ticket{1}
	var mu sync.Mutex
	var noted []string
	r, err := NewReflector(ReflectorConfig{Note: func(tk Ticket, role Role, m netip.AddrPort, local []netip.AddrPort) bool {
		mu.Lock()
		defer mu.Unlock()
		noted = append(noted, role.String()+" "+m.String())
		return tk == known
	}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Serve(conn) }()
	defer func() {
		r.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := conn.LocalAddr()

	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := Reflect(ctx, pc, addr, known, RoleHost, []netip.AddrPort{netip.MustParseAddrPort("198.18.1.2:7")})
	if want := pc.LocalAddr().(*net.UDPAddr).AddrPort(); err != nil || m != want {
		t.Fatalf("Reflect: %v, %v; want %v", m, err, want)
	}

	// A stranger's ticket and garbage: no answer (a short negative wait).
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if m, err := Reflect(short, pc, addr, Ticket{2}, RoleClient, nil); err == nil {
		t.Fatalf("an unknown ticket got mapping %v", m)
	}
	pc.WriteTo([]byte("Rv\x01\x01 garbage"), net.UDPAddrFromAddrPort(addr))
	ok, cancel3 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel3()
	if _, err := Reflect(ok, pc, addr, known, RoleClient, nil); err != nil { // after the garbage: it was read
		t.Fatal(err)
	}
	// The reflector counts a reply once its write returned, which may
	// be after the reply was read.
	st := r.Stats()
	for end := time.Now().Add(5 * time.Second); st.Replies < 2 && time.Now().Before(end); st = r.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.Unauthorized == 0 || st.Malformed != 1 || st.Replies < 2 || st.Replies > st.Requests-st.Unauthorized {
		t.Errorf("stats %+v", st)
	}
	if ReplySize > RequestSize {
		t.Errorf("replies of %d bytes to requests of %d", ReplySize, RequestSize)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(noted) < 3 || noted[0] != "host "+pc.LocalAddr().String() {
		t.Errorf("the lobby heard %q", noted)
	}
}
