package webgate

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// WebTransportPath is the path browsers open a WebTransport session on.
const WebTransportPath = "/tickwire"

// quicPacketSize is the QUIC packet size the WebTransport server starts
// with: a 1200-byte tickwire packet plus the datagram's framing must fit
// one QUIC packet from the first, and 1400 bytes fits in the usual
// 1500-byte Ethernet MTU with room for IPv6 and a tunnel.
const quicPacketSize = 1400

// WebTransportServer serves browser links over WebTransport datagrams:
// an HTTP/3 server on a UDP socket of its own whose only resource is
// WebTransportPath.
type WebTransportServer struct {
	c  *Conn
	h3 *http3.Server
	wt *webtransport.Server

	mu     sync.Mutex // guards the QUIC connections' count and the listener
	quics  map[netip.Addr]int
	total  int
	ln     *quic.EarlyListener
	closed bool
}

// NewWebTransport returns a WebTransport server for c's links that
// presents cert (a development certificate from NewDevCertificate, whose
// hash browsers accept through serverCertificateHashes, or a real one).
// Any Origin may open a session: a session only carries datagrams to the
// server's handshake, as any UDP client can send, and holds no
// credential of the page's.
func (c *Conn) NewWebTransport(cert tls.Certificate) *WebTransportServer {
	s := &WebTransportServer{c: c}
	mux := http.NewServeMux()
	mux.HandleFunc(WebTransportPath, s.serveSession)
	s.h3 = &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}),
		QUICConfig: &quic.Config{
			EnableDatagrams:                  true,
			EnableStreamResetPartialDelivery: true,
			InitialPacketSize:                quicPacketSize,
			MaxIdleTimeout:                   c.cfg.IdleTimeout,
			MaxIncomingStreams:               8,
			MaxIncomingUniStreams:            8,
		},
		Handler: mux,
	}
	webtransport.ConfigureHTTP3Server(s.h3)
	s.wt = &webtransport.Server{H3: s.h3, CheckOrigin: func(*http.Request) bool { return true }}
	return s
}

// Serve serves on pc (a UDP socket) until Close. A client address
// holds at most Config.MaxLinksPerAddr QUIC connections, and all
// together at most Config.MaxLinks, sessions or not: more are closed as
// soon as their handshake is done.
//
// Every connection attempt first proves its source address with QUIC's
// Retry (RFC 9000 §8.1.2): the answer to a first Initial is a Retry
// packet smaller than that Initial, so a spoofed source gets back less
// than it sent. Without it, quic-go's anti-amplification limit lets the
// server's first flight reach 3× the Initial plus one packet (measured:
// 4,200 bytes for a 1,280-byte Initial). It costs one round trip when a
// browser opens its session.
func (s *WebTransportServer) Serve(pc net.PacketConn) error {
	tr := &quic.Transport{Conn: pc, VerifySourceAddress: func(net.Addr) bool { return true }}
	defer tr.Close()
	ln, err := tr.ListenEarly(s.h3.TLSConfig, s.h3.QUICConfig)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	defer ln.Close()
	for {
		qc, err := ln.Accept(context.Background())
		if err != nil {
			if errors.Is(err, quic.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		ip := addrOf(qc.RemoteAddr())
		if !s.admit(ip) {
			s.c.stats[WebTransport].refused.Add(1)
			qc.CloseWithError(quicRefused, "too many connections")
			continue
		}
		go func() {
			defer s.release(ip)
			if err := s.wt.ServeQUICConn(qc); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.c.cfg.Logger.Debug("webgate: QUIC connection", "addr", qc.RemoteAddr(), "err", err)
			}
			<-qc.Context().Done()
		}()
	}
}

// quicRefused is the QUIC application error a connection over a limit
// is closed with.
const quicRefused quic.ApplicationErrorCode = 0x100

func (s *WebTransportServer) admit(ip netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.c.cfg.MaxLinks || s.quics[ip] >= s.c.cfg.MaxLinksPerAddr {
		return false
	}
	if s.quics == nil {
		s.quics = map[netip.Addr]int{}
	}
	s.quics[ip]++
	s.total++
	return true
}

func (s *WebTransportServer) release(ip netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quics[ip]--; s.quics[ip] <= 0 {
		delete(s.quics, ip)
	}
	s.total--
}

func addrOf(a net.Addr) netip.Addr {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// Close ends every session and stops serving.
func (s *WebTransportServer) Close() error {
	s.mu.Lock()
	s.closed = true
	ln := s.ln
	s.mu.Unlock()
	err := s.wt.Close()
	if ln != nil {
		ln.Close()
	}
	return err
}

func (s *WebTransportServer) serveSession(w http.ResponseWriter, r *http.Request) {
	c := s.c
	l, err := c.Open(WebTransport, remoteAddr(r))
	if err != nil {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	sess, err := s.wt.Upgrade(w, r)
	if err != nil {
		l.Close()
		c.cfg.Logger.Debug("webgate: webtransport upgrade", "err", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ctx := sess.Context()
	go func() {
		defer sess.CloseWithError(0, "")
		err := l.Send(ctx, func(b []byte) error {
			var big *quic.DatagramTooLargeError
			if err := sess.SendDatagram(b); errors.As(err, &big) {
				c.stats[WebTransport].sendFull.Add(1)
				return nil
			} else {
				return err
			}
		})
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("webgate: webtransport send", "link", l.addr, "err", err)
		}
		l.Close()
	}()
	go func() {
		defer l.Close()
		for {
			b, err := sess.ReceiveDatagram(ctx)
			if err != nil {
				return
			}
			if errors.Is(l.Deliver(b), ErrLinkClosed) {
				return
			}
		}
	}()
	go func() {
		// The link's idle timeout closes the session too.
		select {
		case <-l.Done():
			sess.CloseWithError(0, "idle")
		case <-ctx.Done():
		}
	}()
}

// devCertLifetime is how long a development certificate is valid:
// serverCertificateHashes accepts at most 14 days.
const devCertLifetime = 10 * 24 * time.Hour
