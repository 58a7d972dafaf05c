package game_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

// gameLog prints what happens to the game (on the client's loop: it
// must not block) and says when the game is ready to play.
type gameLog struct{ ready chan struct{} }

func (l gameLog) GameEvent(eng *sim.Client, e *game.Event) {
	switch e.Kind {
	case game.EventReady:
		fmt.Println("ready, predicting", len(eng.Players()), "player(s)")
		close(l.ready)
	case game.EventPlayerJoined:
		fmt.Println("player", e.Player, "joined")
	case game.EventPlayerLeft:
		fmt.Println("player", e.Player, "left:", e.Reason)
	case game.EventActionRejected:
		fmt.Println("rejected:", e.Reason) // e.Tick names the action
	case game.EventDisconnected:
		fmt.Println(e.Kind, e.Disconnect)
	}
}

// A game client that hears what happens to its game: its own join, the
// moment it can play, its end.
func ExampleClient_Handle() {
	key, _ := tickwire.GenerateKey()
	srv, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		log.Fatal(err)
	}
	host, err := game.NewHost(srv, func(uint64) (game.Game, error) { return arena.NewGame(4), nil }, game.Config{})
	if err != nil {
		log.Fatal(err)
	}
	srv.Handle(host)
	conn, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(conn)
	defer srv.Close()
	tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: 7, Players: []uint16{3},
		ServerAddrs: []string{conn.LocalAddr().String()}}, time.Now())

	idle := func(player uint16, tick uint32, dst []byte) []byte { return arena.AppendInput(dst, arena.Input{}) }
	gc, err := game.NewClient(arena.NewGame(0), idle, sim.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	events := gameLog{ready: make(chan struct{})}
	gc.Handle(events) // before Dial
	d := tickwire.Dialer{Game: gc}
	c, err := d.Dial(context.Background(), tok)
	if err != nil {
		log.Fatal(err)
	}
	<-events.ready
	c.Close()
	// Output:
	// player 3 joined
	// ready, predicting 1 player(s)
	// disconnected closed
}
