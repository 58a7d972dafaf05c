package testrig

import (
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// FilterLayer is a client layer whose frames pass through Filter on
// their way in: it sees every frame before the layer does and returns
// the frame to deliver (the same slice, a modified copy) or nil to drop
// it, to watch frames or inject faults behind the AEAD.
type FilterLayer struct {
	tickwire.ClientLayer
	Filter func(t proto.FrameType, f []byte) []byte
}

// Attach attaches the layer and puts the filter before its frames.
func (l FilterLayer) Attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	fh, err := l.ClientLayer.Attach(c, a)
	if err != nil {
		return nil, err
	}
	return filteredFrames{fh, l.Filter}, nil
}

// filteredFrames is the frame handler of a FilterLayer.
type filteredFrames struct {
	tickwire.FrameHandler
	filter func(t proto.FrameType, f []byte) []byte
}

func (h filteredFrames) Frame(t proto.FrameType, f []byte, p *tickwire.PacketInfo) error {
	if f = h.filter(t, f); f != nil {
		return h.FrameHandler.Frame(t, f, p)
	}
	return nil
}

func (h filteredFrames) Tick(now time.Time, tick uint32) {
	if t, ok := h.FrameHandler.(tickwire.Ticker); ok {
		t.Tick(now, tick)
	}
}

func (h filteredFrames) Ended(now time.Time, r proto.DisconnectReason) {
	if e, ok := h.FrameHandler.(tickwire.Ender); ok {
		e.Ended(now, r)
	}
}
