package replay

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tickwire/tickwire/proto"
)

// Config tunes a Writer and the recorder that writes to it. The zero
// value of every field means its documented default.
type Config struct {
	// Game is the game's name in the header, by which tickwire-replay
	// finds its code ("arena", "swarm"; at most 255 bytes).
	Game string
	// GameID is the game's id in the header of a client's recording,
	// to tell which server recording it goes with (a server's recorder
	// writes its game's own).
	GameID uint64
	// KeyEvery is how many ticks apart the recorder writes a full state
	// (default 600: ten seconds at 60 Hz). Between two, a state is
	// rebuilt by re-running the recorded inputs or commands.
	KeyEvery int
	// SegmentBytes bounds a file: once it holds this many bytes, the
	// next full state starts a new segment. The file is renamed
	// Path.1 (the one before it Path.2, and so on) and Path starts
	// again with the header (default 32 MiB).
	SegmentBytes int64
	// Segments is how many files a recording keeps, the current one
	// included (default 2): it never takes much more than Segments ×
	// SegmentBytes of disk.
	Segments int
	// DesyncRing is how many committed states a commits-mode client
	// keeps in memory, to write them when the server finds that its
	// committed state differs (StateBeforeDesync): what its own game
	// code computed up to the desync, for tickwire-replay -bisect
	// (default four seconds of ticks, which covers the server's check
	// a second behind; negative: none). It costs that many times the
	// canonical state's size in memory, and a copy of it per committed
	// tick.
	DesyncRing int
}

func (c *Config) defaults() error {
	if c.KeyEvery == 0 {
		c.KeyEvery = 600
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = 32 << 20
	}
	if c.Segments == 0 {
		c.Segments = 2
	}
	switch {
	case len(c.Game) > 255:
		return errors.New("replay: Config.Game is longer than 255 bytes")
	case c.KeyEvery < 1 || c.KeyEvery > 1<<30:
		return fmt.Errorf("replay: Config.KeyEvery %d out of 1..2^30 ticks", c.KeyEvery)
	case c.SegmentBytes < 1<<16:
		return fmt.Errorf("replay: Config.SegmentBytes %d below 64 KiB", c.SegmentBytes)
	case c.Segments < 1 || c.Segments > 100:
		return fmt.Errorf("replay: Config.Segments %d out of 1..100", c.Segments)
	}
	return nil
}

// How the tick hands records to the Writer's goroutine: it appends to a
// chunk of chunkBytes (grown, once, by a full state larger than that),
// and sends the chunk once it holds flushBytes or a second of ticks;
// numChunks chunks circulate. The goroutine gathers chunks into blocks
// of blockBytes, or whatever arrived within blockAge, and compresses
// each block.
const (
	chunkBytes = 64 << 10
	flushBytes = 32 << 10
	numChunks  = 8
	blockBytes = 64 << 10
	blockAge   = 2 * time.Second
	// maxBehind is how much a chunk may hold while the goroutine has no
	// free chunk to give back (a disk slower than the game for a while).
	maxBehind = 4 << 20
)

// chunk is records on their way to the file, or a mark: header (write
// the header: the file's start), newSegment (start a new segment).
type chunk struct {
	b                  []byte
	header, newSegment bool
}

// WriterStats count what a Writer did.
type WriterStats struct {
	// Records and Raw count the records and their bytes handed to the
	// goroutine; Bytes the bytes written to the files (compressed,
	// headers included).
	Records, Raw, Bytes int64
	// Lost counts chunks of records dropped because the goroutine was
	// behind (the disk too slow): the file has a gap there (EventGap),
	// and a full state after it.
	Lost uint64
	// Segments counts the segments started after the first.
	Segments uint32
}

// Writer writes a recording to a file, and its older segments next to
// it. A recorder (ServerRecorder, ClientRecorder, CommitRecorder)
// appends records from the goroutine that steps the game, into a
// preallocated chunk, without a system call or an allocation; a
// goroutine of the Writer's compresses them (zstd) and writes them.
// Only Stats is safe from other goroutines.
type Writer struct {
	cfg  Config
	path string

	// The recording side (the game's goroutine).
	buf       []byte
	free      chan []byte
	full      chan chunk
	hdr       []byte // the encoded header: the goroutine starts each segment with it
	began     bool
	lastFlush uint32
	lost      uint32 // chunks dropped since the last full state
	records   int64
	closed    bool

	// The goroutine's.
	file    *os.File
	size    atomic.Int64 // bytes in the current segment
	written atomic.Int64
	raw     atomic.Int64
	nrec    atomic.Int64
	dropped atomic.Uint64
	segs    atomic.Uint32
	done    chan struct{}
	err     error // read after done
}

