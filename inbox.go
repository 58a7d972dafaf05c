package tickwire

import (
	"errors"
	"net"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// rxBatch is one ReadBatch worth of datagrams with the time they were read.
// Batches cycle between the reader goroutine and the loop goroutine through
// two channels, so receiving allocates nothing.
type rxBatch struct {
	msgs []udp.Message
	n    int
	at   time.Time
}

const (
	rxBatchSize  = 32 // datagrams per ReadBatch
	rxBatchCount = 16 // batches in flight between reader and loop
)

// inbox runs the reader goroutine of a Server or Client.
type inbox struct {
	conn udp.BatchConn
	now  func() time.Time
	free chan *rxBatch
	full chan *rxBatch
	done chan struct{} // closed when the reader exits
	err  error         // why the reader exited (read after done)
}

func newInbox(conn udp.BatchConn, now func() time.Time) *inbox {
	in := &inbox{
		conn: conn,
		now:  now,
		free: make(chan *rxBatch, rxBatchCount),
		full: make(chan *rxBatch, rxBatchCount),
		done: make(chan struct{}),
	}
	for range rxBatchCount {
		b := &rxBatch{msgs: make([]udp.Message, rxBatchSize)}
		for i := range b.msgs {
			b.msgs[i].Buf = make([]byte, proto.MaxPacketSizeLimit+1) // +1: detect oversize datagrams
		}
		in.free <- b
	}
	return in
}

// run reads until the connection is closed. A batch waits for a free slot
// when the loop falls behind; the socket buffer absorbs the backlog.
func (in *inbox) run() {
	defer close(in.done)
	for b := range in.free {
		n, err := in.conn.ReadBatch(b.msgs)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				in.err = err
			}
			return
		}
		b.n, b.at = n, in.now()
		in.full <- b
	}
}
