package commits

import (
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// The mesh of commits mode (unreliable shortcuts between the clients,
// docs/COMMITS.md): a client that takes part listens on its own UDP
// socket (DSCP EF by default, like every tickwire socket), the server
// introduces it to the other meshed clients of its game with a key per
// pair and direction, and it sends each command it issues straight to
// every peer it reaches, besides the reliable pipeline. A peer applies the
// copy to its live world at once (a tentative command, sim.Lockstep); the
// committed world runs only the server's copy.

// Mesh timing: probes find a peer (both sides send at once, which also
// opens NAT mappings) and measure the round trip; a peer silent for
// meshSilence is unreachable until it answers again.
const (
	meshProbeFast  = 100 * time.Millisecond // while a peer has not answered
	meshProbeSlow  = 500 * time.Millisecond // after meshGiveUp without an answer
	meshKeepAlive  = 250 * time.Millisecond
	meshSilence    = time.Second
	meshGiveUp     = 2 * time.Second
	meshReportTick = time.Second
)

// MeshStats count what a client's mesh did.
type MeshStats struct {
	Links     int // introduced
	Reachable int // answering now
	// Reached counts the peers that answered at least once: the
	// shortcuts that opened (through NATs, too). A peer is its players:
	// one introduced again on a new connection (after a resync or a
	// rejoin) is counted once.
	Reached int
	// ShortcutsSent counts command copies sent to peers, ShortcutsReceived
	// those received, ShortcutsUseful those that arrived before the
	// server's copy, ShortcutsLate those that arrived after the tick was
	// committed (dropped).
	ShortcutsSent, ShortcutsReceived, ShortcutsUseful, ShortcutsLate uint64
	// Earlier is the total of how much earlier the useful shortcuts
	// arrived than the server's copies (divide by EarlierCount).
	Earlier      time.Duration
	EarlierCount uint64
	// AddressChecks counts new addresses a peer's authentic packets came
	// from (NAT rebinding, a proxy, or a peer forging its source), each
	// sent a path challenge; AddressChanges those that answered it, to
	// which the peer moved. BlockedToNew counts datagrams not sent to a
	// new address because it had not sent 1/3 as much (the 3× budget).
	AddressChecks, AddressChanges, BlockedToNew uint64
	// Checks counts the server's challenges of our mesh address answered.
	Checks  uint64
	Dropped tickwire.DropCounts // peer datagrams dropped, by reason
}

type meshPeer struct {
	conn       uint32 // the peer's connection id: names the pair in headers
	players    []uint16
	introduced netip.AddrPort
	addr       netip.AddrPort // where its packets come from and ours go
	link       *session.MeshLink
	// moving: a new address the peer's packets came from, not validated:
	// it gets a path challenge and at most 3× the bytes that came from it
	// until the answer comes back from it; then the peer moves there
	moving    moveCheck
	since     time.Time
	reachable bool
	reached   bool // answered at least once
	lastRecv  time.Time
	probe     [proto.PathDataSize]byte
	probeAt   time.Time
	rtt       time.Duration
}

// moveCheck is a peer's new address being validated.
type moveCheck struct {
	addr    netip.AddrPort
	probe   [proto.PathDataSize]byte
	in, out int       // bytes from and to addr
	sentAt  time.Time // the last challenge
}

// moveBudget is how many times the bytes received from an unvalidated
// address may be sent to it (QUIC's anti-amplification limit).
const moveBudget = 3

// clientMesh is one client's mesh socket and peers.
type clientMesh struct {
	conn    udp.BatchConn
	now     func() time.Time
	deliver func(f *proto.CommandFrame, from uint32, at time.Time)
	// prove returns the data of the server's challenge of our address
	// (called without m.mu)
	prove func(data [proto.PathDataSize]byte)

	mu     sync.Mutex
	self   uint32
	check  *session.MeshLink // opens the server's challenge (MeshCheck)
	proved bool              // we answered a challenge on this connection
	// early is a challenge of our address that came before its key:
	// the key comes on the session, handled on the client's loop, the
	// challenge straight to the mesh's read loop, which a loaded
	// machine may run first. The newest one is kept (one packet of
	// meshCheckSize bytes at most) and opened when the key comes.
	early []byte
	// reachedBy are the first players of the peers that answered at
	// least once, on any connection (MeshStats.Reached).
	reachedBy map[uint16]bool

	peers  map[uint32]*meshPeer
	stats  MeshStats
	out    []byte
	frame  []byte
	send   [1]udp.Message
	rx     []proto.CommandFrame // the read loop's: a packet's shortcut commands
	closed chan struct{}
	wg     sync.WaitGroup
}

// newClientMesh starts a mesh on conn: its read loop and its prober.
func newClientMesh(conn udp.BatchConn, now func() time.Time, deliver func(f *proto.CommandFrame, from uint32, at time.Time), prove func(data [proto.PathDataSize]byte)) *clientMesh {
	m := &clientMesh{conn: conn, now: now, deliver: deliver, prove: prove, peers: map[uint32]*meshPeer{}, closed: make(chan struct{})}
	m.wg.Add(2)
	go m.readLoop()
	go m.probeLoop()
	return m
}

// listenMesh opens a mesh socket on ip, any port.
func listenMesh(ip netip.Addr) (udp.BatchConn, error) {
	network := "udp4"
	if ip.Is6() && !ip.Is4In6() {
		network = "udp6"
	}
	return udp.Listen(network, netip.AddrPortFrom(ip, 0).String(), udp.Config{})
}

func (m *clientMesh) close() {
	select {
	case <-m.closed:
		return
	default:
	}
	close(m.closed)
	m.conn.Close()
	m.wg.Wait()
}

// reset forgets every peer: a new connection (id self) starts over.
func (m *clientMesh) reset(self uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.self = self
	m.check = nil
	m.proved = false
	m.early = m.early[:0]
	clear(m.peers)
}

// proven says whether we answered the server's challenge of our address
// on this connection.
func (m *clientMesh) proven() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proved
}

