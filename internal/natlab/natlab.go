// Package natlab builds real NATs for tests out of Linux network
// namespaces, veth pairs and nftables: a "public" namespace and homes,
// each a LAN behind a router namespace that translates its traffic with
// one of three behaviours (Kind). Tests run processes in a namespace
// (Node.Command) or open sockets in it from the test process
// (Node.ListenUDP).
//
//	public  198.18.0.1, 198.18.0.2 (two addresses: two public endpoints)
//	   │  bridge 198.18.0.0/24
//	router i  WAN 198.18.0.(10+i)  ── nftables NAT of its Kind
//	   │  bridge 198.18.i.0/24, router 198.18.i.1
//	home i hosts 198.18.i.2, 198.18.i.3, ...
//
// Every address is in the benchmarking range 198.18.0.0/15; no
// namespace has a route out of the lab, and the public namespace has no
// route into the homes (only the routers' addresses). Tests running side
// by side may add homes to one lab at once: each home gets its own
// number (its addresses, its router's port on the public bridge, its
// namespaces' names). Names carry the
// creating process's id, so parallel runs do not collide; a lab's
// namespaces are deleted by t.Cleanup (also when the test fails), and
// those of processes no longer running are deleted when a new lab is
// made.
//
// Policy for the tools: it needs root, ip (iproute2) and nft
// (nftables). Without them a test skips, unless TICKWIRE_REQUIRE_TOOLS
// is set (./test.sh sets it and installs nftables), in which case it
// fails.
package natlab

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireEnv turns a missing tool from a skip into a failure.
const RequireEnv = "TICKWIRE_REQUIRE_TOOLS"

// Kind is how a router translates.
type Kind int

// The NAT kinds of RFC 4787's terms.
const (
	// FullCone: endpoint-independent mapping and filtering. Once a host
	// sent from a port, anyone may send to its mapping.
	FullCone Kind = iota + 1
	// PortRestricted: endpoint-independent mapping,
	// address-and-port-dependent filtering. Only an address and port the
	// host sent to may send back.
	PortRestricted
	// Symmetric: endpoint-dependent mapping (a random public port per
	// destination), address-and-port-dependent filtering.
	Symmetric
)

var kindNames = map[Kind]string{FullCone: "full-cone", PortRestricted: "port-restricted", Symmetric: "symmetric"}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Kinds are the three kinds in a fixed order.
var Kinds = []Kind{FullCone, PortRestricted, Symmetric}

// The public namespace's two addresses.
var (
	PublicAddr  = netip.MustParseAddr("198.18.0.1")
	PublicAddr2 = netip.MustParseAddr("198.18.0.2")
)

// prefix starts every namespace name natlab makes; the creator's pid
// follows it.
const prefix = "twnat-"

// Node is one namespace a test runs things in.
type Node struct {
	NS   string     // the namespace's name (ip netns)
	Addr netip.Addr // its address (the public namespace: PublicAddr)
}

// Home is a LAN behind a router.
type Home struct {
	Kind   Kind
	Router Node // Addr is the router's public (WAN) address
	Hosts  []Node
}

// Lab is a set of namespaces that t.Cleanup deletes.
type Lab struct {
	t      testing.TB
	id     string
	Public Node
	mu     sync.Mutex
	homes  int
	nsList []string
}

// Check reports why labs cannot be built here (nil: they can).
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces need root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not installed (./test.sh installs it): %w", tool, err)
		}
	}
	return nil
}

