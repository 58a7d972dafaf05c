package webgate

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
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

// Serve serves on pc (a UDP socket) until Close.
func (s *WebTransportServer) Serve(pc net.PacketConn) error {
	err := s.wt.Serve(pc)
	if errors.Is(err, quic.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Close ends every session and stops serving.
func (s *WebTransportServer) Close() error { return s.wt.Close() }

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
