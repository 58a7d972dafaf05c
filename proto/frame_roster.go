package proto

// RosterFrame is a peer host's roster (host migration,
// docs/MIGRATION.md): its epoch, which player hosts (0: none) and every
// connected player in ascending slot order, with the address of its host
// socket when it offered to host. The host sends it on the reliable
// channel whenever it changes; the order of succession is computed from
// it (package migrate), not carried.
type RosterFrame struct {
	Epoch   uint32
	Host    uint16
	Members []RosterMember // 1..MaxRosterMembers
}

// RosterMember is one player of a RosterFrame.
type RosterMember struct {
	Slot      uint16
	ClientID  uint64
	Candidate bool   // it can host: Addr is where its host socket is reached
	Addr      []byte // "host:port", ≤ MaxRosterAddr bytes
}

// Roster limits.
const (
	MaxRosterMembers = 64
	MaxRosterAddr    = 255
)

// rosterCandidate is the only flag of a roster member.
const rosterCandidate = 0x01

const (
	rosterFixedSize  = 1 + 4 + 2 + 1
	rosterMemberSize = 2 + 8 + 1 + 1 // + address
)

func (f *RosterFrame) Len() int {
	n := rosterFixedSize
	for i := range f.Members {
		n += rosterMemberSize + len(f.Members[i].Addr)
	}
	return n
}

var (
	errRosterTrunc = truncated("roster frame", "")
	errRosterType  = malformed("roster frame", "type")
	errRosterCount = malformed("roster frame", "member count")
	errRosterFlags = malformed("roster frame", "member flags")
	errRosterAddr  = malformed("roster frame", "address length")
)

func (f *RosterFrame) Append(b []byte) ([]byte, error) {
	if len(f.Members) == 0 || len(f.Members) > MaxRosterMembers {
		return b, errRosterCount
	}
	for i := range f.Members {
		if len(f.Members[i].Addr) > MaxRosterAddr {
			return b, errRosterAddr
		}
	}
	b = append(b, byte(FrameRoster))
	b = le.AppendUint32(b, f.Epoch)
	b = le.AppendUint16(b, f.Host)
	b = append(b, byte(len(f.Members)))
	for i := range f.Members {
		m := &f.Members[i]
		b = le.AppendUint16(b, m.Slot)
		b = le.AppendUint64(b, m.ClientID)
		var flags byte
		if m.Candidate {
			flags |= rosterCandidate
		}
		b = append(b, flags, byte(len(m.Addr)))
		b = append(b, m.Addr...)
	}
	return b, nil
}

// ParseRosterFrame parses a roster frame. Members is a new slice (of at
// most MaxRosterMembers); the addresses alias b.
func ParseRosterFrame(b []byte) (RosterFrame, int, error) {
	n, err := skipRosterFrame(b)
	if err != nil {
		return RosterFrame{}, 0, err
	}
	// Valid: read it without checks.
	r := reader{b: b, off: 1}
	f := RosterFrame{Epoch: r.u32(), Host: r.u16()}
	f.Members = make([]RosterMember, r.u8())
	for i := range f.Members {
		m := &f.Members[i]
		m.Slot, m.ClientID = r.u16(), r.u64()
		flags, alen := r.u8(), r.u8()
		m.Candidate = flags&rosterCandidate != 0
		if alen > 0 {
			m.Addr = r.bytes(uint32(alen))
		}
	}
	return f, n, nil
}

// skipRosterFrame validates a roster frame and returns its length,
// keeping nothing (it allocates nothing and b does not escape).
func skipRosterFrame(b []byte) (int, error) {
	r := reader{b: b}
	if !r.frameType(FrameRoster) {
		return 0, errRosterType
	}
	r.u32()
	r.u16()
	count := int(r.u8())
	if err := r.check(errRosterTrunc, errRosterTrunc); err != nil {
		return 0, err
	}
	if count == 0 || count > MaxRosterMembers {
		return 0, errRosterCount
	}
	for range count {
		r.u16()
		r.u64()
		flags, n := r.u8(), r.u8()
		if flags&^rosterCandidate != 0 {
			return 0, errRosterFlags
		}
		r.bytes(uint32(n))
		if err := r.check(errRosterTrunc, errRosterTrunc); err != nil {
			return 0, err
		}
	}
	return r.off, nil
}
