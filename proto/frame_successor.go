package proto

// SuccessorKind says what a SuccessorFrame carries.
type SuccessorKind uint8

// Successor credential kinds.
const (
	// SuccessorKey: to the successor itself, the key its server will
	// open the players' tokens with (KeyID, Key).
	SuccessorKey SuccessorKind = 1
	// SuccessorToken: to every other player, a connect token for the
	// successor's address sealed with that key (Token: the token's text
	// form, as ConnectToken.String writes it).
	SuccessorToken SuccessorKind = 2
	// SuccessorRejoin: from a server to a client, the credential to come
	// back to this same server into the same player slots after the
	// session ends without a leave (Token: a connect token in its text
	// form, single-use, sealed with a key derived from the server's).
	// Epoch and Successor are 0.
	SuccessorRejoin  SuccessorKind = 3
	successorKindEnd SuccessorKind = 4
)

// MaxSuccessorToken bounds SuccessorFrame.Token.
const MaxSuccessorToken = 2048

// SuccessorFrame hands out the credentials a migration needs before it is
// needed (host migration, docs/MIGRATION.md): the host sends its standby
// a fresh key and every other player a connect token for the standby's
// address sealed with it, on the reliable channel (the sessions are
// encrypted), and refreshes them before they expire. Epoch is the host's;
// Successor the slot of the player the credentials are for.
type SuccessorFrame struct {
	Epoch     uint32
	Successor uint16
	Kind      SuccessorKind
	KeyID     uint32        // SuccessorKey
	Key       [KeySize]byte // SuccessorKey
	Token     []byte        // SuccessorToken, 1..MaxSuccessorToken bytes
}

const successorFixed = 1 + 4 + 2 + 1

func (f *SuccessorFrame) Len() int {
	if f.Kind == SuccessorKey {
		return successorFixed + 4 + KeySize
	}
	return successorFixed + VarintLen(uint32(len(f.Token))) + len(f.Token)
}

var (
	errSuccTrunc = truncated("successor frame", "")
	errSuccType  = malformed("successor frame", "type")
	errSuccKind  = malformed("successor frame", "kind")
	errSuccLen   = malformed("successor frame", "token length")
)

func (f *SuccessorFrame) Append(b []byte) ([]byte, error) {
	switch f.Kind {
	case SuccessorKey:
		if len(f.Token) > 0 {
			return b, errSuccLen
		}
	case SuccessorToken, SuccessorRejoin:
		if len(f.Token) == 0 || len(f.Token) > MaxSuccessorToken {
			return b, errSuccLen
		}
		if f.KeyID != 0 || f.Key != [KeySize]byte{} {
			return b, errSuccKind
		}
	default:
		return b, errSuccKind
	}
	b = append(b, byte(FrameSuccessor))
	b = le.AppendUint32(b, f.Epoch)
	b = le.AppendUint16(b, f.Successor)
	b = append(b, byte(f.Kind))
	if f.Kind == SuccessorKey {
		b = le.AppendUint32(b, f.KeyID)
		return append(b, f.Key[:]...), nil
	}
	b = AppendVarint(b, uint32(len(f.Token)))
	return append(b, f.Token...), nil
}

// ParseSuccessorFrame parses a successor frame; Token aliases b.
func ParseSuccessorFrame(b []byte) (SuccessorFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameSuccessor) {
		return SuccessorFrame{}, 0, errSuccType
	}
	f := SuccessorFrame{Epoch: r.u32(), Successor: r.u16(), Kind: SuccessorKind(r.u8())}
	if err := r.check(errSuccTrunc, errSuccTrunc); err != nil {
		return SuccessorFrame{}, 0, err
	}
	switch f.Kind {
	case SuccessorKey:
		f.KeyID = r.u32()
		copy(f.Key[:], r.bytes(KeySize))
	case SuccessorToken, SuccessorRejoin:
		n := r.varint()
		if err := r.check(errSuccTrunc, errSuccLen); err != nil {
			return SuccessorFrame{}, 0, err
		}
		if n == 0 || n > MaxSuccessorToken {
			return SuccessorFrame{}, 0, errSuccLen
		}
		f.Token = r.bytes(n)
	default:
		return SuccessorFrame{}, 0, errSuccKind
	}
	if err := r.check(errSuccTrunc, errSuccLen); err != nil {
		return SuccessorFrame{}, 0, err
	}
	return f, r.off, nil
}