// Create creates (or truncates) the file at path for a recording and
// starts the Writer's goroutine. Hand the Writer to a recorder (or to
// game.Host, game.Client, commits, which make theirs); Close it when the
// game ends.
func Create(path string, cfg Config) (*Writer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	w := &Writer{cfg: cfg, path: path, file: f, free: make(chan []byte, numChunks), full: make(chan chunk, 2*numChunks),
		done: make(chan struct{}), buf: make([]byte, 0, chunkBytes)}
	for range numChunks - 1 {
		w.free <- make([]byte, 0, chunkBytes)
	}
	go w.run()
	return w, nil
}

// Path is the file the recording goes to (older segments are Path.1,
// Path.2...).
func (w *Writer) Path() string { return w.path }

// Config is the Writer's configuration, defaults filled in.
func (w *Writer) Config() Config { return w.cfg }

// Stats returns the counters. Safe from any goroutine.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Records: w.nrec.Load(), Raw: w.raw.Load(), Bytes: w.written.Load(),
		Lost: w.dropped.Load(), Segments: w.segs.Load()}
}

// begin writes the header; the recorder calls it once, first.
func (w *Writer) begin(h *Header) error {
	if w.began {
		return errors.New("replay: the Writer has a recorder already")
	}
	h.Game, h.KeyEvery = w.cfg.Game, w.cfg.KeyEvery
	if h.Started.IsZero() {
		h.Started = time.Now()
	}
	b, err := h.Append(nil)
	if err != nil {
		return err
	}
	w.hdr, w.began = b, true
	w.full <- chunk{header: true}
	return nil
}

// open starts a record of type t at tick: the caller appends its body
// to w.buf, then calls end with what open returned.
func (w *Writer) open(t RecordType, tick uint32) int {
	at := len(w.buf)
	w.buf = append(w.buf, byte(t))
	w.buf = le.AppendUint32(w.buf, tick)
	w.buf = le.AppendUint32(w.buf, 0)
	return at
}

// end closes the record open started at at.
func (w *Writer) end(at int) {
	le.PutUint32(w.buf[at+5:], uint32(len(w.buf)-at-recordHeader))
	w.records++
}

// event records e at tick.
func (w *Writer) event(tick uint32, e *Event) {
	at := w.open(RecordEvent, tick)
	w.buf = appendEvent(w.buf, e)
	w.end(at)
}

// keyDue reports whether the recorder writes a full state at tick,
// whose last full state was at last (has: there was one): every
// KeyEvery ticks, and at once after a gap. selfContained asks for one a
// re-run can start from alone (a new segment, or after a gap): the
// chunk so far is sent first, and the state goes to the new segment.
func (w *Writer) keyDue(tick, last uint32, has bool) (due, selfContained bool) {
	if w.lost > 0 {
		if len(w.free) == 0 {
			return false, false // the state would be lost too: later
		}
		w.event(tick, &Event{Kind: EventGap, Arg: w.lost})
		w.lost = 0
		return true, true
	}
	if has && int64(tick-last) < int64(w.cfg.KeyEvery) {
		return false, false
	}
	if has && w.size.Load() >= w.cfg.SegmentBytes {
		w.flush(tick, true)
		return true, true
	}
	return true, !has
}

// tickDone ends the recorder's work for tick: the chunk goes to the
// goroutine once it holds flushBytes, or a second of ticks (rate).
func (w *Writer) tickDone(tick uint32, rate int) {
	if len(w.buf) >= flushBytes || int64(tick-w.lastFlush) >= int64(rate) {
		w.flush(tick, false)
	}
}

