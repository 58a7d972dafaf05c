package commits

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// The server validates the mesh address a client's hello names before
// it introduces it to anyone, as QUIC validates a path: the hello's port
// at the session's current IP address, which may be forged (the session
// follows a new source at once, and validates it later). The server
// sends the client a check key on the session, then a peer packet
// sealed with it, holding a path challenge, to the claimed address; the
// client's mesh opens it there and the client returns the challenge's
// data on the session (MeshProof). Only that proof makes the address a
// member. An address nobody answers from gets meshCheckTries challenges
// of meshCheckSize bytes (51) per hello, and a connection says hello at
// most meshHelloTries times: 2 × 51 bytes for each hello, which comes in
// a sealed session packet of at least 50 bytes (header, hello frame,
// tag), within 3×.
const (
	meshCheckTries = 2
	meshCheckEvery = 250 * time.Millisecond
	meshCheckTime  = 2 * time.Second
	meshHelloTries = 3
	// meshCheckSize is a challenge packet's size: a header, the path
	// challenge frame and the tag.
	meshCheckSize = proto.HeaderSize + 1 + proto.PathDataSize + proto.SealOverhead
)

// meshCheck is a mesh address being validated.
type meshCheck struct {
	addr  netip.AddrPort
	data  [proto.PathDataSize]byte
	link  *session.MeshLink
	start time.Time
	sent  int
}

// meshHello starts the check of the address cc's hello names.
func (h *commitServer) meshHello(cc *commitConn, port uint16, now time.Time) {
	if h.cfg.NoMesh || cc.meshAddr.IsValid() || cc.check != nil || cc.hellos >= meshHelloTries {
		return
	}
	cc.hellos++
	var info [8 + 4 + 4]byte
	binary.LittleEndian.PutUint64(info[0:], cc.g.id)
	binary.LittleEndian.PutUint32(info[8:], cc.c.ID())
	binary.LittleEndian.PutUint32(info[12:], uint32(cc.hellos))
	k, err := hkdf.Key(sha256.New, h.secret[:], nil, "tickwire mesh check "+string(info[:]), proto.KeySize)
	if err != nil {
		return
	}
	key := [proto.KeySize]byte(k)
	link, err := session.NewMeshLink(cc.c.ID(), cc.c.ID(), &key, &key)
	if err != nil {
		return
	}
	chk := &meshCheck{addr: netip.AddrPortFrom(cc.c.Addr().Addr(), port), link: link, start: now}
	rand.Read(chk.data[:])
	cc.check = chk
	h.stats.MeshChecks++
	h.sendIntro(cc, &proto.MeshIntroFrame{Op: proto.MeshCheck, Conn: cc.c.ID(), RecvKey: key})
}

// meshChecks sends the challenges due and ends the checks that ran out
// of time.
func (h *commitServer) meshChecks(cc *commitConn, now time.Time) {
	chk := cc.check
	if chk == nil {
		return
	}
	if now.Sub(chk.start) > meshCheckTime {
		cc.check = nil
		h.stats.MeshCheckFailed++
		h.log.Info("mesh address did not answer its check", "game", cc.g.id, "conn", cc.c.ID(), "addr", chk.addr)
		return
	}
	// The first challenge waits a round trip for the key to get there.
	due := chk.start.Add(cc.c.Stats().RTT + time.Duration(chk.sent)*meshCheckEvery)
	if chk.sent >= meshCheckTries || now.Before(due) {
		return
	}
	f := proto.PathChallengeFrame{Data: chk.data}
	frame, err := f.Append(make([]byte, 0, 1+proto.PathDataSize))
	if err != nil {
		return
	}
	h.srv.SendDatagram(chk.link.Append(make([]byte, 0, meshCheckSize), 0, frame), chk.addr)
	chk.sent++
}

// meshProof takes the client's proof: the address becomes a member when
// the data is the challenge's.
func (h *commitServer) meshProof(cc *commitConn, data [proto.PathDataSize]byte) {
	chk := cc.check
	if chk == nil || chk.sent == 0 || data != chk.data {
		h.stats.MeshBadProofs++
		return
	}
	cc.check = nil
	cc.meshAddr = chk.addr
	h.stats.MeshValidated++
	h.meshJoin(cc)
}
