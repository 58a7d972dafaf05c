//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// client is a transport client behind a handle: a tickwire.Client that
// dials in the background and whose events the game polls.
//
// The Client runs on its own goroutines and clock. Its loop hands the
// client what happens, in order — messages, the steps of a rejoin, the
// end — into the inbox; update moves the inbox into the event queue, so
// that a frame polls a fixed set of events, stamped with the game's
// time; poll takes them one by one.
type client struct {
	in inbox // filled on the Client's loop (Message, Disconnected, rejoinProgress)

	handle uint64
	token  *tickwire.ConnectToken
	cancel context.CancelFunc // stops the dial
	dialed chan dialResult    // the dial's outcome, sent once

	mu      sync.Mutex
	c       *tickwire.Client // set by update once the dial succeeded
	settled bool             // the dial's outcome was taken
	state   int32            // stateConnecting, stateConnected, stateDisconnected
	closing bool             // close was called
	events  []event          // made pollable by update; events[head:] not yet polled
	head    int
	errMsg  string
}

// event is one pollable event (tw_event without the C).
type event struct {
	kind     uint32
	flags    uint32
	time     float64
	delivery uint32
	channel  uint32
	tick     uint32
	reason   uint32
	detail   uint32
	// the commits mode's (commits.go)
	player, seq, command uint32
	data                 []byte
}

type dialResult struct {
	c   *tickwire.Client
	err error
}

// newClient starts dialing the token's server (or addr, when not empty)
// and gives the client a handle; rejoin, if set, brings it back into its
// slots by itself after a lost session.
func newClient(tok *tickwire.ConnectToken, addr string, cfg tickwire.Config, rejoin *tickwire.Rejoin) *client {
	c := dialClient(tok, addr, tickwire.Dialer{Config: cfg, Rejoin: rejoin})
	c.handle = handles.add(c)
	return c
}

// inbox holds what the Client's loop delivered and update has not taken
// yet, up to maxInbox messages or maxInboxBytes: the rest is dropped and
// counted, as tickwire.Client.Receive's queue would.
type inbox struct {
	mu      sync.Mutex
	events  []event
	bytes   int
	dropped uint64
}

const (
	maxInbox      = 1 << 16
	maxInboxBytes = 8 << 20
)

func (b *inbox) push(e event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.kind == eventMessage {
		if len(b.events) >= maxInbox || b.bytes+len(e.data) > maxInboxBytes {
			b.dropped++
			return
		}
		b.bytes += len(e.data)
	}
	b.events = append(b.events, e)
}

// take moves the inbox's events to dst, stamped with now.
func (b *inbox) take(dst []event, now float64) []event {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.events {
		b.events[i].time = now
	}
	dst = append(dst, b.events...)
	clear(b.events)
	b.events, b.bytes = b.events[:0], 0
	return dst
}

func (b *inbox) droppedCount() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Message implements tickwire.ClientHandler, on the Client's loop.
func (c *client) Message(_ *tickwire.Client, m *tickwire.Message) {
	e := event{kind: eventMessage, delivery: uint32(m.Delivery), channel: uint32(m.Channel), data: slices.Clone(m.Data)}
	if m.Postmarked {
		e.flags |= flagPostmarked
		e.tick = m.Tick
	}
	c.in.push(e)
}

// Disconnected implements tickwire.ClientHandler: the end, whose
// details (remote, the message) update reads from the Client.
func (c *client) Disconnected(_ *tickwire.Client, r proto.DisconnectReason) {
	c.in.push(event{kind: eventDisconnected, reason: uint32(r)})
}

// rejoinProgress is the Rejoin's Progress, on the Client's loop.
func (c *client) rejoinProgress(p tickwire.RejoinProgress) {
	switch p.State {
	case tickwire.RejoinLost:
		c.in.push(event{kind: eventRejoining, reason: uint32(p.Reason), flags: flagRemote})
	case tickwire.RejoinDone:
		c.in.push(event{kind: eventRejoined, detail: uint32(p.Attempt)})
	}
}

// dialClient starts dialing with d (its Config, and Game for the commits
// mode) and returns the client without a handle.
func dialClient(tok *tickwire.ConnectToken, addr string, d tickwire.Dialer) *client {
	if addr != "" {
		t := *tok
		t.ServerAddrs = []string{addr}
		tok = &t
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{
		token:  tok,
		cancel: cancel,
		dialed: make(chan dialResult, 1),
		state:  stateConnecting,
	}
	d.Handler = c
	if d.Rejoin != nil {
		r := *d.Rejoin
		r.Progress = c.rejoinProgress
		d.Rejoin = &r
	}
	go func() {
		tc, err := d.Dial(ctx, tok)
		c.dialed <- dialResult{tc, err}
	}()
	return c
}

func (c *client) kind() kind { return kindClient }

func (c *client) setErr(msg string) {
	c.mu.Lock()
	c.errMsg = msg
	c.mu.Unlock()
}

func (c *client) lastErr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errMsg
}

