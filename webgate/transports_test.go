package webgate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// echoOne reads one packet from the gateway and sends it back to where
// it came from, and returns it.
func echoOne(t *testing.T, c *Conn) udp.Message {
	t.Helper()
	msgs := newMsgs(4)
	if n := readOne(t, c, msgs); n != 1 {
		t.Fatalf("read %d packets, want 1", n)
	}
	m := msgs[0]
	if n, err := c.WriteBatch([]udp.Message{{Buf: m.Buf[:m.N], Addr: m.Addr}}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	return m
}

func TestWebSocket(t *testing.T) {
	c := newGate(t, Config{MaxLinksPerAddr: 1})
	hs := httptest.NewServer(c.WebSocketHandler(nil))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	ctx := t.Context()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	want := packetOf(1200, 9)
	if err := ws.Write(ctx, websocket.MessageBinary, want); err != nil {
		t.Fatal(err)
	}
	m := echoOne(t, c)
	if TransportOf(m.Addr) != WebSocket || !bytes.Equal(m.Buf[:m.N], want) {
		t.Fatalf("server got %d bytes from %v", m.N, m.Addr)
	}
	typ, got, err := ws.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || !bytes.Equal(got, want) {
		t.Fatalf("browser got %v %d bytes, %v", typ, len(got), err)
	}

	// A second socket from the same address is over the limit.
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second socket: %v %v", resp, err)
	}
	// A text message ends the connection.
	if err := ws.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx); err == nil {
		t.Error("the socket stayed open after a text message")
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats()[WebSocket].Open != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the link stayed open")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveWebTransport serves c's WebTransport on a loopback socket until
// the test ends, with a development certificate whose hash it returns.
func serveWebTransport(t *testing.T, c *Conn) (net.PacketConn, [32]byte) {
	t.Helper()
	cert, hash, err := NewDevCertificate([]string{"127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := c.NewWebTransport(cert)
	served := make(chan error, 1)
	go func() { served <- s.Serve(pc) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pc, hash
}

func TestWebTransport(t *testing.T) {
	c := newGate(t, Config{MaxLinksPerAddr: 1})
	pc, hash := serveWebTransport(t, c)

	d := &webtransport.Transport{
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // checked against the hash, as a browser does
			VerifyConnection: func(st tls.ConnectionState) error {
				if len(st.PeerCertificates) == 0 || sha256.Sum256(st.PeerCertificates[0].Raw) != hash {
					return errors.New("certificate hash mismatch")
				}
				return nil
			},
		},
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	defer d.Close()
	ctx := t.Context()
	resp, sess, err := d.Dial(ctx, "https://"+pc.LocalAddr().String()+WebTransportPath, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := packetOf(1200, 5)
	if err := sess.SendDatagram(want); err != nil {
		t.Fatal(err)
	}
	m := echoOne(t, c)
	if TransportOf(m.Addr) != WebTransport || !bytes.Equal(m.Buf[:m.N], want) {
		t.Fatalf("server got %d bytes from %v", m.N, m.Addr)
	}
	got, err := sess.ReceiveDatagram(ctx)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("browser got %d bytes, %v", len(got), err)
	}
	if st := c.Stats()[WebTransport]; st.Open != 1 || st.PacketsIn != 1 || st.PacketsOut != 1 {
		t.Errorf("stats %+v", st)
	}

	// A second QUIC connection from the same address is over the limit.
	d2 := &webtransport.Transport{TLSClientConfig: d.TLSClientConfig, QUICConfig: d.QUICConfig}
	defer d2.Close()
	if _, _, err := d2.Dial(ctx, "https://"+pc.LocalAddr().String()+WebTransportPath, nil); err == nil {
		t.Error("a second connection from one address was let in")
	}
	if st := c.Stats()[WebTransport]; st.Refused != 1 {
		t.Errorf("refused %d, want 1", st.Refused)
	}
}

func TestDevCertificate(t *testing.T) {
	now := time.Now()
	cert, hash, err := NewDevCertificate([]string{"127.0.0.1", "localhost"}, now)
	if err != nil {
		t.Fatal(err)
	}
	x, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(cert.Certificate[0]) != hash {
		t.Error("hash is not the certificate's")
	}
	if life := x.NotAfter.Sub(x.NotBefore); life > 14*24*time.Hour {
		t.Errorf("valid for %v: serverCertificateHashes allows 14 days at most", life)
	}
	if err := x.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if err := x.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
}

// A WebSocket message over the largest packet (1472 bytes) closes the
// socket with 1009 (message too big), as docs/PROTOCOL.md says: one byte
// over, and a megabyte over; a message of exactly 1472 bytes goes
// through.
func TestWebSocketOversizeCloses1009(t *testing.T) {
	c := newGate(t, Config{})
	hs := httptest.NewServer(c.WebSocketHandler(nil))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	most := packetOf(proto.MaxPacketSizeLimit, 3)
	if err := ws.Write(ctx, websocket.MessageBinary, most); err != nil {
		t.Fatal(err)
	}
	if m := echoOne(t, c); m.N != proto.MaxPacketSizeLimit {
		t.Fatalf("a %d-byte message arrived as %d bytes", proto.MaxPacketSizeLimit, m.N)
	}
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatalf("after a %d-byte message: %v", proto.MaxPacketSizeLimit, err)
	}

	for _, size := range []int{proto.MaxPacketSizeLimit + 1, 1 << 20} {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		if err := ws.Write(ctx, websocket.MessageBinary, packetOf(size, 4)); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		_, _, err = ws.Read(ctx)
		if code := websocket.CloseStatus(err); code != websocket.StatusMessageTooBig {
			t.Errorf("a %d-byte message: read %v, close status %v, want 1009", size, err, code)
		}
	}
	if st := c.Stats()[WebSocket]; st.Malformed != 2 {
		t.Errorf("malformed %d, want 2", st.Malformed)
	}
}

// deafConn is a client socket that sends its first flight and then
// nothing (as a spoofed source that never receives the answers would),
// counting the bytes either way.
type deafConn struct {
	net.PacketConn
	mu         sync.Mutex
	heard      bool
	sent, recv int
}

func (c *deafConn) WriteTo(b []byte, a net.Addr) (int, error) {
	c.mu.Lock()
	heard := c.heard
	if !heard {
		c.sent += len(b)
	}
	c.mu.Unlock()
	if heard {
		return len(b), nil // "sent": never reaches the gate
	}
	return c.PacketConn.WriteTo(b, a)
}

func (c *deafConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	c.mu.Lock()
	c.heard, c.recv = true, c.recv+n
	c.mu.Unlock()
	return n, a, err
}

// TestWebTransportAmplification: what can a sender that proves nothing
// make the WebTransport gate send? A client that sends its first flight
// and never another packet (as a spoofed source address would) gets a
// QUIC Retry, which is smaller than what it sent, and nothing else; the
// gate opens no link and sends no packet before a session is open (and
// then only the server's answers to that session's datagrams). Without
// Retry quic-go sent such a client 4,200 bytes for its 1,280 (3.28×).
func TestWebTransportAmplification(t *testing.T) {
	c := newGate(t, Config{})
	pc, _ := serveWebTransport(t, c)

	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deaf := &deafConn{PacketConn: u}
	tr := &quic.Transport{Conn: deaf}
	defer tr.Close()
	// Long enough for any retransmission (a server's first PTOs come
	// within a second); the bound holds however long we listen.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	qc, err := tr.Dial(ctx, pc.LocalAddr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h3"},
		// One datagram of ClientHello: the server then sends its whole flight.
		CurvePreferences: []tls.CurveID{tls.X25519}},
		&quic.Config{EnableDatagrams: true})
	if err == nil {
		t.Error("a handshake completed with a client that never answered")
		<-ctx.Done()
		qc.CloseWithError(0, "")
	}
	deaf.mu.Lock()
	sent, recv := deaf.sent, deaf.recv
	deaf.mu.Unlock()
	t.Logf("the silent client sent %d bytes and got %d back (%.2f×)", sent, recv, float64(recv)/float64(sent))
	if sent == 0 || recv == 0 {
		t.Fatalf("sent %d, received %d: the exchange did not happen", sent, recv)
	}
	if recv > sent {
		t.Errorf("the gate sent %d bytes to an address that sent %d and never answered: it amplifies", recv, sent)
	}
	if st := c.Stats()[WebTransport]; st.PacketsOut != 0 || st.Open != 0 {
		t.Errorf("the gate opened a link or sent packets before any session: %+v", st)
	}
}
