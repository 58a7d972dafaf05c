package natlab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKinds builds one home of each kind and observes, from the public
// namespace, how its router maps and filters: a host sends from one
// socket to public endpoint A; then A's other port and the other
// public address send to the mapping A saw, and A sends last (the
// datagrams of one path arrive in order, so what has not come before
// A's never came). Then the host sends to the other address, B, which
// sees the mapping for that destination.
//
//	kind             same mapping for A and B   others reach the mapping
//	full cone        yes                        yes
//	port-restricted  yes                        no
//	symmetric        no                         no
//
// Two hosts of one home reach each other by their own addresses. It
// also checks that the lab has no way out: no namespace routes
// beyond 198.18.0.0/15, and the public namespace cannot reach a home's
// host directly.
func TestKinds(t *testing.T) {
	lab := New(t)
	listen := func(n Node, addr string) *net.UDPConn {
		t.Helper()
		c, err := n.ListenUDP(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := listen(lab.Public, "198.18.0.1:5000")
	a2 := listen(lab.Public, "198.18.0.1:5002")
	b := listen(lab.Public, "198.18.0.2:5001")
	for _, kind := range Kinds {
		t.Run(kind.String(), func(t *testing.T) {
			home := lab.AddHome(t, kind, 1)
			host := listen(home.Hosts[0], ":4000")
			send(t, host, "probe", a.LocalAddr())
			mA := receive(t, a, "probe")
			if mA.Addr() != home.Router.Addr {
				t.Fatalf("A saw the probe from %v, not the router's address %v", mA, home.Router.Addr)
			}
			send(t, a2, "other port", net.UDPAddrFromAddrPort(mA))
			send(t, b, "other address", net.UDPAddrFromAddrPort(mA))
			send(t, a, "reply", net.UDPAddrFromAddrPort(mA))
			got := receiveUntil(t, host, "reply")
			send(t, host, "probe", b.LocalAddr())
			mB := receive(t, b, "probe")
			sameMapping := mA == mB
			othersIn := strings.Contains(got, "other port") && strings.Contains(got, "other address")
			nobodyIn := !strings.Contains(got, "other port") && !strings.Contains(got, "other address")
			t.Logf("%v: mapping %v toward A, %v toward B; the host received %q", kind, mA, mB, got)
			switch kind {
			case FullCone:
				if !sameMapping || !othersIn {
					t.Errorf("full cone: same mapping %v, others reach it %v", sameMapping, othersIn)
				}
			case PortRestricted:
				if !sameMapping || !nobodyIn {
					t.Errorf("port-restricted: same mapping %v, nobody else reaches it %v", sameMapping, nobodyIn)
				}
				if mA.Port() != 4000 {
					t.Errorf("port-restricted: mapping %v does not keep the port", mA)
				}
			case Symmetric:
				if sameMapping || !nobodyIn {
					t.Errorf("symmetric: same mapping %v, nobody else reaches it %v", sameMapping, nobodyIn)
				}
			}
		})
	}

	t.Run("lan", func(t *testing.T) {
		home := lab.AddHome(t, PortRestricted, 2)
		one, two := listen(home.Hosts[0], ":4002"), listen(home.Hosts[1], ":4002")
		send(t, one, "neighbour", net.UDPAddrFromAddrPort(netip.AddrPortFrom(home.Hosts[1].Addr, 4002)))
		if from := receive(t, two, "neighbour"); from.Addr() != home.Hosts[0].Addr {
			t.Errorf("a LAN neighbour's datagram came from %v", from)
		}
	})

	t.Run("closed", func(t *testing.T) {
		for _, ns := range append([]string{lab.Public.NS}, lab.nsList...) {
			out, err := exec.Command("ip", "-n", ns, "-4", "route", "show").CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v %s", ns, err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line == "" {
					continue
				}
				dst, _, _ := strings.Cut(line, " ")
				if dst == "default" {
					_, via, _ := strings.Cut(line, " via ")
					via, _, _ = strings.Cut(via, " ")
					if ip, err := netip.ParseAddr(via); err != nil || !labRange.Contains(ip) {
						t.Errorf("%s: route %q leaves the lab", ns, line)
					}
					continue
				}
				if p, err := netip.ParsePrefix(dst); err != nil || !labRange.Contains(p.Addr()) {
					t.Errorf("%s: route %q leaves the lab", ns, line)
				}
			}
		}
		// The public namespace reaches no home host directly.
		home := lab.AddHome(t, PortRestricted, 1)
		host := listen(home.Hosts[0], ":4001")
		pub := listen(lab.Public, "198.18.0.1:5003")
		if _, err := pub.WriteTo([]byte("direct"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(home.Hosts[0].Addr, 4001))); err == nil {
			host.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // a negative: nothing may come
			if _, _, err := host.ReadFrom(make([]byte, 64)); err == nil {
				t.Error("the public namespace reached a home's host by its private address")
			}
		}
	})
}