// New builds the public namespace of a new lab, or skips the test (fails
// it under RequireEnv) where labs cannot be built.
func New(t testing.TB) *Lab {
	t.Helper()
	if err := Check(); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("natlab: %v, and %s is set", err, RequireEnv)
		}
		t.Skipf("natlab: %v", err)
	}
	removeStale()
	var r [3]byte
	rand.Read(r[:])
	l := &Lab{t: t, id: fmt.Sprintf("%s%d-%s", prefix, os.Getpid(), hex.EncodeToString(r[:]))}
	t.Cleanup(l.remove)
	l.Public = Node{NS: l.addNS(t, "pub"), Addr: PublicAddr}
	pub := l.Public.NS
	run(t, "ip", "-n", pub, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", pub, "addr", "add", PublicAddr.String()+"/24", "dev", "br0")
	run(t, "ip", "-n", pub, "addr", "add", PublicAddr2.String()+"/24", "dev", "br0")
	run(t, "ip", "-n", pub, "link", "set", "br0", "up")
	return l
}

// AddHome builds a home of kind with n hosts behind its router, for
// test t (the lab's, or a subtest's: it fails t if the home cannot be
// built). It is safe to call from tests running side by side.
func (l *Lab) AddHome(t testing.TB, kind Kind, n int) *Home {
	t.Helper()
	if kindNames[kind] == "" || n < 1 || n > 200 {
		t.Fatalf("natlab: home of %v with %d hosts", kind, n)
	}
	l.mu.Lock()
	l.homes++
	i := l.homes
	l.mu.Unlock()
	if i > 200 {
		t.Fatal("natlab: too many homes")
	}
	wan := netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)})
	lan := netip.AddrFrom4([4]byte{198, 18, byte(i), 1})
	h := &Home{Kind: kind, Router: Node{NS: l.addNS(t, fmt.Sprintf("r%d", i)), Addr: wan}}
	rt := h.Router.NS
	// WAN: a veth from the router into the public bridge.
	run(t, "ip", "-n", rt, "link", "add", "wan", "type", "veth", "peer", "name", fmt.Sprintf("r%d", i), "netns", l.Public.NS)
	run(t, "ip", "-n", l.Public.NS, "link", "set", fmt.Sprintf("r%d", i), "master", "br0", "up")
	run(t, "ip", "-n", rt, "addr", "add", wan.String()+"/24", "dev", "wan")
	run(t, "ip", "-n", rt, "link", "set", "wan", "up")
	// LAN: a bridge in the router, a veth per host.
	run(t, "ip", "-n", rt, "link", "add", "lan", "type", "bridge")
	run(t, "ip", "-n", rt, "addr", "add", lan.String()+"/24", "dev", "lan")
	run(t, "ip", "-n", rt, "link", "set", "lan", "up")
	for j := range n {
		host := Node{NS: l.addNS(t, fmt.Sprintf("h%d-%d", i, j+1)), Addr: netip.AddrFrom4([4]byte{198, 18, byte(i), byte(2 + j)})}
		port := fmt.Sprintf("h%d", j+1)
		run(t, "ip", "-n", host.NS, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", rt)
		run(t, "ip", "-n", rt, "link", "set", port, "master", "lan", "up")
		run(t, "ip", "-n", host.NS, "addr", "add", host.Addr.String()+"/24", "dev", "eth0")
		run(t, "ip", "-n", host.NS, "link", "set", "eth0", "up")
		run(t, "ip", "-n", host.NS, "route", "add", "default", "via", lan.String())
		h.Hosts = append(h.Hosts, host)
	}
	run(t, "ip", "netns", "exec", rt, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	nft(t, rt, routerRules(kind, wan, netip.PrefixFrom(lan, 24).Masked()))
	return h
}

// routerRules is the router's nftables ruleset for kind. Every kind:
// traffic from the LAN leaves translated to the WAN address; from the
// WAN only replies to it come in (conntrack), and a datagram to the
// router itself that starts no flow is dropped before conntrack keeps
// it, so that it cannot take a port a LAN host's mapping would use (a
// punched path would see the mapping move). Symmetric maps each flow
// to a random port; the others keep the host's port when free (an
// endpoint-independent mapping). The LAN's hosts reach each other
// directly. Full cone also lets in, to a mapped
// port, a datagram from anyone: a dynamic map remembers which host
// sent from each port.
func routerRules(kind Kind, wan netip.Addr, lan netip.Prefix) string {
	var b strings.Builder
	b.WriteString("table ip natlab {\n")
	if kind == FullCone {
		b.WriteString("\tmap cone {\n\t\ttype inet_service : ipv4_addr\n\t\tflags dynamic,timeout\n\t\ttimeout 2m\n\t}\n")
	}
	b.WriteString("\tchain inbound {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n")
	if kind == FullCone {
		fmt.Fprintf(&b, "\t\tiifname \"wan\" ip daddr %s udp dport @cone dnat to udp dport map @cone\n", wan)
	}
	b.WriteString("\t}\n")
	b.WriteString("\tchain outbound {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
	switch kind {
	case Symmetric:
		fmt.Fprintf(&b, "\t\toifname \"wan\" snat to %s random\n", wan)
	default:
		fmt.Fprintf(&b, "\t\toifname \"wan\" snat to %s\n", wan)
	}
	b.WriteString("\t}\n")
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n")
	// Between the LAN's hosts (bridged, which br_netfilter may pass
	// through this chain).
	fmt.Fprintf(&b, "\t\tip saddr %s ip daddr %s accept\n", lan, lan)
	if kind == FullCone {
		b.WriteString("\t\tiifname \"lan\" oifname \"wan\" udp sport 1024-65535 update @cone { udp sport : ip saddr }\n")
		b.WriteString("\t\tiifname \"wan\" ct status dnat accept\n")
	}
	b.WriteString("\t\tiifname \"lan\" oifname \"wan\" accept\n")
	b.WriteString("\t\tiifname \"wan\" ct state established,related accept\n")
	b.WriteString("\t}\n")
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n")
	b.WriteString("\t\tiifname \"wan\" ct state new drop\n")
	b.WriteString("\t}\n}\n")
	return b.String()
}

// Command returns cmd run in n's namespace (ip netns exec, which execs
// it: the process's id is the command's own, so signals reach it).
func (n Node) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.NS, name}, args...)...)
}

