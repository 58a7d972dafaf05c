package proto

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sealKey is one key of the test's key log: it seals packets of type
// session (4, 6, 7, 8) or mesh (9) that name conn, numbered from next.
type sealKey struct {
	conn   uint32
	dir    string // c2s, s2c or mesh
	key    [KeySize]byte
	aead   cipher.AEAD
	next   uint64
	logged bool // in the key log
}

func newSealKey(t *testing.T, g *gen, conn uint32, dir string, first uint64, logged bool) *sealKey {
	k := &sealKey{conn: conn, dir: dir, next: first, logged: logged}
	copy(k.key[:], g.bytes(KeySize))
	b, err := aes.NewCipher(k.key[:])
	if err != nil {
		t.Fatal(err)
	}
	if k.aead, err = cipher.NewGCM(b); err != nil {
		t.Fatal(err)
	}
	return k
}

// seal rewrites plaintext packet pkt (header and payload) as k's next
// packet: its connection id, sequence and sealed flag, its payload
// sealed with the header as additional data. want follows the header.
func (k *sealKey) seal(pkt []byte, want fields) (sealed []byte, pn uint64) {
	pn = k.next
	k.next++
	hdr := slices.Clone(pkt[:HeaderSize])
	hdr[3] |= FlagSealed
	le.PutUint32(hdr[4:], k.conn)
	le.PutUint16(hdr[8:], uint16(pn))
	want["tickwire.sealed"] = []string{"1"}
	want["tickwire.conn_id"] = []string{fmt.Sprint(k.conn)}
	want["tickwire.seq"] = []string{fmt.Sprint(uint16(pn))}
	nonce := Nonce(NonceSession, pn)
	return k.aead.Seal(hdr, nonce[:], pkt[HeaderSize:], hdr), pn
}

// keyLogLine is the key's line in the documented format.
func (k *sealKey) keyLogLine(made time.Time) string {
	return fmt.Sprintf("tickwire1 %s %d %s %s\n", k.dir, k.conn, made.UTC().Format("2006-01-02T15:04:05.000Z"), hex.EncodeToString(k.key[:]))
}

