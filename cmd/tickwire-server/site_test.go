package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tickwire/tickwire/lobby"
)

// hangUp reads c until the server closes it and returns what it read; it
// fails the test if the server keeps c open for patience.
func hangUp(t *testing.T, c net.Conn, patience time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %v; read %q", patience, b)
	}
	return string(b)
}

func dialTCP(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowClientsCutOff: a request body that stops after one byte is cut
// off by ReadTimeout, a connection that sends nothing by
// ReadHeaderTimeout, and an idle keep-alive connection by IdleTimeout.
func TestSlowClientsCutOff(t *testing.T) {
	const limit = 300 * time.Millisecond
	s := startServer(t, func(o *options) {
		o.httpLimits.readHeader, o.httpLimits.read, o.httpLimits.idle = limit, limit, limit
	})

	// The server's deadlines start when it accepts, after the dial
	// began: time each case from there.
	dialed := time.Now()
	slow := dialTCP(t, s.http)
	io.WriteString(slow, "POST /api/games/arena HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	answer := hangUp(t, slow, 10*limit)
	if took := time.Since(dialed); took < limit || !strings.HasPrefix(answer, "HTTP/1.1 400") || !strings.Contains(answer, `"code":"bad_request"`) {
		t.Errorf("slow body: after %v the server said %q; want a 400 after %v", time.Since(dialed), answer, limit)
	}

	dialed = time.Now()
	mute := dialTCP(t, s.http)
	if answer := hangUp(t, mute, 10*limit); answer != "" || time.Since(dialed) < limit {
		t.Errorf("silent connection: closed after %v with %q", time.Since(dialed), answer)
	}

	idle := dialTCP(t, s.http)
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if answer := hangUp(t, idle, 10*limit); !strings.HasPrefix(answer, "HTTP/1.1 200") {
		t.Errorf("keep-alive connection: %q", answer)
	}
}

// TestConnsPerAddr: a client address holds at most max connections; the
// next is closed on accept and its place is free again once one closes.
// Exempt addresses (trusted proxies) are not counted.
func TestConnsPerAddr(t *testing.T) {
	for _, exempt := range []bool{false, true} {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln := limitPerAddr(inner, 2, func(netip.Addr) bool { return exempt })
		defer ln.Close()
		accepted := make(chan net.Conn)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}
		}()
		var server []net.Conn
		for range 2 {
			dialTCP(t, ln.Addr())
			server = append(server, <-accepted)
		}
		third := dialTCP(t, ln.Addr())
		if exempt {
			<-accepted // a trusted proxy's third connection is served
			continue
		}
		if answer := hangUp(t, third, 5*time.Second); answer != "" {
			t.Fatalf("third connection got %q", answer)
		}
		server[0].Close()
		dialTCP(t, ln.Addr())
		select {
		case <-accepted:
		case <-time.After(5 * time.Second):
			t.Fatal("no connection accepted after one of two closed")
		}
	}
}

// TestLongPathsOutliveTimeouts: with every timeout shorter than the wait,
// a lobby long-poll still answers and a lobby WebSocket still carries
// messages (the poll extends its write deadline; the socket is hijacked).
func TestLongPathsOutliveTimeouts(t *testing.T) {
	const limit = 200 * time.Millisecond
	s := startServer(t, func(o *options) {
		o.httpLimits.readHeader, o.httpLimits.read, o.httpLimits.write, o.httpLimits.idle = limit, limit, limit, limit
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.http.String()+"/games/arena/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err != nil { // the room list
		t.Fatal(err)
	}
	seat, err := (&lobby.Client{BaseURL: s.base}).Create(ctx, "arena", lobby.CreateRequest{Name: "g", Player: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := seat.Poll(ctx, 3*limit)
	if err != nil || st.Status != "waiting" || time.Since(start) < 3*limit {
		t.Fatalf("long-poll: %+v, %v after %v", st, err, time.Since(start))
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"op":"join","room":"`+seat.Room.ID+`","player":"Alice"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("socket after %v: %v", time.Since(start), err)
		}
		if strings.Contains(string(b), `"type":"joined"`) {
			break
		}
	}
}