// ListenUDP opens a UDP socket on addr in n's namespace, from this
// process: the socket stays in the namespace it was made in.
func (n Node) ListenUDP(addr string) (*net.UDPConn, error) {
	var c net.PacketConn
	err := n.Do(func() error {
		var err error
		c, err = net.ListenPacket("udp4", addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

// Do runs f on an OS thread switched into n's namespace (sockets f
// opens are made there), and switches back.
func (n Node) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// If switching back fails the thread stays locked and Go ends
		// it with this goroutine, rather than reusing it.
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer own.Close()
		target, err := os.Open("/run/netns/" + n.NS)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("natlab: entering %s: %w", n.NS, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("natlab: leaving %s: %w", n.NS, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// addNS makes a namespace named after the lab and suffix with its
// loopback up, for test t; the lab deletes it.
func (l *Lab) addNS(t testing.TB, suffix string) string {
	t.Helper()
	name := l.id + "-" + suffix
	run(t, "ip", "netns", "add", name)
	l.mu.Lock()
	l.nsList = append(l.nsList, name)
	l.mu.Unlock()
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// nft loads rules into namespace ns, failing t if they do not load.
func nft(t testing.TB, ns, rules string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("natlab: nft in %s: %v\n%s\n%s", ns, err, out, rules)
	}
}

// run runs a command, failing t if it fails.
func run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("natlab: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the lab's namespaces (their veths go with them).
func (l *Lab) remove() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ns := range l.nsList {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			l.t.Logf("natlab: deleting %s: %v %s", ns, err, bytes.TrimSpace(out))
		}
	}
	l.nsList = nil
}

// removeStale deletes the namespaces of labs whose process has ended
// (killed before its cleanup ran).
func removeStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		exec.Command("ip", "netns", "del", name).Run()
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
