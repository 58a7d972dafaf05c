package reliability

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func FuzzParseSegment(f *testing.F) {
	seed := []segment{
		{Conv: 7, Cmd: cmdPush, Frg: 2, Wnd: 256, TS: 1234, SN: 9, Una: 3, Data: []byte("hello")},
		{Conv: 7, Cmd: cmdAck, Wnd: 128, TS: 99, SN: 8, Una: 8},
		{Conv: 1, Cmd: cmdWask},
		{Conv: 1, Cmd: cmdWins, Wnd: 3},
		{Conv: 0xffffffff, Cmd: cmdPush, Data: bytes.Repeat([]byte{0xab}, 100)},
	}
	for _, s := range seed {
		f.Add(appendSegment(nil, &s), 1131)
	}
	f.Add([]byte{1, 2, 3}, 10)
	f.Fuzz(func(t *testing.T, b []byte, maxData int) {
		maxData = max(0, min(maxData, 1<<16))
		s, n, err := parseSegment(b, maxData)
		if err != nil {
			if !errors.Is(err, ErrBadSegment) {
				t.Fatalf("error %v does not wrap ErrBadSegment", err)
			}
			return
		}
		if n < segOverhead || n > len(b) || len(s.Data) > maxData {
			t.Fatalf("n=%d len=%d data=%d max=%d", n, len(b), len(s.Data), maxData)
		}
		enc := appendSegment(nil, &s)
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", enc, b[:n])
		}
		if segmentLen(b) != n {
			t.Fatalf("segmentLen %d, parsed %d", segmentLen(b), n)
		}
		s2, n2, err := parseSegment(enc, maxData)
		if err != nil || n2 != n || s2.SN != s.SN || s2.Cmd != s.Cmd || !bytes.Equal(s2.Data, s.Data) {
			t.Fatalf("round trip: %v %d %+v", err, n2, s2)
		}
	})
}

func TestParseSegmentRejects(t *testing.T) {
	good := appendSegment(nil, &segment{Conv: 7, Cmd: cmdPush, Data: []byte("abc")})
	for name, tc := range map[string]struct {
		b   []byte
		max int
	}{
		"short":        {good[:10], 100},
		"truncated":    {good[:len(good)-1], 100},
		"bad command":  {func() []byte { b := bytes.Clone(good); b[segOffCmd] = 99; return b }(), 100},
		"ack with len": {appendSegment(nil, &segment{Cmd: cmdAck, Data: []byte("x")}), 100},
		"over mss":     {good, 2},
	} {
		if _, _, err := parseSegment(tc.b, tc.max); !errors.Is(err, ErrBadSegment) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// FuzzReliableInput feeds arbitrary reliable-frame data to a channel that
// has traffic in flight: Input must reject or accept without panicking
// (KCP itself is only reached with validated segments), and the channel
// must keep working afterwards.
func FuzzReliableInput(f *testing.F) {
	for _, s := range []segment{
		{Conv: 5, Cmd: cmdPush, SN: 0, Data: []byte("m")},
		{Conv: 5, Cmd: cmdPush, Frg: 3, SN: 1, Data: make([]byte, 1131)},
		{Conv: 5, Cmd: cmdAck, SN: 0, Una: 1},
		{Conv: 5, Cmd: cmdWask},
		{Conv: 5, Cmd: cmdPush, SN: 1 << 31, Data: []byte("far")},
	} {
		f.Add(appendSegment(nil, &s))
	}
	f.Add(append(appendSegment(nil, &segment{Conv: 5, Cmd: cmdAck}), appendSegment(nil, &segment{Conv: 5, Cmd: cmdPush, Data: []byte("ab")})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := NewReliable(5, ReliableConfig{Window: 16})
		r.Send([]byte("hello"))
		r.Update(time.Now())
		err := r.Input(time.Now(), data)
		if err != nil && !errors.Is(err, ErrBadSegment) {
			t.Fatalf("unexpected error %v", err)
		}
		var buf []byte
		for range 20 {
			var ok bool
			if buf, ok = r.Receive(buf[:0]); !ok {
				break
			}
		}
		r.Update(time.Now())
		for r.Pending() > 0 {
			if _, n := r.AppendFrame(nil, 1158); n == 0 {
				t.Fatal("pending segment does not fit a packet")
			}
		}
	})
}
