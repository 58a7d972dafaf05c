package reliability

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/klauspost/reedsolomon"

	"github.com/tickwire/tickwire/proto"
)

// TestParityCoefMatchesCodec: a parity shard computed from parityCoef
// with this package's GF(2⁸) arithmetic is the shard
// klauspost/reedsolomon's encoder makes, for every window size and
// shard index: the field and the code are the same.
func TestParityCoefMatchesCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 1; k <= proto.MaxParityMembers; k++ {
		enc, err := reedsolomon.New(k, parityRows)
		if err != nil {
			t.Fatal(err)
		}
		shards := make([][]byte, k+parityRows)
		for i := range shards {
			shards[i] = make([]byte, 100)
			if i < k {
				for j := range shards[i] {
					shards[i][j] = byte(rng.IntN(256))
				}
			}
		}
		if err := enc.Encode(shards); err != nil {
			t.Fatal(err)
		}
		for j := range parityRows {
			got := make([]byte, 100)
			for i, c := range parityCoef(k, j) {
				gfMulAdd(got, shards[i], c)
			}
			if !bytes.Equal(got, shards[k+j]) {
				t.Fatalf("k=%d index %d: the coefficients do not give the codec's shard", k, j)
			}
		}
	}
}

// TestGFField: multiplication has inverses and distributes over
// addition (xor), exhaustively.
func TestGFField(t *testing.T) {
	for a := 1; a < 256; a++ {
		if gfMul(byte(a), gfInv(byte(a))) != 1 {
			t.Fatalf("%d × its inverse ≠ 1", a)
		}
		for b := range 256 {
			c := byte(a*7 + b)
			if gfMul(byte(a), byte(b)^c) != gfMul(byte(a), byte(b))^gfMul(byte(a), c) {
				t.Fatalf("%d × (%d + %d) does not distribute", a, b, c)
			}
		}
	}
}

// parityLink sends count members of random lengths through a
// ParitySender at rate, drops the packets lost says (members and parity
// packets alike, by packet number), and feeds the rest to a
// ParityReceiver in order. It returns the members and what the receiver
// holds or rebuilt of each.
func parityLink(t *testing.T, rng *rand.Rand, count int, rate float64, lost func(pn uint64) bool) (sent, got map[uint64][]byte) {
	t.Helper()
	var tx ParitySender
	var rx ParityReceiver
	sent, got = map[uint64][]byte{}, map[uint64][]byte{}
	pn := uint64(1)
	keep := func(rebuilt [][]byte) {
		for _, d := range rebuilt {
			// Which member it is: the ring slot it lives in.
			for m := range sent {
				if e, ok := rx.received(m); ok && len(d) > 0 && &e.data[0] == &d[0] {
					got[m] = append([]byte(nil), d...)
				}
			}
		}
	}
	deliver := func(pn uint64, data []byte, parity []byte) {
		if lost(pn) {
			return
		}
		keep(rx.Store(pn, data))
		if data != nil {
			got[pn] = append([]byte(nil), data...)
		}
		if parity == nil {
			return
		}
		f, _, err := proto.ParseParityFrame(parity)
		if err != nil {
			t.Fatal(err)
		}
		keep(rx.Parity(pn, &f))
	}
	for tick := range uint64(count) {
		data := make([]byte, 1+rng.IntN(1100))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		sent[pn] = data
		tx.Add(pn, data, tick, rate)
		deliver(pn, data, nil)
		pn++
		if tx.ParityDue(tick, false) {
			b := tx.AppendParity(nil, pn)
			deliver(pn, nil, b)
			pn++
		}
	}
	return sent, got
}

// TestParityRebuildsExactly: over random losses, whatever the receiver
// rebuilds is exactly the member that was sent, and at 5 % loss and one
// parity frame per two members nearly every lost member comes back.
func TestParityRebuildsExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dropped := 0
	sent, got := parityLink(t, rng, 4000, 0.5, func(uint64) bool {
		if rng.Float64() < 0.05 {
			dropped++
			return true
		}
		return false
	})
	missing := 0
	for pn, d := range sent {
		g, ok := got[pn]
		if !ok {
			missing++
			continue
		}
		if !bytes.Equal(g, d) {
			t.Fatalf("member %d: rebuilt %d bytes that differ from the %d sent", pn, len(g), len(d))
		}
	}
	if missing > len(sent)/200 {
		t.Fatalf("%d of %d members neither arrived nor were rebuilt, want at most 0.5 %%", missing, len(sent))
	}
	t.Logf("%d packets dropped; %d of %d members lost for good", dropped, missing, len(sent))
}

// TestParityOverlappingWindows: two members lost side by side, each
// window of one parity frame covering both: neither frame rebuilds them
// alone, the two together do.
func TestParityOverlappingWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// Members are packets 1, 2, parity 3, members 4, 5, parity 6...
	// (one parity per two members). Lose members 4 and 5: the parity
	// frames in packets 6 and 9 both cover them.
	sent, got := parityLink(t, rng, 12, 0.5, func(pn uint64) bool { return pn == 4 || pn == 5 })
	for _, pn := range []uint64{4, 5} {
		if !bytes.Equal(got[pn], sent[pn]) {
			t.Fatalf("member %d not rebuilt from the overlapping windows", pn)
		}
	}
}

