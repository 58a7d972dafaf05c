package proto

import (
	"math/rand/v2"
	"net/netip"
)

// gen builds random but valid packets and frames for tests, fuzz seeds and
// the dissector test.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

// text returns printable ASCII without the separators the dissector test
// uses.
func (g *gen) text(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return b
}

func (g *gen) header(t PacketType, sealed bool) Header {
	tick := g.r.Uint32()
	return Header{
		Type: t, Sealed: sealed,
		ConnID: g.r.Uint32(), Seq: uint16(g.r.Uint32()), Ack: uint16(g.r.Uint32()), AckBits: g.r.Uint32(),
		Tick: tick, InterpFrom: tick - uint32(g.r.IntN(MaxInterpLag+1)), InterpTo: tick - uint32(g.r.IntN(40)),
		Blend: uint16(g.r.Uint32()),
	}
}

// kcpSegments returns bytes shaped like KCP output: whole segments.
func (g *gen) kcpSegments() []byte {
	var b []byte
	for range 1 + g.r.IntN(3) {
		n := g.r.IntN(64)
		b = le.AppendUint32(b, g.r.Uint32())
		b = append(b, byte(81+g.r.IntN(4)), byte(g.r.IntN(4)))
		b = le.AppendUint16(b, uint16(g.r.Uint32()))
		b = le.AppendUint32(b, g.r.Uint32())
		b = le.AppendUint32(b, g.r.Uint32())
		b = le.AppendUint32(b, g.r.Uint32())
		b = le.AppendUint32(b, uint32(n))
		b = append(b, g.bytes(n)...)
	}
	return b
}

// frame is what every frame type has in common, for generic tests.
type frame interface {
	Len() int
	Append([]byte) ([]byte, error)
}

