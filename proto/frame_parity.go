package proto

// ParityFrame is one Reed–Solomon parity shard over the reliable frames
// of up to MaxParityMembers earlier packets of the same sender (forward
// error correction, instead of copies): a receiver that lost some of
// those packets and holds at least as many shards of the group as it
// lost rebuilds their reliable frames. The members are named by packet
// number: First is the low 32 bits of the first one's, Gaps[i] is how
// many packet numbers member i+1 comes after member i. Member i's shard
// is its reliable frame's data (the KCP segments, Lens of it) padded with
// zeros to the longest member's length, which is the parity shard's
// length too; Index says which of the group's Shards parity shards this
// is.
type ParityFrame struct {
	First  uint32
	Shards uint8  // parity shards in the group, 1..MaxParityShards
	Index  uint8  // this shard, < Shards
	Gaps   []byte // members − 1 gaps, each ≥ 1
	Lens   []byte // members × u16 LE, each 1..MaxPacketSizeLimit
	Shard  []byte // the parity, the longest member's length
}

// Bounds of a parity group.
const (
	MaxParityMembers = 16
	MaxParityShards  = 8
)

// ParityOverhead is a ParityFrame's size beyond its shard for a group of
// members.
func ParityOverhead(members int) int { return 1 + 4 + 1 + 1 + 1 + (members - 1) + 2*members }

// Members returns how many packets the group protects.
func (f *ParityFrame) Members() int { return len(f.Lens) / 2 }

// MemberLen returns the length of member i's reliable frame data.
func (f *ParityFrame) MemberLen(i int) int { return int(le.Uint16(f.Lens[2*i:])) }

func (f *ParityFrame) Len() int { return ParityOverhead(f.Members()) + len(f.Shard) }

var (
	errParityTrunc   = truncated("parity frame", "")
	errParityType    = malformed("parity frame", "type")
	errParityMembers = malformed("parity frame", "members")
	errParityShards  = malformed("parity frame", "shards")
	errParityGap     = malformed("parity frame", "gap")
	errParityLen     = malformed("parity frame", "member length")
)

// validate checks the group's shape: member and shard counts, gaps, and
// lengths whose longest is the shard's.
func (f *ParityFrame) validate() error {
	k := f.Members()
	if k < 1 || k > MaxParityMembers || len(f.Lens) != 2*k || len(f.Gaps) != k-1 {
		return errParityMembers
	}
	if f.Shards < 1 || f.Shards > MaxParityShards || f.Index >= f.Shards {
		return errParityShards
	}
	for _, g := range f.Gaps {
		if g == 0 {
			return errParityGap
		}
	}
	longest := 0
	for i := range k {
		n := f.MemberLen(i)
		if n < 1 || n > MaxPacketSizeLimit {
			return errParityLen
		}
		longest = max(longest, n)
	}
	if len(f.Shard) != longest {
		return errParityLen
	}
	return nil
}

func (f *ParityFrame) Append(b []byte) ([]byte, error) {
	if err := f.validate(); err != nil {
		return b, err
	}
	b = append(b, byte(FrameParity))
	b = le.AppendUint32(b, f.First)
	b = append(b, byte(f.Members()), f.Shards, f.Index)
	b = append(b, f.Gaps...)
	b = append(b, f.Lens...)
	return append(b, f.Shard...), nil
}

// ParseParityFrame parses a parity frame; Gaps, Lens and Shard alias b.
func ParseParityFrame(b []byte) (ParityFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameParity) {
		return ParityFrame{}, 0, errParityType
	}
	f := ParityFrame{First: r.u32()}
	k := int(r.u8())
	f.Shards, f.Index = r.u8(), r.u8()
	if r.short {
		return ParityFrame{}, 0, errParityTrunc
	}
	if k < 1 || k > MaxParityMembers {
		return ParityFrame{}, 0, errParityMembers
	}
	if k > 1 {
		f.Gaps = r.bytes(uint32(k - 1))
	}
	f.Lens = r.bytes(uint32(2 * k))
	if r.short {
		return ParityFrame{}, 0, errParityTrunc
	}
	longest := 0
	for i := range k {
		longest = max(longest, f.MemberLen(i))
	}
	f.Shard = r.bytes(uint32(longest))
	if err := r.check(errParityTrunc, errParityTrunc); err != nil {
		return ParityFrame{}, 0, err
	}
	if err := f.validate(); err != nil {
		return ParityFrame{}, 0, err
	}
	return f, r.off, nil
}