// checkKey takes the key of the server's challenge of our address. A
// challenge that came before it is opened now: proved says so, and
// data is the challenge's, to return on the session.
func (m *clientMesh) checkKey(key *[proto.KeySize]byte) (data [proto.PathDataSize]byte, proved bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	link, err := session.NewMeshLink(m.self, m.self, key, key)
	if err != nil {
		return data, false, err
	}
	m.check = link
	if len(m.early) == 0 {
		return data, false, nil
	}
	pkt := m.early
	m.early = m.early[:0]
	h, _, err := proto.ParseHeader(pkt)
	if err != nil {
		return data, false, nil
	}
	data, proved = m.receiveCheck(pkt, &h)
	return data, proved, nil
}

// receiveCheck opens the server's challenge of our address (m.mu held)
// and returns its data.
func (m *clientMesh) receiveCheck(pkt []byte, h *proto.Header) (data [proto.PathDataSize]byte, ok bool) {
	payload, why, ok := m.check.Open(pkt, h)
	if !ok {
		m.stats.Dropped[why]++
		return data, false
	}
	r := proto.FrameReader{Payload: payload}
	for r.Next() {
		if r.Type() == proto.FramePathChallenge {
			if f, _, err := proto.ParsePathChallengeFrame(r.Frame()); err == nil {
				m.stats.Checks++
				m.proved = true
				return f.Data, true
			}
		}
	}
	m.stats.Dropped[tickwire.DropMalformed]++
	return data, false
}

// add introduces a peer; a peer introduced again gets a fresh link.
func (m *clientMesh) add(f *proto.MeshIntroFrame) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	link, err := session.NewMeshLink(m.self, f.Conn, &f.SendKey, &f.RecvKey)
	if err != nil {
		return err
	}
	m.peers[f.Conn] = &meshPeer{conn: f.Conn, players: f.Players, introduced: f.Addr, addr: f.Addr, link: link, since: m.now()}
	m.probeLocked(m.peers[f.Conn], m.now())
	return nil
}

func (m *clientMesh) remove(peer uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.peers, peer)
}

// send seals payload for p and sends it (m.mu held).
func (m *clientMesh) sendLocked(p *meshPeer, tick uint32, payload []byte) {
	m.out = p.link.Append(m.out[:0], tick, payload)
	m.send[0] = udp.Message{Buf: m.out, Addr: p.addr}
	m.conn.WriteBatch(m.send[:])
}