// TestDissectorDecrypts seals the plaintext session and mesh packets of
// the dissector's corpus under keys of a key log and has tshark dissect
// them twice. With the key log (the preference tickwire.keylog_file)
// every one shows exactly the fields of its plaintext form, marked
// decrypted with its full packet number, whatever the key log holds
// around its key: comments, a line of another version, two sessions and
// several mesh peers under one connection id, packet numbers past
// 65536 and a first packet 70,000 into its session. A packet whose
// connection has only other keys, and one whose connection has none,
// are shown sealed with the expert info tickwire.undecryptable, never
// malformed. Without the key log the sealed packets show their headers
// and nothing of their frames; with one that cannot be read, the same,
// each saying so. It logs how fast the Lua decryption is.
func TestDissectorDecrypts(t *testing.T) {
	tshark := lookTshark(t)
	g := newGen(8)
	const a, b, c = 0x1000, 0x2000, 0x3000
	keys := []*sealKey{
		newSealKey(t, g, a, "c2s", 1, true),
		newSealKey(t, g, a, "s2c", 65530, true), // wraps past 65536
		newSealKey(t, g, a, "c2s", 1, true),     // a second session with id a
		newSealKey(t, g, b, "s2c", 70000, true), // a capture that began late
		newSealKey(t, g, b, "mesh", 1, true),    // b's mesh: one key per peer
		newSealKey(t, g, b, "mesh", 1, true),
		newSealKey(t, g, c, "c2s", 1, false), // c has no line: unknown
		newSealKey(t, g, a, "s2c", 1, false), // another of a's: wrong key
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "keys.log")
	text := "# tickwire key log\n" + "tickwire2 c2s 4096 2026-05-01T10:00:00.000Z abc\n"
	made := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, k := range keys {
		if k.logged {
			text += k.keyLogLine(made)
		}
	}
	text += keys[0].keyLogLine(made) // a repeat, as when both ends log
	if err := os.WriteFile(logPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	type sealedPacket struct {
		capturedPacket
		key *sealKey
		pn  uint64
	}
	var pkts []sealedPacket
	session, mesh := []*sealKey{keys[0], keys[1], keys[2], keys[3]}, []*sealKey{keys[4], keys[5]}
	for _, p := range dissectorCorpus(g, 30) {
		typ := PacketType(p.data[3] & typeMask)
		if p.malformed || p.data[3]&FlagSealed != 0 || len(p.data) < HeaderSize || typ < PacketAccept || typ == PacketDenied {
			continue
		}
		k := mesh[len(pkts)%len(mesh)]
		if typ != PacketMesh {
			k = session[len(pkts)%len(session)]
		}
		data, pn := k.seal(p.data, p.want)
		pkts = append(pkts, sealedPacket{capturedPacket{data: data, want: p.want}, k, pn})
	}
	for _, k := range keys[6:] {
		h := newGen(9).header(PacketData, false)
		hb, _ := h.Append(nil)
		data, pn := k.seal(append(hb, byte(FrameAckOnly), 1, 0), fields{})
		pkts = append(pkts, sealedPacket{capturedPacket{data: data}, k, pn})
	}
	var datagrams [][]byte
	for _, p := range pkts {
		datagrams = append(datagrams, p.data)
	}
	pcap := filepath.Join(dir, "sealed.pcap")
	writePcap(t, pcap, datagrams, func(i int) uint16 { return 7777 })

	names := map[string]bool{}
	for _, p := range pkts {
		for k := range p.want {
			names[k] = true
		}
	}
	cols := []string{"frame.number", "_ws.expert", "tickwire.malformed", "_ws.malformed", "_ws.lua.error",
		"tickwire.undecryptable", "tickwire.decrypted", "tickwire.packet_number", "tickwire.keylog.direction",
		"tickwire.payload", "tickwire.tag"}
	var more []string
	for k := range names {
		if !slices.Contains(cols, k) {
			more = append(more, k)
		}
	}
	slices.Sort(more)
	cols = append(cols, more...)

	keylogPref := "tickwire.keylog_file:" + logPath
	rows := runTshark(t, tshark, pcap, cols, "-o", keylogPref)
	if len(rows) != len(pkts) {
		t.Fatalf("tshark printed %d rows for %d packets", len(rows), len(pkts))
	}
	decrypted := 0
	for i, p := range pkts {
		row := rows[i]
		if row["tickwire.malformed"] != nil || row["_ws.malformed"] != nil || row["_ws.lua.error"] != nil {
			t.Errorf("packet %d: flagged: malformed=%v lua=%v", i+1, row["_ws.malformed"], row["_ws.lua.error"])
			continue
		}
		if !p.key.logged {
			if row["tickwire.undecryptable"] == nil || row["tickwire.decrypted"] != nil || row["tickwire.payload"] == nil {
				t.Errorf("packet %d (conn %d, a key not in the log): %v", i+1, p.key.conn, row)
			}
			continue
		}
		if row["_ws.expert"] != nil {
			t.Errorf("packet %d: expert info %v", i+1, row["_ws.expert"])
			continue
		}
		want := fields{"tickwire.decrypted": {"1"}, "tickwire.packet_number": {fmt.Sprint(p.pn)}, "tickwire.keylog.direction": {p.key.dir}}
		for k, v := range p.want {
			want[k] = v
		}
		for _, k := range cols[5:] {
			if got := row[k]; !slices.Equal(got, want[k]) && k != "tickwire.blend" { // blend: TestDissectorAgrees
				t.Errorf("packet %d (type %d, %s key of conn %d): %s = %q, want %q", i+1, p.data[3]&typeMask, p.key.dir, p.key.conn, k, got, want[k])
			}
		}
		decrypted++
	}
	t.Logf("%d sealed packets under logged keys, all decrypted; %d under other keys, none", decrypted, len(pkts)-decrypted)

	// Without the key log: headers only.
	rows = runTshark(t, tshark, pcap, cols)
	for i, row := range rows {
		var shown []string
		for _, k := range []string{"tickwire.frame.type", "tickwire.decrypted", "tickwire.undecryptable", "_ws.expert", "tickwire.accept.client_id", "tickwire.disconnect.reason"} {
			if row[k] != nil {
				shown = append(shown, k)
			}
		}
		if len(shown) > 0 || row["tickwire.conn_id"] == nil || row["tickwire.tag"] == nil {
			t.Errorf("packet %d without the key log: shows %v, conn %v, tag %v", i+1, shown, row["tickwire.conn_id"], row["tickwire.tag"])
		}
	}
	// A key log that cannot be read: every sealed packet says so, and
	// shows its header as without one.
	rows = runTshark(t, tshark, pcap, append(cols, "_ws.expert.message"), "-o", "tickwire.keylog_file:"+filepath.Join(dir, "missing.log"))
	for i, row := range rows {
		if msg := row["_ws.expert.message"]; len(msg) != 1 || !strings.HasPrefix(msg[0], "the key log cannot be read") ||
			row["tickwire.frame.type"] != nil || row["tickwire.malformed"] != nil || row["tickwire.tag"] == nil {
			t.Errorf("packet %d with a missing key log: %v", i+1, row)
		}
	}
	size := 0
	for _, p := range pkts {
		size += len(p.data)
	}
	if d := tsharkCPU(t, tshark, pcap, "-o", keylogPref) - tsharkCPU(t, tshark, pcap); d > 0 {
		t.Logf("decrypting %d packets of %d bytes on average took %v of CPU: %.0f packets/s",
			len(pkts), size/len(pkts), d.Round(time.Millisecond), float64(len(pkts))/d.Seconds())
	}
}

// tsharkCPU is the processor time tshark takes to dissect pcap (with
// the extra arguments): the time the Lua dissector adds shows in it,
// not in the wall-clock time of a busy machine.
func tsharkCPU(t *testing.T, tshark, pcap string, extra ...string) time.Duration {
	t.Helper()
	cmd := exec.Command(tshark, append(append([]string{"-r", pcap, "-X", "lua_script:" + dissectorPath}, extra...),
		"-T", "fields", "-e", "tickwire.decrypted")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