var labRange = netip.MustParsePrefix("198.18.0.0/15")

func send(t *testing.T, c *net.UDPConn, msg string, to net.Addr) {
	t.Helper()
	if _, err := c.WriteTo([]byte(msg), to); err != nil {
		t.Fatal(err)
	}
}

// receive reads msg on c and returns where it came from.
func receive(t *testing.T, c *net.UDPConn, msg string) netip.AddrPort {
	t.Helper()
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("waiting for %q: %v", msg, err)
		}
		if string(buf[:n]) == msg {
			return netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		}
	}
}

// receiveUntil reads c until msg arrives and returns everything read,
// comma-separated.
func receiveUntil(t *testing.T, c *net.UDPConn, msg string) string {
	t.Helper()
	var got []string
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("waiting for %q (got %q): %v", msg, got, err)
		}
		got = append(got, string(buf[:n]))
		if string(buf[:n]) == msg {
			return strings.Join(got, ",")
		}
	}
}

// TestRemoveStale: a new lab deletes the namespaces of a lab whose
// process has ended (killed before its cleanup ran), and leaves those of
// a live process alone.
func TestRemoveStale(t *testing.T) {
	if err := Check(); err != nil {
		New(t) // skips, or fails under RequireEnv
	}
	dead := 0
	for pid := 4194303; pid > 1; pid-- {
		if !alive(pid) {
			dead = pid
			break
		}
	}
	stale := fmt.Sprintf("%s%d-test-pub", prefix, dead)
	live := fmt.Sprintf("%s%d-test-pub", prefix, os.Getpid())
	for _, ns := range []string{stale, live} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", stale).Run()
		exec.Command("ip", "netns", "del", live).Run()
	})
	New(t)
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), stale) || !strings.Contains(string(out), live) {
		t.Errorf("after a new lab, the namespaces are:\n%s", out)
	}
}

// TestHomesSideBySide: nine subtests run at once, each adding a home
// (three of each kind) to one lab and sending from its host, through
// its router, to a public socket of its own. Each datagram arrives
// from its own router's address, and the nine routers have nine
// addresses: homes added at once get their own numbers, names and
// ports on the public bridge.
func TestHomesSideBySide(t *testing.T) {
	lab := New(t)
	var mu sync.Mutex
	routers := map[netip.Addr]bool{}
	var wg sync.WaitGroup
	for i := range 9 {
		kind := Kinds[i%len(Kinds)]
		wg.Go(func() {
			t.Run(fmt.Sprintf("%d-%v", i, kind), func(t *testing.T) {
				home := lab.AddHome(t, kind, 1)
				pub, err := lab.Public.ListenUDP(fmt.Sprintf("198.18.0.1:%d", 6000+i))
				if err != nil {
					t.Fatal(err)
				}
				defer pub.Close()
				host, err := home.Hosts[0].ListenUDP(":4000")
				if err != nil {
					t.Fatal(err)
				}
				defer host.Close()
				send(t, host, "probe", pub.LocalAddr())
				if from := receive(t, pub, "probe"); from.Addr() != home.Router.Addr {
					t.Errorf("the probe came from %v, not its router's %v", from, home.Router.Addr)
				}
				mu.Lock()
				defer mu.Unlock()
				if routers[home.Router.Addr] {
					t.Errorf("router address %v given twice", home.Router.Addr)
				}
				routers[home.Router.Addr] = true
			})
		})
	}
	wg.Wait()
	if len(routers) != 9 {
		t.Errorf("%d routers of 9 homes", len(routers))
	}
}