// openToward sends b from the mesh socket to addr: a datagram toward
// the server opens the socket's NAT toward it, so that the server's
// check of the mesh's address comes through (docs/NAT.md).
func (m *clientMesh) openToward(addr netip.AddrPort, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.send[0] = udp.Message{Buf: b, Addr: addr}
	m.conn.WriteBatch(m.send[:])
}

// sendMovingLocked seals payload for p and sends it to the address p's
// packets came from lately, not validated: only within its budget.
func (m *clientMesh) sendMovingLocked(p *meshPeer, payload []byte) {
	mv := &p.moving
	n := proto.HeaderSize + len(payload) + proto.SealOverhead
	if mv.out+n > moveBudget*mv.in {
		m.stats.BlockedToNew++
		return
	}
	mv.out += n
	m.out = p.link.Append(m.out[:0], 0, payload)
	m.send[0] = udp.Message{Buf: m.out, Addr: mv.addr}
	m.conn.WriteBatch(m.send[:])
}

// broadcast sends a command frame to every reachable peer; it returns
// how many it went to.
func (m *clientMesh) broadcast(frame []byte, tick uint32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range m.peers {
		if p.reachable {
			m.sendLocked(p, tick, frame)
			n++
		}
	}
	m.stats.ShortcutsSent += uint64(n)
	return n
}

// probeLocked sends p a path challenge (a probe and a keep-alive).
func (m *clientMesh) probeLocked(p *meshPeer, now time.Time) {
	rand.Read(p.probe[:])
	p.probeAt = now
	f := proto.PathChallengeFrame{Data: p.probe}
	m.frame, _ = f.Append(m.frame[:0])
	m.sendLocked(p, 0, m.frame)
}

func (m *clientMesh) probeLoop() {
	defer m.wg.Done()
	t := time.NewTicker(meshProbeFast / 2)
	defer t.Stop()
	for {
		select {
		case <-m.closed:
			return
		case <-t.C:
		}
		now := m.now()
		m.mu.Lock()
		for _, p := range m.peers {
			if p.reachable && now.Sub(p.lastRecv) > meshSilence {
				p.reachable = false
			}
			every := meshKeepAlive
			if !p.reachable {
				every = meshProbeFast
				if now.Sub(p.since) > meshGiveUp {
					every = meshProbeSlow
				}
			}
			if now.Sub(p.probeAt) >= every {
				m.probeLocked(p, now)
			}
		}
		m.mu.Unlock()
	}
}

func (m *clientMesh) readLoop() {
	defer m.wg.Done()
	msgs := make([]udp.Message, 8)
	for i := range msgs {
		msgs[i].Buf = make([]byte, proto.MaxPacketSizeLimit)
	}
	for {
		n, err := m.conn.ReadBatch(msgs)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-m.closed:
				return
			default:
				continue
			}
		}
		for i := range n {
			m.receive(msgs[i].Buf[:msgs[i].N], msgs[i].Addr)
		}
	}
}

