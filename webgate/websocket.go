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
		// A message is a datagram: one larger is no tickwire packet, and
		// the read fails (closing the socket) rather than buffer it.
		ws.SetReadLimit(proto.MaxPacketSizeLimit)
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

// readWebSocket hands every binary message to the link until the socket
// or the link closes. A text message ends the connection: it is no
// tickwire client.
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
