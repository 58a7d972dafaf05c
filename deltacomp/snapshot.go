package deltacomp

import "github.com/tickwire/tickwire/proto"

// Snapshot is the networked state of a world at one tick: entity ids in
// ascending order and, for each, a record of exactly RecordSize bytes (the
// entity's quantised state, laid out by the game's schema).
// Records[i*RecordSize:(i+1)*RecordSize] belongs to IDs[i].
type Snapshot struct {
	Tick       uint32
	RecordSize int
	IDs        []proto.NetworkID
	Records    []byte
}

// Len is the number of entities.
func (s *Snapshot) Len() int { return len(s.IDs) }

// Record returns entity i's record, aliasing s.Records.
func (s *Snapshot) Record(i int) []byte {
	return s.Records[i*s.RecordSize : (i+1)*s.RecordSize : (i+1)*s.RecordSize]
}

// Reset empties s for reuse, keeping its buffers.
func (s *Snapshot) Reset(tick uint32, recordSize int) {
	s.Tick, s.RecordSize = tick, recordSize
	s.IDs, s.Records = s.IDs[:0], s.Records[:0]
}

// Append adds an entity; ids must be appended in ascending order. The
// record is copied.
func (s *Snapshot) Append(id proto.NetworkID, record []byte) {
	s.IDs = append(s.IDs, id)
	s.Records = append(s.Records, record[:s.RecordSize]...)
}

// CopyFrom makes s an independent copy of src, reusing s's buffers.
func (s *Snapshot) CopyFrom(src *Snapshot) {
	s.Tick, s.RecordSize = src.Tick, src.RecordSize
	s.IDs = append(s.IDs[:0], src.IDs...)
	s.Records = append(s.Records[:0], src.Records...)
}