// receive handles one datagram: only a sealed peer packet of an
// introduced peer, fresh and authentic, is accepted.
func (m *clientMesh) receive(pkt []byte, from netip.AddrPort) {
	at := m.now()
	h, _, err := proto.ParseHeader(pkt)
	m.mu.Lock()
	if err != nil {
		m.stats.Dropped[tickwire.DropMalformed]++
		m.mu.Unlock()
		return
	}
	if h.ConnID == m.self && m.check != nil {
		data, ok := m.receiveCheck(pkt, &h)
		m.mu.Unlock()
		if ok {
			m.prove(data)
		}
		return
	}
	if h.ConnID == m.self && m.self != 0 && !m.proved && len(pkt) <= meshCheckSize {
		m.early = append(m.early[:0], pkt...) // its key is still on the way
		m.mu.Unlock()
		return
	}
	p, ok := m.peers[h.ConnID]
	if !ok {
		m.stats.Dropped[tickwire.DropUnknownConn]++
		m.mu.Unlock()
		return
	}
	payload, why, ok := p.link.Open(pkt, &h)
	if !ok {
		m.stats.Dropped[why]++
		m.mu.Unlock()
		return
	}
	moved := from != p.addr
	if moved {
		// Authentic, from elsewhere: challenge the new address; the peer
		// moves only when the answer comes back from there.
		mv := &p.moving
		if from != mv.addr {
			*mv = moveCheck{addr: from}
			rand.Read(mv.probe[:])
			m.stats.AddressChecks++
		}
		mv.in += len(pkt)
	}
	p.lastRecv = at
	cmds := m.rx[:0]
	r := proto.FrameReader{Payload: payload}
	for r.Next() {
		switch r.Type() {
		case proto.FramePathChallenge:
			f, _, err := proto.ParsePathChallengeFrame(r.Frame())
			if err == nil {
				// Answered on the path it came from (RFC 9000 §8.2.2).
				resp := proto.PathResponseFrame(f)
				m.frame, _ = resp.Append(m.frame[:0])
				if moved {
					m.sendMovingLocked(p, m.frame)
				} else {
					m.sendLocked(p, 0, m.frame)
				}
			}
		case proto.FramePathResponse:
			f, _, err := proto.ParsePathResponseFrame(r.Frame())
			if err == nil && moved && f.Data == p.moving.probe {
				p.addr = from
				p.moving = moveCheck{}
				m.stats.AddressChanges++
				moved = false
			} else if err == nil && !moved && f.Data == p.probe && !p.probeAt.IsZero() {
				sample := at.Sub(p.probeAt)
				if p.rtt == 0 {
					p.rtt = sample
				} else {
					p.rtt += (sample - p.rtt) / 8
				}
				p.reachable = true
				if !p.reached {
					p.reached = true
					m.noteReached(p)
				}
				p.probeAt = at // answered: the next probe waits its turn
			}
		case proto.FrameCommand:
			f, _, err := proto.ParseCommandFrame(r.Frame())
			if err == nil {
				cmds = append(cmds, f) // Data aliases pkt: valid until the next read
			}
		}
	}
	if r.Err() != nil {
		m.stats.Dropped[tickwire.DropMalformed]++
	}
	if moved && at.Sub(p.moving.sentAt) >= meshProbeFast {
		p.moving.sentAt = at
		f := proto.PathChallengeFrame{Data: p.moving.probe}
		m.frame, _ = f.Append(m.frame[:0])
		m.sendMovingLocked(p, m.frame)
	}
	conn := p.conn
	m.rx = cmds
	m.stats.ShortcutsReceived += uint64(len(cmds))
	m.mu.Unlock()
	for i := range cmds {
		m.deliver(&cmds[i], conn, at)
	}
}

// noteReached counts p, which answered for the first time on this
// connection, in MeshStats.Reached unless its player answered before
// (m.mu held).
func (m *clientMesh) noteReached(p *meshPeer) {
	if len(p.players) == 0 {
		m.stats.Reached++
		return
	}
	if m.reachedBy == nil {
		m.reachedBy = map[uint16]bool{}
	}
	if !m.reachedBy[p.players[0]] {
		m.reachedBy[p.players[0]] = true
		m.stats.Reached++
	}
}

// report is the mesh report: every peer and its round trip (0 when
// unreachable).
func (m *clientMesh) report(f *proto.MeshReportFrame) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f.Links = f.Links[:0]
	for _, p := range m.peers {
		if len(f.Links) == proto.MaxMeshReport {
			break
		}
		var us uint32
		if p.reachable {
			us = uint32(max(p.rtt.Microseconds(), 1))
		}
		f.Links = append(f.Links, proto.MeshLinkReport{Conn: p.conn, RTTMicros: us})
	}
}

// Stats returns the counters.
func (m *clientMesh) Stats() MeshStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Links = len(m.peers)
	for _, p := range m.peers {
		if p.reachable {
			s.Reachable++
		}
	}
	return s
}

// useful counts a shortcut that arrived before the server's copy.
func (m *clientMesh) useful() {
	m.mu.Lock()
	m.stats.ShortcutsUseful++
	m.mu.Unlock()
}

// late counts a shortcut that arrived after its tick was committed.
func (m *clientMesh) late() {
	m.mu.Lock()
	m.stats.ShortcutsLate++
	m.mu.Unlock()
}

// earlier records how much earlier a useful shortcut came than the
// server's copy.
func (m *clientMesh) earlier(d time.Duration) {
	m.mu.Lock()
	m.stats.Earlier += d
	m.stats.EarlierCount++
	m.mu.Unlock()
}