func (g *gen) frame(t FrameType) frame {
	switch t {
	case FrameAckOnly:
		return &AckOnlyFrame{DelayMicros: uint16(g.r.Uint32())}
	case FrameReliable:
		return &ReliableFrame{Data: g.kcpSegments()}
	case FrameMessage:
		f := &MessageFrame{Channel: uint8(g.r.Uint32()), Data: g.bytes(g.r.IntN(100))}
		if g.r.IntN(2) == 0 {
			f.Sequenced, f.Seq = true, uint16(g.r.Uint32())
		}
		if g.r.IntN(2) == 0 {
			f.Postmarked, f.Tick = true, g.r.Uint32()
		}
		if g.r.IntN(2) == 0 {
			f.Player = uint16(1 + g.r.IntN(0xffff))
		}
		return f
	case FrameInput:
		count := 1 + g.r.IntN(MaxInputsPerFrame)
		size := 1 + g.r.IntN(MaxInputBytes/count)
		return &InputFrame{Player: uint16(g.r.Uint32()), Tick: g.r.Uint32(), Count: uint8(count), Size: uint16(size), Data: g.bytes(count * size)}
	case FrameInputAck:
		return &InputAckFrame{Player: uint16(g.r.Uint32()), Newest: g.r.Uint32(), Age: int16(g.r.Uint32()), Frames: uint16(g.r.Uint32())}
	case FrameSnapshotDelta:
		return &SnapshotDeltaFrame{Tick: g.r.Uint32(), Revision: g.r.Uint32(), BaseRevision: g.r.Uint32(),
			Codec: Codec(g.r.IntN(int(codecEnd))), Count: uint16(g.r.Uint32()), Data: g.bytes(g.r.IntN(300))}
	case FrameFullSnapshot:
		data := g.bytes(g.r.IntN(300))
		return &FullSnapshotFrame{Cause: SnapshotCause(1 + g.r.IntN(int(causeEnd)-1)), Tick: g.r.Uint32(), Revision: g.r.Uint32(),
			Codec: Codec(g.r.IntN(int(CodecXORRLE) + 1)), RawLen: uint32(g.r.IntN(MaxSnapshotSize + 1)), Data: data}
	case FrameResyncRequest:
		return &ResyncRequestFrame{Reason: ResyncReason(1 + g.r.IntN(int(resyncReasonEnd)-1)), Tick: g.r.Uint32(), Revision: g.r.Uint32()}
	case FrameChecksum:
		return &ChecksumFrame{Tick: g.r.Uint32(), Sum: g.r.Uint64()}
	case FrameControl:
		return &ControlFrame{Code: ControlCode(1 + g.r.IntN(int(controlCodeEnd)-1)), Player: uint16(g.r.Uint32()),
			Tick: g.r.Uint32(), Arg: g.r.Uint64(), Text: g.text(g.r.IntN(40))}
	case FramePathChallenge:
		f := &PathChallengeFrame{}
		copy(f.Data[:], g.bytes(PathDataSize))
		return f
	case FramePathResponse:
		f := &PathResponseFrame{}
		copy(f.Data[:], g.bytes(PathDataSize))
		return f
	case FrameRoster:
		f := &RosterFrame{Epoch: g.r.Uint32(), Host: uint16(g.r.Uint32()), Members: make([]RosterMember, 1+g.r.IntN(6))}
		for i := range f.Members {
			m := &f.Members[i]
			m.Slot, m.ClientID = uint16(g.r.Uint32()), g.r.Uint64()
			if g.r.IntN(2) == 0 {
				m.Candidate, m.Addr = true, g.text(1+g.r.IntN(30))
			}
		}
		return f
	case FrameStandbyAck:
		return &StandbyAckFrame{Epoch: g.r.Uint32(), Tick: g.r.Uint32()}
	case FramePeerMessage:
		return &PeerMessageFrame{Player: uint16(g.r.Uint32()), Copy: g.r.IntN(2) == 0, Seq: 1 + g.r.Uint32N(1<<31), Channel: uint8(g.r.Uint32()), Data: g.bytes(g.r.IntN(64))}
	case FrameEffect:
		return &EffectFrame{Tick: g.r.Uint32(), Kind: uint16(g.r.Uint32()), Player: uint16(g.r.Uint32()), Entity: NetworkID(g.r.Uint32()),
			Data: [4]int32{int32(g.r.Uint32()), int32(g.r.Uint32()), int32(g.r.Uint32()), int32(g.r.Uint32())}}
	case FrameCommand:
		f := &CommandFrame{Kind: CommandKind(g.r.IntN(int(commandKindEnd))), Player: uint16(g.r.Uint32()), Tick: g.r.Uint32(), Seq: g.r.Uint32()}
		if f.Kind == CommandInput {
			f.Data = g.bytes(1 + g.r.IntN(32))
		}
		return f
	case FrameCommitItem:
		return &CommitItemFrame{Live: g.r.Uint32(), Commands: g.r.Uint32()}
	case FrameCommitSums:
		f := &CommitSumsFrame{From: g.r.Uint32(), Sums: make([]uint64, 1+g.r.IntN(MaxCommitSums))}
		for i := range f.Sums {
			f.Sums[i] = g.r.Uint64()
		}
		return f
	case FrameMeshIntro:
		f := &MeshIntroFrame{Op: MeshIntroOp(1 + g.r.IntN(int(meshIntroEnd)-1)), Conn: g.r.Uint32()}
		switch f.Op {
		case MeshHello:
			f.Port = uint16(g.r.Uint32())
		case MeshAdd:
			if g.r.IntN(2) == 0 {
				f.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(g.bytes(4))), uint16(1+g.r.IntN(65535)))
			} else {
				ip := [16]byte(g.bytes(16))
				ip[0] = 0x20
				// zero runs, so the dissector's :: compression is tested
				for k := g.r.IntN(4); k < 16 && g.r.IntN(3) == 0; k++ {
					ip[4+k%12] = 0
				}
				f.Addr = netip.AddrPortFrom(netip.AddrFrom16(ip), uint16(1+g.r.IntN(65535)))
			}
			f.Players = make([]uint16, 1+g.r.IntN(MaxMeshPlayers))
			for i := range f.Players {
				f.Players[i] = uint16(g.r.Uint32())
			}
			copy(f.SendKey[:], g.bytes(KeySize))
			copy(f.RecvKey[:], g.bytes(KeySize))
		case MeshCheck:
			copy(f.RecvKey[:], g.bytes(KeySize))
		case MeshProof:
			copy(f.Proof[:], g.bytes(PathDataSize))
		}
		return f
	case FrameParity:
		k := 1 + g.r.IntN(MaxParityMembers)
		f := &ParityFrame{First: g.r.Uint32(), Shards: uint8(1 + g.r.IntN(MaxParityShards))}
		f.Index = uint8(g.r.IntN(int(f.Shards)))
		longest := 0
		for i := range k {
			if i > 0 {
				f.Gaps = append(f.Gaps, byte(1+g.r.IntN(255)))
			}
			n := 1 + g.r.IntN(64)
			longest = max(longest, n)
			f.Lens = le.AppendUint16(f.Lens, uint16(n))
		}
		f.Shard = g.bytes(longest)
		return f
	case FrameMeshReport:
		f := &MeshReportFrame{}
		if n := g.r.IntN(MaxMeshReport + 1); n > 0 {
			f.Links = make([]MeshLinkReport, n)
		}
		for i := range f.Links {
			f.Links[i] = MeshLinkReport{Conn: g.r.Uint32(), RTTMicros: g.r.Uint32()}
		}
		return f
	case FrameStateRequest:
		return &StateRequestFrame{ID: g.r.Uint32(), Tick: g.r.Uint32(), Upload: g.r.IntN(2) == 0}
	case FrameStateSum:
		f := &StateSumFrame{ID: g.r.Uint32(), Tick: g.r.Uint32()}
		if g.r.IntN(4) != 0 {
			f.Size = 1 + g.r.Uint32N(MaxStateSize)
			copy(f.Sum[:], g.bytes(StateSumSize))
			if g.r.IntN(2) == 0 {
				f.Codec = []Codec{CodecNone, CodecLZ4, CodecZstd, CodecS2}[g.r.IntN(4)]
				f.Packed = 1 + g.r.Uint32N(MaxStateSize)
				if f.Codec != CodecNone && g.r.IntN(2) == 0 {
					f.Codec = CodecNone
				}
			}
		}
		return f
	case FrameStateChunk:
		n := 1 + g.r.IntN(200)
		return &StateChunkFrame{ID: g.r.Uint32(), Offset: g.r.Uint32N(MaxStateSize - uint32(n) + 1), Data: g.bytes(n)}
	case FrameStateBegin:
		f := &StateBeginFrame{ID: g.r.Uint32(), Reason: ResyncReason(g.r.IntN(int(resyncReasonEnd))), Tick: g.r.Uint32(), Received: g.r.Uint32()}
		if g.r.IntN(4) != 0 {
			f.Size, f.Packed = 1+g.r.Uint32N(MaxStateSize), 1+g.r.Uint32N(MaxStateSize)
			f.Codec = []Codec{CodecNone, CodecLZ4, CodecZstd, CodecS2}[g.r.IntN(4)]
		}
		if n := g.r.IntN(4); n > 0 {
			for range n {
				f.Seqs = append(f.Seqs, PlayerSeq{Player: uint16(g.r.Uint32()), Seq: g.r.Uint32()})
			}
		}
		return f
	case FramePeerAck:
		return &PeerAckFrame{Player: uint16(g.r.Uint32()), Kind: PeerAckKind(1 + g.r.IntN(4)), Through: g.r.Uint32()}
	case FrameSuccessor:
		f := &SuccessorFrame{Epoch: g.r.Uint32(), Successor: uint16(g.r.Uint32())}
		if g.r.IntN(2) == 0 {
			f.Kind, f.KeyID = SuccessorKey, g.r.Uint32()
			copy(f.Key[:], g.bytes(KeySize))
		} else {
			f.Kind, f.Token = SuccessorToken, g.text(1+g.r.IntN(300))
		}
		return f
	case FrameStandbyState:
		f := &StandbyStateFrame{Epoch: g.r.Uint32(), Tick: g.r.Uint32(), Revision: g.r.Uint32(), ServerSpawn: g.r.Uint32()}
		for range g.r.IntN(5) {
			f.Players = append(f.Players, uint16(g.r.Uint32()))
		}
		for range 1 + g.r.IntN(3) {
			f.Snapshots = append(f.Snapshots, *g.frame(FrameFullSnapshot).(*FullSnapshotFrame))
		}
		return f
	case FrameStandbyStep:
		f := &StandbyStepFrame{Epoch: g.r.Uint32(), Tick: g.r.Uint32(), InputSize: uint16(1 + g.r.IntN(12))}
		for range g.r.IntN(3) {
			c := StandbyChange{Player: uint16(g.r.Uint32()), Join: g.r.IntN(2) == 0}
			if !c.Join && g.r.IntN(2) == 0 {
				c.Reason = g.text(1 + g.r.IntN(20))
			}
			f.Changes = append(f.Changes, c)
		}
		for range 1 + g.r.IntN(5) {
			in := StandbyInput{Player: uint16(g.r.Uint32()), Missing: g.r.IntN(4) == 0, Rejected: g.r.IntN(4) == 0,
				Data: g.bytes(int(f.InputSize))}
			if g.r.IntN(2) == 0 {
				in.Rewound, in.From, in.To, in.Blend = true, g.r.Uint32(), g.r.Uint32(), uint16(g.r.Uint32())
			}
			f.Inputs = append(f.Inputs, in)
		}
		for range g.r.IntN(3) {
			m := StandbyMessage{Player: uint16(g.r.Uint32()), Channel: uint8(g.r.Uint32()), Tick: g.r.Uint32(), Late: g.r.IntN(3) == 0}
			if n := g.r.IntN(30); n > 0 {
				m.Data = g.bytes(n)
			}
			f.Messages = append(f.Messages, m)
		}
		return f
	}
	panic("unknown frame type")
}

