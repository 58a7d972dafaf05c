package proto

import (
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The Wireshark dissector lives next to this package.
const dissectorPath = "wireshark/tickwire.lua"

// lookTshark finds tshark. Without it the test skips, unless
// TICKWIRE_REQUIRE_TOOLS is set (the README's test command sets it), in
// which case a missing tool is a failure.
func lookTshark(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("TICKWIRE_REQUIRE_TOOLS") != "" {
			t.Fatalf("tshark not found and TICKWIRE_REQUIRE_TOOLS is set: %v", err)
		}
		t.Skip("tshark not installed; ./test.sh installs it")
	}
	return path
}

// fields is what the dissector should show for one packet: field name ->
// occurrences in order.
type fields map[string][]string

func (f fields) add(name string, v any) { f[name] = append(f[name], fmt.Sprint(v)) }
func (f fields) bytes(name string, b []byte) {
	if len(b) > 0 {
		f.add(name, hex.EncodeToString(b))
	}
}

func boolField(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func expectHeader(f fields, h *Header) {
	f.add("tickwire.magic", "tw")
	f.add("tickwire.version", Version)
	f.add("tickwire.type", uint8(h.Type))
	f.add("tickwire.sealed", boolField(h.Sealed))
	f.add("tickwire.conn_id", h.ConnID)
	f.add("tickwire.seq", h.Seq)
	f.add("tickwire.ack", h.Ack)
	f.add("tickwire.ack_bits", fmt.Sprintf("0x%08x", h.AckBits))
	f.add("tickwire.tick", h.Tick)
	f.add("tickwire.interp_from", h.InterpFrom)
	f.add("tickwire.interp_to", h.InterpTo)
	f.add("tickwire.blend", strconv.FormatFloat(h.BlendValue(), 'g', -1, 64)) // compared numerically
	f.add("tickwire.blend_raw", h.Blend)
}

func expectPrefix(f fields, t PacketType) {
	f.add("tickwire.magic", "tw")
	f.add("tickwire.version", Version)
	f.add("tickwire.type", uint8(t))
	f.add("tickwire.sealed", "0")
}

func expectFrame(f fields, fr frame) {
	switch v := fr.(type) {
	case *AckOnlyFrame:
		f.add("tickwire.frame.type", uint8(FrameAckOnly))
		f.add("tickwire.ackonly.delay_us", v.DelayMicros)
	case *ReliableFrame:
		f.add("tickwire.frame.type", uint8(FrameReliable))
		f.add("tickwire.reliable.len", len(v.Data))
		f.bytes("tickwire.reliable.data", v.Data)
		for d := v.Data; len(d) >= 24; {
			n := int(le.Uint32(d[20:]))
			if 24+n > len(d) {
				break
			}
			f.add("tickwire.kcp.conv", le.Uint32(d))
			f.add("tickwire.kcp.cmd", d[4])
			f.add("tickwire.kcp.frg", d[5])
			f.add("tickwire.kcp.wnd", le.Uint16(d[6:]))
			f.add("tickwire.kcp.ts", le.Uint32(d[8:]))
			f.add("tickwire.kcp.sn", le.Uint32(d[12:]))
			f.add("tickwire.kcp.una", le.Uint32(d[16:]))
			f.add("tickwire.kcp.len", n)
			d = d[24+n:]
		}
	case *MessageFrame:
		f.add("tickwire.frame.type", uint8(FrameMessage))
		var flags uint8
		if v.Sequenced {
			flags |= MessageSequenced
			f.add("tickwire.message.seq", v.Seq)
		}
		if v.Postmarked {
			flags |= MessagePostmarked
			f.add("tickwire.message.tick", v.Tick)
		}
		if v.Player != 0 {
			flags |= MessagePlayer
			f.add("tickwire.message.player", v.Player)
		}
		f.add("tickwire.message.flags", flags)
		f.add("tickwire.message.channel", v.Channel)
		f.add("tickwire.message.len", len(v.Data))
		f.bytes("tickwire.message.data", v.Data)
	case *InputFrame:
		f.add("tickwire.frame.type", uint8(FrameInput))
		f.add("tickwire.input.player", v.Player)
		f.add("tickwire.input.tick", v.Tick)
		f.add("tickwire.input.count", v.Count)
		f.add("tickwire.input.size", v.Size)
		f.bytes("tickwire.input.data", v.Data)
	case *InputAckFrame:
		f.add("tickwire.frame.type", uint8(FrameInputAck))
		f.add("tickwire.input_ack.player", v.Player)
		f.add("tickwire.input_ack.newest", v.Newest)
		f.add("tickwire.input_ack.age", v.Age)
		f.add("tickwire.input_ack.frames", v.Frames)
	case *SnapshotDeltaFrame:
		f.add("tickwire.frame.type", uint8(FrameSnapshotDelta))
		f.add("tickwire.delta.tick", v.Tick)
		f.add("tickwire.delta.revision", v.Revision)
		f.add("tickwire.delta.base_revision", v.BaseRevision)
		f.add("tickwire.delta.codec", uint8(v.Codec))
		f.add("tickwire.delta.count", v.Count)
		f.add("tickwire.delta.len", len(v.Data))
		f.bytes("tickwire.delta.data", v.Data)
	case *FullSnapshotFrame:
		f.add("tickwire.frame.type", uint8(FrameFullSnapshot))
		f.add("tickwire.full.cause", uint8(v.Cause))
		f.add("tickwire.full.tick", v.Tick)
		f.add("tickwire.full.revision", v.Revision)
		f.add("tickwire.full.codec", uint8(v.Codec))
		f.add("tickwire.full.raw_len", v.RawLen)
		f.add("tickwire.full.len", len(v.Data))
		f.bytes("tickwire.full.data", v.Data)
	case *ResyncRequestFrame:
		f.add("tickwire.frame.type", uint8(FrameResyncRequest))
		f.add("tickwire.resync.reason", uint8(v.Reason))
		f.add("tickwire.resync.tick", v.Tick)
		f.add("tickwire.resync.revision", v.Revision)
	case *ChecksumFrame:
		f.add("tickwire.frame.type", uint8(FrameChecksum))
		f.add("tickwire.checksum.tick", v.Tick)
		f.add("tickwire.checksum.sum", fmt.Sprintf("0x%016x", v.Sum))
	case *ControlFrame:
		f.add("tickwire.frame.type", uint8(FrameControl))
		f.add("tickwire.control.code", uint8(v.Code))
		f.add("tickwire.control.player", v.Player)
		f.add("tickwire.control.tick", v.Tick)
		f.add("tickwire.control.arg", v.Arg)
		if len(v.Text) > 0 {
			f.add("tickwire.control.text", string(v.Text))
		}
	case *PathChallengeFrame:
		f.add("tickwire.frame.type", uint8(FramePathChallenge))
		f.bytes("tickwire.path_challenge.data", v.Data[:])
	case *PathResponseFrame:
		f.add("tickwire.frame.type", uint8(FramePathResponse))
		f.bytes("tickwire.path_response.data", v.Data[:])
	case *RosterFrame:
		f.add("tickwire.frame.type", uint8(FrameRoster))
		f.add("tickwire.roster.epoch", v.Epoch)
		f.add("tickwire.roster.host", v.Host)
		f.add("tickwire.roster.count", len(v.Members))
		for _, m := range v.Members {
			f.add("tickwire.roster.slot", m.Slot)
			f.add("tickwire.roster.client_id", m.ClientID)
			f.add("tickwire.roster.candidate", boolField(m.Candidate))
			if len(m.Addr) > 0 {
				f.add("tickwire.roster.addr", string(m.Addr))
			}
		}
	case *StandbyStepFrame:
		f.add("tickwire.frame.type", uint8(FrameStandbyStep))
		f.add("tickwire.standby_step.epoch", v.Epoch)
		f.add("tickwire.standby_step.tick", v.Tick)
		f.add("tickwire.standby_step.input_size", v.InputSize)
		f.add("tickwire.standby_step.changes", len(v.Changes))
		f.add("tickwire.standby_step.inputs", len(v.Inputs))
		f.add("tickwire.standby_step.messages", len(v.Messages))
		for _, c := range v.Changes {
			f.add("tickwire.standby_step.player", c.Player)
			kind := 2
			if c.Join {
				kind = 1
			}
			f.add("tickwire.standby_step.change", kind)
			if len(c.Reason) > 0 {
				f.add("tickwire.standby_step.reason", string(c.Reason))
			}
		}
		for _, in := range v.Inputs {
			f.add("tickwire.standby_step.player", in.Player)
			f.add("tickwire.standby_step.missing", boolField(in.Missing))
			f.add("tickwire.standby_step.rejected", boolField(in.Rejected))
			f.add("tickwire.standby_step.rewound", boolField(in.Rewound))
			if in.Rewound {
				f.add("tickwire.standby_step.view_from", in.From)
				f.add("tickwire.standby_step.view_to", in.To)
				f.add("tickwire.standby_step.blend", in.Blend)
			}
			f.bytes("tickwire.standby_step.input", in.Data)
		}
		for _, m := range v.Messages {
			f.add("tickwire.standby_step.player", m.Player)
			f.add("tickwire.standby_step.channel", m.Channel)
			f.add("tickwire.standby_step.postmark", m.Tick)
			f.add("tickwire.standby_step.late", boolField(m.Late))
			f.add("tickwire.standby_step.msg_len", len(m.Data))
			f.bytes("tickwire.standby_step.msg_data", m.Data)
		}
	case *PeerMessageFrame:
		f.add("tickwire.frame.type", uint8(FramePeerMessage))
		f.add("tickwire.peer_msg.player", v.Player)
		f.add("tickwire.peer_msg.copy", boolField(v.Copy))
		f.add("tickwire.peer_msg.seq", v.Seq)
		f.add("tickwire.peer_msg.channel", v.Channel)
		f.add("tickwire.peer_msg.len", len(v.Data))
		f.bytes("tickwire.peer_msg.data", v.Data)
	case *EffectFrame:
		f.add("tickwire.frame.type", uint8(FrameEffect))
		f.add("tickwire.effect.tick", v.Tick)
		f.add("tickwire.effect.kind", v.Kind)
		f.add("tickwire.effect.player", v.Player)
		f.add("tickwire.effect.entity", uint32(v.Entity))
		for _, d := range v.Data {
			f.add("tickwire.effect.data", d)
		}
	case *PeerAckFrame:
		f.add("tickwire.frame.type", uint8(FramePeerAck))
		f.add("tickwire.peer_ack.player", v.Player)
		f.add("tickwire.peer_ack.kind", uint8(v.Kind))
		f.add("tickwire.peer_ack.through", v.Through)
	case *SuccessorFrame:
		f.add("tickwire.frame.type", uint8(FrameSuccessor))
		f.add("tickwire.successor.epoch", v.Epoch)
		f.add("tickwire.successor.slot", v.Successor)
		f.add("tickwire.successor.kind", uint8(v.Kind))
		if v.Kind == SuccessorKey {
			f.add("tickwire.successor.key_id", v.KeyID)
			f.bytes("tickwire.successor.key", v.Key[:])
		} else {
			f.add("tickwire.successor.token_len", len(v.Token))
			f.add("tickwire.successor.token", string(v.Token))
		}
	case *StandbyStateFrame:
		f.add("tickwire.frame.type", uint8(FrameStandbyState))
		f.add("tickwire.standby_state.epoch", v.Epoch)
		f.add("tickwire.standby_state.tick", v.Tick)
		f.add("tickwire.standby_state.revision", v.Revision)
		f.add("tickwire.standby_state.server_spawn", v.ServerSpawn)
		f.add("tickwire.standby_state.players", len(v.Players))
		for _, p := range v.Players {
			f.add("tickwire.standby_state.player", p)
		}
		f.add("tickwire.standby_state.snapshots", len(v.Snapshots))
		for i := range v.Snapshots {
			expectFrame(f, &v.Snapshots[i])
		}
	case *StandbyAckFrame:
		f.add("tickwire.frame.type", uint8(FrameStandbyAck))
		f.add("tickwire.standby_ack.epoch", v.Epoch)
		f.add("tickwire.standby_ack.tick", v.Tick)
	case *CommandFrame:
		f.add("tickwire.frame.type", uint8(FrameCommand))
		f.add("tickwire.command.kind", uint8(v.Kind))
		f.add("tickwire.command.player", v.Player)
		f.add("tickwire.command.tick", v.Tick)
		f.add("tickwire.command.seq", v.Seq)
		f.add("tickwire.command.len", len(v.Data))
		f.bytes("tickwire.command.data", v.Data)
	case *CommitItemFrame:
		f.add("tickwire.frame.type", uint8(FrameCommitItem))
		f.add("tickwire.commit_item.live", v.Live)
		f.add("tickwire.commit_item.commands", v.Commands)
	case *CommitSumsFrame:
		f.add("tickwire.frame.type", uint8(FrameCommitSums))
		f.add("tickwire.commit_sums.from", v.From)
		f.add("tickwire.commit_sums.count", len(v.Sums))
		for _, sum := range v.Sums {
			f.add("tickwire.commit_sums.sum", fmt.Sprintf("0x%016x", sum))
		}
	case *MeshIntroFrame:
		f.add("tickwire.frame.type", uint8(FrameMeshIntro))
		f.add("tickwire.mesh_intro.op", uint8(v.Op))
		f.add("tickwire.mesh_intro.conn", v.Conn)
		switch v.Op {
		case MeshHello:
			f.add("tickwire.mesh_intro.port", v.Port)
		case MeshAdd:
			f.add("tickwire.mesh_intro.addr", v.Addr.String())
			for _, p := range v.Players {
				f.add("tickwire.mesh_intro.player", p)
			}
		case MeshProof:
			f.bytes("tickwire.mesh_intro.proof", v.Proof[:])
		}
	case *MeshReportFrame:
		f.add("tickwire.frame.type", uint8(FrameMeshReport))
		f.add("tickwire.mesh_report.count", len(v.Links))
		for _, p := range v.Links {
			f.add("tickwire.mesh_report.conn", p.Conn)
			f.add("tickwire.mesh_report.rtt_us", p.RTTMicros)
		}
	case *StateRequestFrame:
		f.add("tickwire.frame.type", uint8(FrameStateRequest))
		f.add("tickwire.state_request.id", v.ID)
		f.add("tickwire.state_request.tick", v.Tick)
		flags := 0
		if v.Upload {
			flags = stateUpload
		}
		f.add("tickwire.state_request.flags", fmt.Sprintf("0x%02x", flags))
	case *StateSumFrame:
		f.add("tickwire.frame.type", uint8(FrameStateSum))
		f.add("tickwire.state_sum.id", v.ID)
		f.add("tickwire.state_sum.tick", v.Tick)
		f.add("tickwire.state_sum.size", v.Size)
		f.bytes("tickwire.state_sum.sum", v.Sum[:])
		f.add("tickwire.state_sum.codec", uint8(v.Codec))
		f.add("tickwire.state_sum.packed", v.Packed)
	case *StateChunkFrame:
		f.add("tickwire.frame.type", uint8(FrameStateChunk))
		f.add("tickwire.state_chunk.id", v.ID)
		f.add("tickwire.state_chunk.offset", v.Offset)
		f.add("tickwire.state_chunk.len", len(v.Data))
		f.bytes("tickwire.state_chunk.data", v.Data)
	case *StateBeginFrame:
		f.add("tickwire.frame.type", uint8(FrameStateBegin))
		f.add("tickwire.state_begin.id", v.ID)
		f.add("tickwire.state_begin.reason", uint8(v.Reason))
		f.add("tickwire.state_begin.tick", v.Tick)
		f.add("tickwire.state_begin.size", v.Size)
		f.add("tickwire.state_begin.codec", uint8(v.Codec))
		f.add("tickwire.state_begin.packed", v.Packed)
		f.add("tickwire.state_begin.received", v.Received)
		f.add("tickwire.state_begin.players", len(v.Seqs))
		for _, s := range v.Seqs {
			f.add("tickwire.state_begin.player", s.Player)
			f.add("tickwire.state_begin.seq", s.Seq)
		}
	case *ParityFrame:
		f.add("tickwire.frame.type", uint8(FrameParity))
		f.add("tickwire.parity.first", v.First)
		f.add("tickwire.parity.members", v.Members())
		f.add("tickwire.parity.shards", v.Shards)
		f.add("tickwire.parity.index", v.Index)
		for _, g := range v.Gaps {
			f.add("tickwire.parity.gap", g)
		}
		for i := range v.Members() {
			f.add("tickwire.parity.len", v.MemberLen(i))
		}
		f.bytes("tickwire.parity.shard", v.Shard)
	default:
		panic(fmt.Sprintf("no expectation for %T", fr))
	}
}

type capturedPacket struct {
	data      []byte
	want      fields
	malformed bool // the dissector must flag it
}

// dissectorCorpus builds packets of every type with random fields: n
// rounds of the full set, plus deliberately malformed packets.
func dissectorCorpus(g *gen, n int) []capturedPacket {
	var out []capturedPacket
	session := func(t PacketType, sealed bool, body func(b []byte, f fields) []byte) {
		h := g.header(t, sealed)
		f := fields{}
		expectHeader(f, &h)
		b, err := h.Append(nil)
		if err != nil {
			panic(err)
		}
		if sealed {
			ct := g.bytes(g.r.IntN(200))
			tag := g.bytes(SealOverhead)
			f.bytes("tickwire.payload", ct)
			f.bytes("tickwire.tag", tag)
			b = append(append(b, ct...), tag...)
		} else {
			b = body(b, f)
		}
		out = append(out, capturedPacket{data: b, want: f})
	}
	frames := func(b []byte, f fields) []byte {
		p, fs := g.payload(DefaultMaxPacketSize - HeaderSize)
		for _, fr := range fs {
			expectFrame(f, fr)
		}
		return append(b, p...)
	}
	for range n {
		// Handshake.
		req := ConnectionRequest{KeyID: g.r.Uint32(), GameID: g.r.Uint64(), Expires: g.r.Uint64()}
		copy(req.TokenNonce[:], g.bytes(NonceSize))
		copy(req.SealedToken[:], g.bytes(TokenSealedSize))
		b, _ := req.Append(nil)
		f := fields{}
		expectPrefix(f, PacketConnectionRequest)
		f.add("tickwire.request.key_id", req.KeyID)
		f.add("tickwire.request.game_id", req.GameID)
		f.add("tickwire.request.expires", req.Expires)
		f.bytes("tickwire.request.nonce", req.TokenNonce[:])
		f.bytes("tickwire.request.token", req.SealedToken[:])
		f.bytes("tickwire.request.padding", b[reqUsed:])
		out = append(out, capturedPacket{data: b, want: f})

		ch := g.challenge()
		b, _ = ch.Append(nil)
		f = fields{}
		expectPrefix(f, PacketChallenge)
		f.bytes("tickwire.cookie", ch.Cookie[:])
		f.bytes("tickwire.challenge.server_random", ch.ServerRandom[:])
		out = append(out, capturedPacket{data: b, want: f})

		resp := g.challengeResponse()
		b, _ = resp.Append(nil)
		f = fields{}
		expectPrefix(f, PacketChallengeResponse)
		f.bytes("tickwire.cookie", resp.Cookie[:])
		f.bytes("tickwire.response.client_random", resp.ClientRandom[:])
		f.bytes("tickwire.tag", resp.Tag[:])
		out = append(out, capturedPacket{data: b, want: f})

		for _, sealed := range []bool{false, true} {
			den := g.denied(sealed)
			b, _ = den.Append(nil)
			f = fields{}
			expectPrefix(f, PacketDenied)
			f["tickwire.sealed"] = []string{boolField(sealed)}
			f.add("tickwire.denied.reason", uint8(den.Reason))
			if sealed {
				f.add("tickwire.denied.counter", den.Counter)
				if len(den.Detail) > 0 {
					f.bytes("tickwire.denied.detail", den.Detail)
				}
				f.bytes("tickwire.tag", den.Tag[:])
			}
			out = append(out, capturedPacket{data: b, want: f})
		}

		// Session packets, plaintext and sealed.
		for _, sealed := range []bool{false, true} {
			session(PacketAccept, sealed, func(b []byte, f fields) []byte {
				a := g.acceptBody()
				f.add("tickwire.accept.client_id", a.ClientID)
				f.add("tickwire.accept.tick_rate", a.TickRate)
				f.add("tickwire.accept.heartbeat_ms", a.HeartbeatMs)
				f.add("tickwire.accept.timeout_ms", a.TimeoutMs)
				f.add("tickwire.accept.max_packet", a.MaxPacket)
				f.add("tickwire.accept.player_count", a.PlayerCount)
				for _, p := range a.Players[:a.PlayerCount] {
					f.add("tickwire.accept.player", p)
				}
				b, _ = a.Append(b)
				return b
			})
			session(PacketData, sealed, frames)
			// Path validation: a challenge and a response among other frames.
			session(PacketData, sealed, func(b []byte, f fields) []byte {
				for _, fr := range []frame{g.frame(FramePathChallenge), g.anyFrame(), g.frame(FramePathResponse)} {
					expectFrame(f, fr)
					b, _ = fr.Append(b)
				}
				return b
			})
			session(PacketMesh, sealed, frames)
			session(PacketKeepAlive, sealed, func(b []byte, f fields) []byte { return b })
			session(PacketDisconnect, sealed, func(b []byte, f fields) []byte {
				r := DisconnectReason(1 + g.r.IntN(int(disconnectReasonEnd)-1))
				f.add("tickwire.disconnect.reason", uint8(r))
				return append(b, byte(r))
			})
		}
	}
	// Malformed packets the dissector must flag (and must not crash on).
	h := g.header(PacketData, false)
	hb, _ := h.Append(nil)
	inp, _ := g.frame(FrameInput).Append(nil)
	for _, b := range [][]byte{
		hb[:HeaderSize-3],                                                                   // truncated header
		append(slices.Clone(hb), 0x7f),                                                      // unknown frame type
		append(slices.Clone(hb), inp[:len(inp)-1]...),                                       // truncated frame
		append(slices.Clone(hb), byte(FramePathChallenge), 1, 2, 3, 4, 5, 6, 7),             // truncated path challenge
		append(slices.Clone(hb), byte(FramePathResponse)),                                   // truncated path response
		append(slices.Clone(hb), byte(FrameReliable), 0x80, 0),                              // non-minimal varint
		{'t', 'w', Version, byte(PacketConnectionRequest), 1, 2, 3},                         // short request
		{'t', 'w', Version, byte(PacketDenied), 0},                                          // deny reason 0
		{'t', 'w', Version, byte(PacketDenied), byte(denyReasonEnd)},                        // unknown deny reason
		{'t', 'w', Version, byte(PacketDenied) | FlagSealed, byte(DenyServerFull), 1, 2, 3}, // truncated sealed denial
		{'t', 'w', Version, byte(PacketChallenge) | FlagSealed},                             // sealed flag on a challenge
	} {
		out = append(out, capturedPacket{data: b, malformed: true})
	}
	return out
}

// TestDissectorAgrees writes packets of every type with random fields to a
// pcap, has tshark dissect it with proto/wireshark/tickwire.lua, and
// compares every field with what was encoded. Half the packets go to port
// 7777, half to other ports (the heuristic dissector).
func TestDissectorAgrees(t *testing.T) {
	tshark := lookTshark(t)
	pkts := dissectorCorpus(newGen(7), 40)
	dir := t.TempDir()
	pcap := filepath.Join(dir, "tickwire.pcap")
	writePcap(t, pcap, datagrams(pkts), func(i int) uint16 {
		if i%2 == 0 {
			return 7777
		}
		return uint16(20000 + i)
	})

	names := map[string]bool{}
	for _, p := range pkts {
		for k := range p.want {
			names[k] = true
		}
	}
	// Fields no packet should show unless the test expects them.
	for _, k := range []string{"tickwire.payload", "tickwire.tag", "tickwire.kcp.conv", "tickwire.denied.counter"} {
		names[k] = true
	}
	cols := []string{"frame.number", "_ws.expert", "tickwire.malformed", "_ws.malformed", "_ws.lua.error"}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cols = append(cols, keys...)

	rows := runTshark(t, tshark, pcap, cols)
	if len(rows) != len(pkts) {
		t.Fatalf("tshark printed %d rows for %d packets", len(rows), len(pkts))
	}
	for i, p := range pkts {
		row := rows[i]
		flagged := row["tickwire.malformed"] != nil || row["_ws.malformed"] != nil || row["_ws.lua.error"] != nil
		if p.malformed {
			if !flagged {
				t.Errorf("packet %d (%x): malformed but not flagged", i+1, p.data)
			}
			continue
		}
		if flagged || row["_ws.expert"] != nil {
			t.Errorf("packet %d: flagged: expert=%v malformed=%v lua=%v", i+1, row["_ws.expert"], row["_ws.malformed"], row["_ws.lua.error"])
			continue
		}
		for _, k := range keys {
			got, want := row[k], p.want[k]
			if k == "tickwire.blend" && len(got) == 1 && len(want) == 1 {
				g, _ := strconv.ParseFloat(got[0], 64)
				w, _ := strconv.ParseFloat(want[0], 64)
				if math.Abs(g-w) > 1e-12 {
					t.Errorf("packet %d: blend %v, want %v", i+1, g, w)
				}
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("packet %d (type %d): %s = %q, want %q", i+1, p.data[3]&typeMask, k, got, want)
			}
		}
	}
}

func datagrams(pkts []capturedPacket) [][]byte {
	out := make([][]byte, len(pkts))
	for i, p := range pkts {
		out[i] = p.data
	}
	return out
}

// runTshark dissects a capture and returns, per packet, field -> values.
// extra are more arguments for tshark (preferences).
func runTshark(t *testing.T, tshark, pcap string, cols []string, extra ...string) []map[string][]string {
	t.Helper()
	args := append([]string{"-r", pcap, "-X", "lua_script:" + dissectorPath}, extra...)
	args = append(args, "-T", "fields",
		"-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|", "-E", "quote=n")
	for _, c := range cols {
		args = append(args, "-e", c)
	}
	cmd := exec.Command(tshark, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "Lua") || strings.Contains(s, "error") {
		t.Fatalf("tshark stderr: %s", s)
	}
	var rows []map[string][]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		cells := strings.Split(line, "\t")
		if len(cells) != len(cols) {
			t.Fatalf("row has %d cells, want %d: %q", len(cells), len(cols), line)
		}
		row := map[string][]string{}
		for j, c := range cells {
			if c != "" {
				row[cols[j]] = strings.Split(c, "|")
			}
		}
		rows = append(rows, row)
	}
	return rows
}
