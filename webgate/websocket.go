package webgate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"

	"github.com/coder/websocket"

	"github.com/tickwire/tickwire/proto"
)

// WebSocketHandler serves browser links over WebSocket: each binary
// message either way is one tickwire datagram. clientAddr names the
// browser's address for the per-address limit (the lobby's
// Lobby.ClientAddr, which knows trusted proxies); nil takes the
// connection's remote address. A connection over a limit is answered
// 429 before the upgrade. The Origin must be the page's own host
// (coder/websocket's default check).
func (c *Conn) WebSocketHandler(clientAddr func(*http.Request) netip.Addr) http.Handler {
	if clientAddr == nil {
		clientAddr = remoteAddr
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, err := c.Open(WebSocket, clientAddr(r))
		if err != nil {
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		}
		defer l.Close()
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return // Accept answered the request
		}
		defer ws.CloseNow()
		// A message is a datagram: one larger is no tickwire packet.
		// readWebSocket closes the socket with 1009 as soon as a message
		// passes MaxPacketSizeLimit; the library's own limit (which lets
		// one byte more through, and answers a message read only in part
		// with a protocol error) stays as a backstop.
		ws.SetReadLimit(proto.MaxPacketSizeLimit + 1)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			err := l.Send(ctx, func(b []byte) error { return ws.Write(ctx, websocket.MessageBinary, b) })
			if err != nil && ctx.Err() == nil {
				c.cfg.Logger.Debug("webgate: websocket write", "link", l.addr, "err", err)
			}
			l.Close()
			cancel()
		}()
		if err := readWebSocket(ctx, ws, l); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("webgate: websocket read", "link", l.addr, "err", err)
		}
		ws.Close(websocket.StatusNormalClosure, "")
	})
}

// ErrMessageTooBig is returned by a WebSocket link's read when a message
// is longer than the largest tickwire packet; the socket is closed with
// status 1009 (message too big).
var ErrMessageTooBig = errors.New("webgate: websocket message over the largest packet")

// readWebSocket hands every binary message to the link until the socket
// or the link closes. A text message ends the connection: it is no
// tickwire client. A message over MaxPacketSizeLimit closes it with
// 1009, however large, after reading one byte past the limit.
func readWebSocket(ctx context.Context, ws *websocket.Conn, l *Link) error {
	var buf [proto.MaxPacketSizeLimit + 1]byte
	go func() {
		select {
		case <-l.Done():
			ws.CloseNow()
		case <-ctx.Done():
		}
	}()
	for {
		typ, r, err := ws.Reader(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageBinary {
			l.c.stats[WebSocket].malformed.Add(1)
			return ErrTextMessage
		}
		n, err := io.ReadFull(r, buf[:])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return err
		}
		if n > proto.MaxPacketSizeLimit {
			l.c.stats[WebSocket].malformed.Add(1)
			// Close waits for the browser's close frame (at most 5 s),
			// reading and discarding the rest of the message.
			ws.Close(websocket.StatusMessageTooBig, "message over 1472 bytes")
			return ErrMessageTooBig
		}
		if err := l.Deliver(buf[:n]); errors.Is(err, ErrLinkClosed) {
			return nil
		}
	}
}

// remoteAddr is the request's remote address.
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
