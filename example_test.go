package tickwire_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// shout answers every message in capitals, reliably.
type shout struct{}

func (shout) Connected(c *tickwire.Conn) {}
func (shout) Message(c *tickwire.Conn, m *tickwire.Message) {
	b := make([]byte, len(m.Data))
	for i, ch := range m.Data {
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		b[i] = ch
	}
	c.Send(tickwire.Reliable, m.Channel, b)
}
func (shout) Disconnected(c *tickwire.Conn, r proto.DisconnectReason) {}

// A server with a handler, a token minted with its key (what a lobby
// does), and a client that dials with it and exchanges a message.
func Example() {
	key, err := tickwire.GenerateKey() // or tickwire.LoadOrCreateKey("server.key")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		log.Fatal(err)
	}
	srv.Handle(shout{})
	conn, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{}) // DSCP EF-marked
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(conn)
	defer srv.Close()

	tok, err := tickwire.MintToken(key, tickwire.TokenParams{
		GameID:      1,
		ClientID:    1001,
		Players:     []uint16{1, 2}, // one connection, two players (split-screen)
		ServerAddrs: []string{conn.LocalAddr().String()},
	}, time.Now())
	if err != nil {
		log.Fatal(err)
	}
	// tok.String() is what a lobby hands the client; ParseConnectToken reads it.

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tickwire.Dial(ctx, tok)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Send(tickwire.Reliable, 1, []byte("hello"))
	m, err := c.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("players %v, channel %d: %s\n", c.Players(), m.Channel, m.Data)
	// Output: players [1 2], channel 1: HELLO
}
