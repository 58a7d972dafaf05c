package proto

import (
	"encoding/binary"
	"os"
	"testing"
)

// writePcap writes datagrams as IPv4/UDP packets from 127.0.0.1 to
// 127.0.0.1 (link type LINKTYPE_IPV4) with the DSCP EF mark, one per record.
// port(i) gives packet i's UDP destination port.
func writePcap(t testing.TB, path string, pkts [][]byte, port func(i int) uint16) {
	t.Helper()
	const linkTypeIPv4 = 228
	le := binary.LittleEndian
	be := binary.BigEndian
	var out []byte
	out = le.AppendUint32(out, 0xa1b2c3d4)
	out = le.AppendUint16(out, 2)
	out = le.AppendUint16(out, 4)
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, 65535)
	out = le.AppendUint32(out, linkTypeIPv4)
	for i, d := range pkts {
		ip := make([]byte, 20+8, 28+len(d))
		ip[0] = 0x45
		ip[1] = 46 << 2
		be.PutUint16(ip[2:], uint16(28+len(d)))
		be.PutUint16(ip[4:], uint16(i))
		ip[8] = 64
		ip[9] = 17
		copy(ip[12:], []byte{127, 0, 0, 1})
		copy(ip[16:], []byte{127, 0, 0, 1})
		var sum uint32
		for j := 0; j < 20; j += 2 {
			sum += uint32(be.Uint16(ip[j:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		be.PutUint16(ip[10:], ^uint16(sum))
		be.PutUint16(ip[20:], 40000)
		be.PutUint16(ip[22:], port(i))
		be.PutUint16(ip[24:], uint16(8+len(d)))
		ip = append(ip, d...)
		out = le.AppendUint32(out, uint32(1700000000+i))
		out = le.AppendUint32(out, 0)
		out = le.AppendUint32(out, uint32(len(ip)))
		out = le.AppendUint32(out, uint32(len(ip)))
		out = append(out, ip...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
