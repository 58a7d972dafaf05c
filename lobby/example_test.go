package lobby_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
)

// Two bots play seed 002's flow through the JSON API: Bob creates a game,
// Alice joins, both ready, and each gets a connect token for the same game
// on the game server. This is how a test gets assignments to connect real
// clients over UDP with.
func Example() {
	key, err := tickwire.GenerateKey() // the game server's key
	if err != nil {
		log.Fatal(err)
	}
	lb, err := lobby.New(lobby.Config{
		Servers: []lobby.GameServer{{Addrs: []string{"127.0.0.1:7777"}, Key: key}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer lb.Close()
	srv := httptest.NewServer(lb)
	defer srv.Close()

	ctx := context.Background()
	c := &lobby.Client{BaseURL: srv.URL}
	bob, err := c.Create(ctx, "demo", lobby.CreateRequest{Name: "Bob's game", Player: "Bob", MaxPlayers: 2})
	if err != nil {
		log.Fatal(err)
	}
	alice, err := c.Join(ctx, bob.Room.ID, lobby.JoinRequest{Player: "Alice"})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range []*lobby.Seat{alice, bob} {
		if err := s.Ready(ctx); err != nil {
			log.Fatal(err)
		}
	}
	var as []*lobby.Assignment
	for _, s := range []*lobby.Seat{bob, alice} {
		a, err := s.Assignment(ctx)
		if err != nil {
			log.Fatal(err)
		}
		as = append(as, a)
		// a.Token is a *tickwire.ConnectToken: dial a.Addrs with it.
		fmt.Printf("%s: slot %d at %s:%d, token for %v\n", s.Player, a.Slot, a.Host, a.Port, a.Token.ServerAddrs)
	}
	fmt.Println("same game:", as[0].GameID == as[1].GameID && as[0].Token.GameID == as[0].GameID)
	// Output:
	// Bob: slot 1 at 127.0.0.1:7777, token for [127.0.0.1:7777]
	// Alice: slot 2 at 127.0.0.1:7777, token for [127.0.0.1:7777]
	// same game: true
}