func (g *gen) anyFrame() frame { return g.frame(FrameType(1 + g.r.IntN(int(frameTypeEnd)-1))) }

// payload returns 1..8 random frames encoded back to back, and the frames.
func (g *gen) payload(budget int) ([]byte, []frame) {
	var b []byte
	var fs []frame
	for range 1 + g.r.IntN(8) {
		f := g.anyFrame()
		if len(b)+f.Len() > budget {
			break
		}
		var err error
		if b, err = f.Append(b); err != nil {
			panic(err)
		}
		fs = append(fs, f)
	}
	return b, fs
}

func (g *gen) challenge() Challenge {
	var c Challenge
	copy(c.Cookie[:], g.bytes(CookieSize))
	copy(c.ServerRandom[:], g.bytes(RandomSize))
	return c
}

func (g *gen) challengeResponse() ChallengeResponse {
	var r ChallengeResponse
	copy(r.Cookie[:], g.bytes(CookieSize))
	copy(r.ClientRandom[:], g.bytes(RandomSize))
	copy(r.Tag[:], g.bytes(SealOverhead))
	return r
}

func (g *gen) denied(sealed bool) Denied {
	d := Denied{Reason: DenyReason(1 + g.r.IntN(int(denyReasonEnd)-1)), Sealed: sealed}
	if sealed {
		d.Counter = g.r.Uint64()
		if g.r.IntN(2) == 0 {
			d.Detail = g.bytes(1 + g.r.IntN(MaxDenyDetail))
		}
		copy(d.Tag[:], g.bytes(SealOverhead))
	}
	return d
}

