package deltacomp

import "sync/atomic"

// patchCodes caches the run-length codes of one revision's patches (or of
// the latest records, for entities sent in full, or of the patches
// against a prediction) for the ring's latest revision, so that the
// clients holding the same baseline share one encoding per entity and
// tick instead of encoding it each. Encoders of different clients fill it
// concurrently while the ring stands still: an entity's code is written
// once, by the encoder that claims it, and read by the others after it is
// published. A code is cached under a key besides the entity (the
// prediction's step; 0 for the others): an encoder asking for another
// key encodes its own.
//
// A code of at most shortCode bytes (a moving entity's usual patch: a
// token and its changed bytes) is kept in the entity's entry, beside its
// state word, so that the encoders reading it touch one cache line per
// entity, four entities a line, rather than a line of its own in buf:
// between two clients that see the same entity a build worker streams
// many others' state through its caches, and the codes the clients
// share should stay there.
type patchCodes struct {
	entries []codeEntry
	buf     []byte // entity i's code at i*max (read there when longer than shortCode)
	max     int    // longest code of one record
}

// codeEntry is one entity's cached code: its state word
// (stamp<<32 | codeReady or codeBusy | codeZero | key<<16 | length) and,
// when the code is at most shortCode bytes, the code, written before the
// state word publishes it.
type codeEntry struct {
	state atomic.Uint64
	short [shortCode]byte
}

// shortCode is the longest code a codeEntry holds itself.
const shortCode = 8

const (
	codeReady = 1 << 31
	codeBusy  = 1 << 30
	// codeZero marks the code of an all-zero patch, so that a client can
	// tell it holds the entity's state without reading the code.
	codeZero  = 1 << 29
	codeKey   = 16        // the key's shift
	maxKey    = 1<<13 - 1 // largest key: 13 bits, below codeZero
	codeLenOf = 0xffff
)

// codeSource is where the code of a patch an encoder sized came from.
type codeSource uint8

const (
	codeShared  codeSource = iota // read from the cache: another encoder (or this one) encoded it this revision
	codeEncoded                   // encoded into the cache by this encoder, the first to need it
	codePrivate                   // encoded for this packet alone (another encoder was writing it, or the cache held another key's)
)

// CodeStats counts where the run-length codes of the patches the
// encoders of a Scratch sized came from: the ring caches each entity's
// code per baseline revision for the latest revision, so that clients
// acknowledged at the same revision share one encoding per entity and
// tick. Shared codes were read from that cache, Encoded ones were
// encoded into it (by the first encoder to need them), Private ones
// were encoded for one packet alone (another encoder was writing that
// code at that moment, or the cache held the code of another
// prediction step). Each code looked up counts once: an entity sized
// with a Predictor looks up two (its patch's and, when it changed, its
// predicted patch's); one sized again in the same packet is not counted
// again.
type CodeStats struct {
	Shared, Encoded, Private uint64
}

// HitRate is the share of the codes that were read from the cache
// (Shared over all), 0 when none was counted.
func (c CodeStats) HitRate() float64 {
	n := c.Shared + c.Encoded + c.Private
	if n == 0 {
		return 0
	}
	return float64(c.Shared) / float64(n)
}

// Add returns the sum of c and d.
func (c CodeStats) Add(d CodeStats) CodeStats {
	return CodeStats{Shared: c.Shared + d.Shared, Encoded: c.Encoded + d.Encoded, Private: c.Private + d.Private}
}

// maxCodeLen is the longest run-length code of a recordSize-byte patch:
// a token per group of 7 bytes and every byte literal.
func maxCodeLen(recordSize int) int { return recordSize + (recordSize+rleGroup-1)/rleGroup }

// resize makes room for n entities of recordSize bytes. It runs while no
// encoder reads (in Push), and forgets nothing that is still valid: codes
// are stamped with the revision they belong to.
func (c *patchCodes) resize(n, recordSize int) {
	c.max = maxCodeLen(recordSize)
	if cap(c.entries) < n {
		c.entries = make([]codeEntry, n, n+n/4)
		c.buf = make([]byte, cap(c.entries)*c.max)
	}
	c.entries = c.entries[:n]
}

// lookup returns entity i's code under key, valid for the ring's revision
// stamp, when it is cached (found; aliasing the cache, valid until the
// ring's next push), and whether p is all zero. Otherwise claimed says
// whether the caller is now the one to publish it, and when it is not
// (another encoder is writing it, or it holds another key's code) the
// caller encodes its own (encodeOwn).
func (c *patchCodes) lookup(stamp uint32, key uint32, i int) (code []byte, zero, found, claimed bool) {
	if i >= len(c.entries) || key > maxKey {
		return nil, false, false, false
	}
	ent := &c.entries[i]
	v := ent.state.Load()
	if uint32(v>>32) == stamp {
		if v&codeReady == 0 || uint32(v>>codeKey)&maxKey != key {
			return nil, false, false, false
		}
		n := int(v & codeLenOf)
		if n <= shortCode {
			return ent.short[:n:n], v&codeZero != 0, true, false
		}
		off := i * c.max
		return c.buf[off : off+n : off+n], v&codeZero != 0, true, false
	}
	return nil, false, false, ent.state.CompareAndSwap(v, uint64(stamp)<<32|codeBusy)
}

// publish encodes patch p as entity i's code under key, which the caller
// claimed (lookup), and returns it and whether p is all zero.
func (c *patchCodes) publish(stamp uint32, key uint32, i int, p []byte) (code []byte, zero bool) {
	ent := &c.entries[i]
	off := i * c.max
	code = AppendPatch(c.buf[off:off:off+c.max], p)
	zero = isZeroCode(code)
	if len(code) > c.max {
		// Cannot happen (maxCodeLen bounds it); AppendPatch moved it.
		ent.state.Store(0)
		return code, zero
	}
	if len(code) <= shortCode {
		code = ent.short[:copy(ent.short[:], code)]
	}
	v := uint64(stamp)<<32 | codeReady | uint64(key)<<codeKey | uint64(len(code))
	if zero {
		v |= codeZero
	}
	ent.state.Store(v)
	return code[:len(code):len(code)], zero
}

// code returns the code of entity i's patch p (key 0), valid for the
// ring's revision stamp, whether p is all zero, and where the code came
// from: the shared copy when there is one, else it encodes p, into the
// cache when it is the first to and into own (grown, and returned) when
// another encoder is writing it right now.
func (c *patchCodes) code(stamp uint32, i int, p, own []byte) (code []byte, zero bool, ownOut []byte, src codeSource) {
	code, zero, found, claimed := c.lookup(stamp, 0, i)
	switch {
	case found:
		return code, zero, own, codeShared
	case claimed:
		code, zero = c.publish(stamp, 0, i, p)
		return code, zero, own, codeEncoded
	}
	code, zero, own = encodeOwn(p, own)
	return code, zero, own, codePrivate
}

// encodeOwn encodes p at the end of own and returns the code, whether p
// is all zero, and own.
func encodeOwn(p, own []byte) (code []byte, zero bool, ownOut []byte) {
	start := len(own)
	own = AppendPatch(own, p)
	code = own[start:len(own):len(own)]
	return code, isZeroCode(code), own
}

// isZeroCode reports whether code (AppendPatch's) is an all-zero
// patch's: only that code ends in 0x00.
func isZeroCode(code []byte) bool { return len(code) > 0 && code[len(code)-1] == 0 }