// flush hands the chunk to the goroutine, the next one to start a new
// segment if newSegment. Without a free chunk (the goroutine is behind)
// the chunk keeps growing, up to maxBehind; beyond, its records are
// dropped and counted, and the next full state says so.
func (w *Writer) flush(tick uint32, newSegment bool) {
	w.lastFlush = tick
	if w.closed || len(w.buf) == 0 && !newSegment {
		return
	}
	select {
	case next := <-w.free:
		w.raw.Add(int64(len(w.buf)))
		w.nrec.Add(w.records)
		w.full <- chunk{b: w.buf}
		w.buf = next[:0]
		if newSegment {
			w.full <- chunk{newSegment: true}
		}
		w.records = 0
	default:
		if len(w.buf) < maxBehind {
			return // try again next tick
		}
		w.dropped.Add(1)
		w.lost++
		w.buf = w.buf[:0]
		w.records = 0
	}
}

// Close sends what is left, waits for the goroutine to write it and
// closes the file. It returns the first error the goroutine met.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	if len(w.buf) > 0 {
		w.raw.Add(int64(len(w.buf)))
		w.nrec.Add(w.records)
		w.full <- chunk{b: w.buf}
	}
	w.closed = true
	close(w.full)
	<-w.done
	return w.err
}

// run is the goroutine: it gathers chunks into blocks, compresses and
// writes them, and starts new segments.
func (w *Writer) run() {
	defer close(w.done)
	// zstd's fastest level: on recordings it compresses as well as the
	// default (steps and states repeat themselves), in two thirds of
	// the CPU.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
	if err != nil {
		w.err = fmt.Errorf("replay: %w", err)
	} else {
		defer enc.Close()
	}
	var pending, out []byte
	var since time.Time
	// write compresses the first n bytes of pending (whole records) as
	// a block.
	write := func(n int) {
		if n == 0 || w.err != nil {
			pending = pending[:copy(pending, pending[n:])]
			return
		}
		if n > MaxBlock {
			w.err = fmt.Errorf("replay: a record of %d bytes is larger than a block (%d)", n, MaxBlock)
			return
		}
		out = append(out[:0], 0, 0, 0, 0, byte(proto.CodecZstd))
		out = le.AppendUint32(out, uint32(n))
		out = enc.EncodeAll(pending[:n], out)
		le.PutUint32(out, uint32(len(out)-4))
		w.writeFile(out)
		pending = pending[:copy(pending, pending[n:])]
	}
	for c := range w.full {
		switch {
		case c.header:
			w.writeFile(w.hdr)
			continue
		case c.newSegment:
			write(len(pending))
			w.rotate()
			continue
		}
		if len(pending) == 0 {
			since = time.Now()
		}
		pending = append(pending, c.b...)
		w.free <- c.b[:0]
		for len(pending) >= blockBytes {
			write(cutBlock(pending))
		}
		if time.Since(since) >= blockAge {
			write(len(pending))
		}
	}
	for len(pending) > 0 {
		write(cutBlock(pending))
	}
	if err := w.file.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("replay: %w", err)
	}
}

func (w *Writer) writeFile(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.file.Write(b); err != nil {
		w.err = fmt.Errorf("replay: %w", err)
		return
	}
	w.size.Add(int64(len(b)))
	w.written.Add(int64(len(b)))
}

// rotate closes the current segment, shifts the older files by one
// (Path.1 to Path.2...; the oldest beyond Segments goes), and starts
// the new segment with the header.
func (w *Writer) rotate() {
	if w.err != nil {
		return
	}
	if err := w.file.Close(); err != nil {
		w.err = fmt.Errorf("replay: %w", err)
		return
	}
	n := w.cfg.Segments
	os.Remove(fmt.Sprintf("%s.%d", w.path, n-1))
	for i := n - 2; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", w.path, i), fmt.Sprintf("%s.%d", w.path, i+1))
	}
	if n > 1 {
		if err := os.Rename(w.path, w.path+".1"); err != nil {
			w.err = fmt.Errorf("replay: %w", err)
			return
		}
	}
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		w.err = fmt.Errorf("replay: %w", err)
		return
	}
	w.file = f
	w.size.Store(0)
	seg := w.segs.Add(1)
	le.PutUint32(w.hdr[segmentOffset:], seg)
	w.writeFile(w.hdr)
}

// cutBlock is how many bytes of b, whole records, the next block takes:
// up to blockBytes, or the first record alone if it is larger.
func cutBlock(b []byte) int {
	n := 0
	for n+recordHeader <= len(b) {
		end := n + recordHeader + int(le.Uint32(b[n+5:]))
		if n > 0 && end > blockBytes {
			break
		}
		n = end
	}
	if n == 0 {
		return len(b)
	}
	return min(n, len(b))
}