func (g *gen) tokenPrivate() TokenPrivate {
	t := TokenPrivate{ClientID: g.r.Uint64(), PlayerCount: uint8(1 + g.r.IntN(MaxPlayersPerConnection))}
	copy(t.ClientToServerKey[:], g.bytes(KeySize))
	copy(t.ServerToClientKey[:], g.bytes(KeySize))
	for i := range t.PlayerCount {
		t.Players[i] = uint16(g.r.Uint32())
	}
	copy(t.UserData[:], g.bytes(UserDataSize))
	t.Created = g.r.Uint64()
	t.ServerCount = uint8(g.r.IntN(MaxTokenServers + 1))
	for i := range t.ServerCount {
		t.Servers[i] = ServerAddrHash(string(g.text(1 + g.r.IntN(30))))
	}
	return t
}

func (g *gen) acceptBody() AcceptBody {
	a := AcceptBody{ClientID: g.r.Uint64(), TickRate: uint16(1 + g.r.IntN(240)), HeartbeatMs: uint16(g.r.Uint32()),
		TimeoutMs: uint16(g.r.Uint32()), MaxPacket: uint16(HeaderSize + SealOverhead + g.r.IntN(MaxPacketSizeLimit-HeaderSize-SealOverhead+1)),
		PlayerCount: uint8(1 + g.r.IntN(MaxPlayersPerConnection))}
	for i := range a.PlayerCount {
		a.Players[i] = uint16(g.r.Uint32())
	}
	return a
}