// push makes e pollable; the caller holds c.mu.
func (c *client) push(e event) { c.events = append(c.events, e) }

// update makes pollable what happened since the last update: the dial's
// outcome, the messages received, the end of the session.
func (c *client) update(now float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.head > 0 { // drop what was polled, keep what was not
		n := copy(c.events, c.events[c.head:])
		clear(c.events[n:])
		c.events, c.head = c.events[:n], 0
	}
	if !c.settled {
		select {
		case r := <-c.dialed:
			c.settle(r, now)
		default:
			return
		}
	}
	if c.c == nil || c.state == stateDisconnected {
		return
	}
	first := len(c.events)
	c.events = c.in.take(c.events, now)
	for i := first; i < len(c.events); i++ {
		if c.events[i].kind != eventDisconnected {
			continue
		}
		// The last event: the Client has recorded the end by now.
		var de *tickwire.DisconnectError
		if err := c.c.Err(); errors.As(err, &de) {
			if de.Remote {
				c.events[i].flags |= flagRemote
			}
			c.errMsg = err.Error()
		}
		c.state = stateDisconnected
		clear(c.events[i+1:])
		c.events = c.events[:i+1]
		return
	}
}

// settle takes the dial's outcome; the caller holds c.mu.
func (c *client) settle(r dialResult, now float64) {
	c.settled = true
	if r.err == nil {
		c.c = r.c
		if c.closing { // closed while the dial finished: no CONNECTED
			go r.c.Close()
			return
		}
		c.state = stateConnected
		c.push(event{kind: eventConnected, time: now})
		return
	}
	e := event{kind: eventDisconnected, time: now, reason: disconnectConnectFailed}
	var de *tickwire.DeniedError
	switch {
	case errors.As(r.err, &de):
		e.reason, e.detail = disconnectDenied, uint32(de.Reason)
	case errors.Is(r.err, tickwire.ErrHandshakeTimeout):
		e.reason = disconnectHandshakeTimeout
	case c.closing && errors.Is(r.err, context.Canceled):
		e.reason = uint32(proto.DisconnectClosed)
	}
	c.push(e)
	c.state = stateDisconnected
	c.errMsg = r.err.Error()
}

// poll hands the next pollable event to take, and consumes it when take
// returns resOK; otherwise the event stays first and take's message is
// the client's last error. With no event it calls take with nil.
func (c *client) poll(take func(e *event) (result, string)) result {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e *event
	if c.head < len(c.events) {
		e = &c.events[c.head]
	}
	r, msg := take(e)
	switch {
	case r != resOK:
		c.errMsg = msg
	case e != nil:
		*e = event{}
		c.head++
	}
	return r
}

// connected returns the Client when the game has seen it connect (as of
// the last update), else records and returns resNotConnected.
func (c *client) connected() (*tickwire.Client, result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateConnected {
		c.errMsg = fmt.Sprintf("tickwire: client %d is %s", c.handle, stateName(c.state))
		return nil, resNotConnected
	}
	return c.c, resOK
}

// accepted returns the Client once the server accepted it (before or
// after the end), else records and returns resNotConnected.
func (c *client) accepted() (*tickwire.Client, result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		c.errMsg = fmt.Sprintf("tickwire: client %d has no connection (%s)", c.handle, stateName(c.state))
		return nil, resNotConnected
	}
	return c.c, resOK
}

// fail records err's message and returns its code.
func (c *client) fail(err error) result {
	if err == nil {
		return resOK
	}
	c.setErr(err.Error())
	return resultOf(err)
}

// send queues one message.
func (c *client) send(d tickwire.Delivery, channel uint8, postmarked bool, tick uint32, data []byte) result {
	tc, r := c.connected()
	if r != resOK {
		return r
	}
	if postmarked {
		return c.fail(tc.SendAt(d, channel, tick, data))
	}
	return c.fail(tc.Send(d, channel, data))
}

// flush sends what is queued now.
func (c *client) flush() result {
	tc, r := c.connected()
	if r != resOK {
		return r
	}
	tc.Flush()
	return resOK
}

// close starts closing: a dial gives up, a Client closes in the
// background; update reports the end.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.closing = true
	c.cancel()
	if c.c != nil {
		go c.c.Close()
	}
}

// free closes the client and waits until its goroutines let go of it.
// The caller has removed it from the handle table.
func (c *client) free() {
	c.close()
	c.mu.Lock()
	if !c.settled {
		// The dial's context is cancelled: it returns at once.
		c.settle(<-c.dialed, 0)
	}
	tc := c.c
	clear(c.events)
	c.events, c.head = nil, 0
	c.mu.Unlock()
	if tc != nil {
		tc.Close() // waits for the Close that close started
	}
}

func stateName(s int32) string {
	switch s {
	case stateConnecting:
		return "connecting"
	case stateConnected:
		return "connected"
	case stateDisconnected:
		return "disconnected"
	}
	return "in no state"
}

// currentState is the state as of the last update.
func (c *client) currentState() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}