// TestParityOvertakenMember: a parity frame that overtook one of its
// members on the path, while another member is lost, has two unknowns
// and rebuilds nothing; the overtaken member's arrival leaves one, and
// Store rebuilds the lost member then, exactly, instead of waiting for
// the next parity frame.
func TestParityOvertakenMember(t *testing.T) {
	var tx ParitySender
	var rx ParityReceiver
	lost := bytes.Repeat([]byte{1, 2, 3}, 300)
	late := bytes.Repeat([]byte{9}, 1000)
	tx.Add(1, lost, 1, 0.5)
	tx.Add(2, late, 2, 0.5)
	f, _, err := proto.ParseParityFrame(tx.AppendParity(nil, 3))
	if err != nil {
		t.Fatal(err)
	}
	rx.Store(3, nil)
	if got := rx.Parity(3, &f); len(got) != 0 {
		t.Fatalf("rebuilt %d members from one parity frame over two unknowns", len(got))
	}
	got := rx.Store(2, late)
	if len(got) != 1 || !bytes.Equal(got[0], lost) {
		t.Fatalf("storing the overtaken member rebuilt %d frames, want the lost member", len(got))
	}
	if got := rx.Store(1, lost); len(got) != 0 {
		t.Fatalf("the lost member arriving after all rebuilt %d frames", len(got))
	}
}

// TestParityReceiverAllocs: storing frames and taking parity frames
// allocates nothing once the receiver's rebuilt list has grown.
func TestParityReceiverAllocs(t *testing.T) {
	var tx ParitySender
	rx := new(ParityReceiver)
	data := bytes.Repeat([]byte{7}, 900)
	pn := uint64(1)
	var frame []byte
	step := func() {
		tx.Add(pn, data, pn, 1)
		// every other member lost: each parity frame rebuilds one
		if pn%2 == 0 {
			rx.Store(pn, data)
		}
		pn++
		frame = tx.AppendParity(frame[:0], pn)
		f, _, err := proto.ParseParityFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		rx.Store(pn, nil)
		rx.Parity(pn, &f)
		pn++
	}
	for range 20 {
		step()
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%v allocations per member and parity frame", n)
	}
}

// FuzzParityReceiver: parity frames from a peer (authenticated, but a
// peer may be hostile) never panic the receiver, and what it rebuilds
// has the lengths the frames declared.
func FuzzParityReceiver(f *testing.F) {
	var tx ParitySender
	for i := range uint64(3) {
		tx.Add(10+i, bytes.Repeat([]byte{byte(i)}, 50+int(i)), i, 1)
	}
	f.Add(uint64(14), tx.AppendParity(nil, 14), uint8(1))
	f.Add(uint64(1), []byte{byte(proto.FrameParity), 0, 0, 0, 0, 1, 1, 0, 1, 0, 7}, uint8(0))
	f.Fuzz(func(t *testing.T, pn uint64, frames []byte, seed uint8) {
		var rx ParityReceiver
		check := func(rebuilt [][]byte) {
			for _, d := range rebuilt {
				if len(d) == 0 || len(d) > proto.MaxPacketSizeLimit {
					t.Fatalf("rebuilt %d bytes", len(d))
				}
			}
		}
		for i := range uint64(20) {
			if (i+uint64(seed))%3 != 0 {
				rx.Store(pn-i, bytes.Repeat([]byte{byte(i)}, 1+int(i)*7))
			}
		}
		for len(frames) > 0 {
			p, n, err := proto.ParseParityFrame(frames)
			if err != nil {
				return
			}
			frames = frames[n:]
			check(rx.Parity(pn, &p))
		}
		// The members that had not arrived come now, after the parity
		// frames: each may complete an equation.
		for i := range uint64(20) {
			if (i+uint64(seed))%3 == 0 {
				check(rx.Store(pn-i, bytes.Repeat([]byte{byte(i)}, 1+int(i)*7)))
			}
		}
	})
}

// TestParityReceiverClosedGroups: a sender that closes its groups (k
// members, m parity shards of the (k, m) code, as the parity frame's
// first sender did) is understood too: any m lost members of a group
// come back exactly from its m shards.
func TestParityReceiverClosedGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for k := 1; k <= 4; k++ {
		for m := 1; m <= 3; m++ {
			enc, err := reedsolomon.New(k, m)
			if err != nil {
				t.Fatal(err)
			}
			members := make([][]byte, k)
			pns := make([]uint64, k)
			pn := uint64(1000 + rng.IntN(100))
			longest := 0
			for i := range k {
				members[i] = make([]byte, 1+rng.IntN(1100))
				for j := range members[i] {
					members[i][j] = byte(rng.Uint32())
				}
				longest = max(longest, len(members[i]))
				pns[i] = pn
				pn += uint64(1 + rng.IntN(3))
			}
			shards := make([][]byte, k+m)
			var gaps, lens []byte
			for i := range k + m {
				shards[i] = make([]byte, longest)
				if i < k {
					copy(shards[i], members[i])
					if i > 0 {
						gaps = append(gaps, byte(pns[i]-pns[i-1]))
					}
					lens = append(lens, byte(len(members[i])), byte(len(members[i])>>8))
				}
			}
			if err := enc.Encode(shards); err != nil {
				t.Fatal(err)
			}
			lost := rng.Perm(k)[:min(m, k)]
			var rx ParityReceiver
			for i := range k {
				if !slices.Contains(lost, i) {
					rx.Store(pns[i], members[i])
				}
			}
			rebuilt := 0
			for j := range m {
				f := proto.ParityFrame{First: uint32(pns[0]), Shards: uint8(m), Index: uint8(j), Gaps: gaps, Lens: lens, Shard: shards[k+j]}
				for _, d := range rx.Parity(pn, &f) {
					found := false
					for _, l := range lost {
						found = found || bytes.Equal(d, members[l])
					}
					if !found {
						t.Fatalf("k=%d m=%d: a rebuilt frame of %d bytes is none of the lost members", k, m, len(d))
					}
					rebuilt++
				}
			}
			if rebuilt != len(lost) {
				t.Fatalf("k=%d m=%d: %d rebuilt, %d lost", k, m, rebuilt, len(lost))
			}
		}
	}
}
