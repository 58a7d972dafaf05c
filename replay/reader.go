package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// Record is one record of a replay file. Body's layout depends on Type
// (the Parse functions decode it).
type Record struct {
	Type RecordType
	Tick uint32
	Body []byte
}

// ErrTruncated wraps the error of a file that ends inside a block: a
// recording cut short (a crash, a copy taken while it was written).
// What comes before is good.
var ErrTruncated = errors.New("replay: file ends inside a block")

// Reader reads a replay file: its header, then its records in order.
// It never panics on a corrupt file, and allocates no more than the
// block sizes it checks against MaxBlock.
type Reader struct {
	r      *bufio.Reader
	hdr    Header
	off    int64 // file offset of the next block
	at     int64 // file offset of the current block
	comp   []byte
	block  []byte
	pos    int
	codecs *deltacomp.Codecs
}

// codecPool keeps the readers' decompressors: a zstd decoder is costly
// to make, and a tool reads several files.
var codecPool = sync.Pool{New: func() any { return new(deltacomp.Codecs) }}

// NewReader reads the header from r and returns a Reader of the
// records after it.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 1<<14), codecs: codecPool.Get().(*deltacomp.Codecs)}
	prefix := make([]byte, headerPrefix)
	if _, err := io.ReadFull(rd.r, prefix); err != nil {
		rd.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrNotReplay
		}
		return nil, fmt.Errorf("replay: %w", err)
	}
	n, err := parseHeaderPrefix(prefix)
	if err != nil {
		rd.Close()
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd.r, body); err != nil {
		rd.Close()
		return nil, &FormatError{0, "header truncated"}
	}
	if rd.hdr, err = parseHeaderBody(body); err != nil {
		rd.Close()
		return nil, err
	}
	rd.off = int64(headerPrefix + n)
	return rd, nil
}

// Header is the file's header.
func (r *Reader) Header() Header { return r.hdr }

// Next returns the next record; its Body is valid until the next call.
// At the end of the file it returns io.EOF; a file cut inside a block
// gives an error wrapping ErrTruncated, a corrupt one a *FormatError.
func (r *Reader) Next() (Record, error) {
	for r.pos >= len(r.block) {
		if err := r.readBlock(); err != nil {
			return Record{}, err
		}
	}
	b := r.block[r.pos:]
	bad := func(what string) (Record, error) {
		r.block, r.pos = nil, 0 // nothing more of this block is readable
		return Record{}, &FormatError{r.at, what}
	}
	if len(b) < recordHeader {
		return bad("record header truncated")
	}
	t, tick, n := RecordType(b[0]), le.Uint32(b[1:]), uint64(le.Uint32(b[5:]))
	if t == 0 || t >= recordTypeEnd {
		return bad(fmt.Sprintf("unknown %v", t))
	}
	if n > uint64(len(b)-recordHeader) {
		return bad(fmt.Sprintf("%v record of %d bytes in a block with %d left", t, n, len(b)-recordHeader))
	}
	r.pos += recordHeader + int(n)
	return Record{Type: t, Tick: tick, Body: b[recordHeader : recordHeader+int(n) : recordHeader+int(n)]}, nil
}

// readBlock reads and decompresses the next block.
func (r *Reader) readBlock() error {
	r.at = r.off
	var h [blockHeader]byte
	if n, err := io.ReadFull(r.r, h[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("%w (block at byte %d)", ErrTruncated, r.at)
	}
	length, codec, raw := uint64(le.Uint32(h[:])), proto.Codec(h[4]), int(le.Uint32(h[5:]))
	if length < 5 || length-5 > MaxBlock+MaxBlock/8 || raw > MaxBlock {
		return &FormatError{r.at, fmt.Sprintf("block of %d bytes (%d raw)", length, raw)}
	}
	if codec != proto.CodecNone && codec != proto.CodecZstd {
		return &FormatError{r.at, fmt.Sprintf("block codec %d", codec)}
	}
	if cap(r.comp) < int(length-5) {
		r.comp = make([]byte, length-5)
	}
	r.comp = r.comp[:length-5]
	if _, err := io.ReadFull(r.r, r.comp); err != nil {
		return fmt.Errorf("%w (block at byte %d)", ErrTruncated, r.at)
	}
	r.off += blockHeader - 5 + int64(length)
	var err error
	if r.block, err = r.codecs.AppendDecompress(r.block[:0], r.comp, codec, raw); err != nil {
		r.block = r.block[:0]
		return &FormatError{r.at, "block does not decompress: " + err.Error()}
	}
	r.pos = 0
	return nil
}

// Close hands the decompressor back for the next Reader. Do not use r
// afterwards.
func (r *Reader) Close() {
	if r.codecs != nil {
		codecPool.Put(r.codecs)
		r.codecs = nil
	}
}

// Recording is a whole replay file, read.
type Recording struct {
	// Path is the file's.
	Path   string
	Header Header
	// Records holds every record, in file order, bodies copied.
	Records []Record
	// Err is what ended the reading before the end of the file (a
	// truncated or corrupt tail), nil if it read to the end: the
	// records before it are good.
	Err error
}

// ReadFile reads the replay file at path. It fails when the file cannot
// be opened or has no valid header; a bad tail is Recording.Err.
func ReadFile(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rec.Path = path
	return rec, nil
}

// Read reads a whole replay from r.
func Read(r io.Reader) (*Recording, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	rec := &Recording{Header: rd.Header()}
	for {
		x, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rec.Err = err
			}
			return rec, nil
		}
		x.Body = append([]byte(nil), x.Body...)
		rec.Records = append(rec.Records, x)
	}
}
