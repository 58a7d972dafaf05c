package sim

import (
	"cmp"
	"slices"
)

// LateMessagePolicy says what the server does with a postmarked message
// that arrives after its tick was simulated.
type LateMessagePolicy uint8

const (
	// RunLate executes it at the next tick (Message.Late set) and reports
	// the tick it ran at (proto.ControlMessageLate with that tick in its Arg).
	RunLate LateMessagePolicy = iota
	// DropLate drops it and reports it (proto.ControlMessageLate, ran-at tick 0 in its Arg).
	DropLate
)

type queuedMessage struct {
	Message
	runAt uint32
}

// postmarkQueue holds tick-postmarked messages until their tick. Pending
// messages are kept in arrival order; data is copied into recycled
// buffers.
type postmarkQueue struct {
	pending []queuedMessage
	due     []Message
	free    [][]byte
}

func (q *postmarkQueue) add(m Message, runAt uint32) {
	var buf []byte
	if n := len(q.free); n > 0 {
		buf, q.free = q.free[n-1][:0], q.free[:n-1]
	}
	m.Data = append(buf, m.Data...)
	q.pending = append(q.pending, queuedMessage{Message: m, runAt: runAt})
}

// take returns the messages due at tick in (player, channel, arrival)
// order; their data stays valid until the next take.
func (q *postmarkQueue) take(tick uint32) []Message {
	for _, m := range q.due {
		q.free = append(q.free, m.Data)
	}
	q.due = q.due[:0]
	out := q.pending[:0]
	for _, m := range q.pending {
		if int32(m.runAt-tick) <= 0 {
			q.due = append(q.due, m.Message)
		} else {
			out = append(out, m)
		}
	}
	clear(q.pending[len(out):])
	q.pending = out
	slices.SortStableFunc(q.due, func(a, b Message) int {
		if c := cmp.Compare(a.Player, b.Player); c != 0 {
			return c
		}
		return cmp.Compare(a.Channel, b.Channel)
	})
	return q.due
}
