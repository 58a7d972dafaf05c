package tickwire

import (
	"errors"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// FrameHandler is a protocol layer that rides on a connection's packets,
// as the game layer (game.Host on a server's Conn, game.Client on a Client)
// does: it receives the frames the connection does not handle itself,
// adds its own frames to the first packet of every tick, and names the
// ticks in the packet headers; one that implements PacketFates also
// hears which of the packets it wrote were delivered or lost. Attach one with Conn.SetFrameHandler or through
// Dialer.Game. Every method runs on the connection's loop goroutine.
type FrameHandler interface {
	// Frame receives one frame (input, snapshot, checksum, control...)
	// of an authenticated packet described by p; frame is valid only
	// during the call. An error counts the frame as bad (ConnStats.BadFrames).
	Frame(t proto.FrameType, frame []byte, p *PacketInfo) error
	// AppendFrames adds frames to the packet p describes (its number, the
	// send time, the path's estimates), within room bytes, and returns b.
	AppendFrames(b []byte, room int, p *PacketInfo) []byte
	// Ticks are the tick fields of the connection's next packet headers.
	Ticks() Ticks
}

// PacketFates is implemented by a FrameHandler that learns what became
// of the packets it wrote (a game host moves its delta baselines on
// them): Delivered and Lost report each packet's fate by number, once,
// on the connection's loop.
type PacketFates interface {
	Delivered(pn uint64)
	Lost(pn uint64)
}

// Pacer is implemented by a FrameHandler that sends on some ticks only:
// a game.Host with game.Config.SnapshotInterval above 1 on the server, a
// game.Client with SetInputInterval above 1 on the client. Due reports
// whether the packet of the owner's tick must go, and is called once
// per tick, before that tick's AppendFrames. Between due ticks the
// owner sends only data queued (reliable or unreliable messages and
// frames) and keep-alives; the acknowledgements it owes wait for its
// next due packet. Without it, an owner with a frame handler sends a
// packet every tick.
type Pacer interface {
	Due(tick uint32) bool
}

// Ender is implemented by a client's FrameHandler that wants to know
// when the session ended: Ended runs once, on the client's loop, with the
// reason and the time, before the ClientHandler's Disconnected.
type Ender interface {
	Ended(now time.Time, reason proto.DisconnectReason)
}

// PacketInfo describes the packet a FrameHandler call is about: Header
// and Number of a received packet (zero Header when building one), Time
// (arrival or send time), and the path's RTT, RTTVar and Loss estimates.
type PacketInfo = session.PacketInfo

// Ticks are the tick fields of a packet header: the tick it speaks for
// (the server's state tick, or a client's predicted tick) and the
// interpolated view a client showed (InterpFrom, InterpTo, Blend).
type Ticks = session.Ticks

// sessionHandler connects a session to its owner: messages go to the
// owner's message sink, everything else to the attached FrameHandler (or
// is refused when none is attached).
type sessionHandler struct {
	message func(m *Message)
	// rejoin takes a rejoin credential (a client's; nil on a server,
	// which never receives one)
	rejoin func(f *proto.SuccessorFrame) error
	frames FrameHandler
	pacer  Pacer       // frames, when it paces its packets
	fates  PacketFates // frames, when it hears its packets' fates
}

// setFrames attaches f (nil detaches).
func (h *sessionHandler) setFrames(f FrameHandler) {
	h.frames = f
	h.pacer, _ = f.(Pacer)
	h.fates, _ = f.(PacketFates)
}

// sendMode is when the owner's session sends a packet at tick.
func (h *sessionHandler) sendMode(tick uint32) session.SendMode {
	switch {
	case h.frames == nil:
		return session.SendOwed
	case h.pacer != nil && !h.pacer.Due(tick):
		return session.SendHeld
	}
	return session.SendAlways
}

func (h *sessionHandler) Message(m *Message, _ *PacketInfo) { h.message(m) }

func (h *sessionHandler) Frame(t proto.FrameType, f []byte, p *PacketInfo) error {
	if t == proto.FrameSuccessor && h.rejoin != nil {
		if sf, _, err := proto.ParseSuccessorFrame(f); err == nil && sf.Kind == proto.SuccessorRejoin {
			return h.rejoin(&sf)
		}
	}
	if h.frames == nil {
		return errNoFrameHandler
	}
	return h.frames.Frame(t, f, p)
}

func (h *sessionHandler) AppendFrames(b []byte, room int, p *PacketInfo) []byte {
	if h.frames == nil {
		return b
	}
	return h.frames.AppendFrames(b, room, p)
}

func (h *sessionHandler) Delivered(pn uint64) {
	if h.fates != nil {
		h.fates.Delivered(pn)
	}
}

func (h *sessionHandler) Lost(pn uint64) {
	if h.fates != nil {
		h.fates.Lost(pn)
	}
}

// ticks are the header ticks of the owner's packets: the frame handler's,
// or tick alone without one.
func (h *sessionHandler) ticks(tick uint32) Ticks {
	if h.frames != nil {
		return h.frames.Ticks()
	}
	return session.TickOnly(tick)
}

var errNoFrameHandler = errors.New("tickwire: frame for a connection without a frame handler")
