package main

import (
	"testing"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
)

// TestCheckGame: a bot refuses a token for another game than it plays,
// except a commits relay's, which runs any commits-mode game (swarm).
func TestCheckGame(t *testing.T) {
	for _, c := range []struct {
		server, bot string
		ok          bool
	}{
		{"arena", "arena", true},
		{"swarm", "swarm", true},
		{"", "arena", true}, // a token that names no game
		{"relay", "swarm", true},
		{"relay", "arena", false},
		{"swarm", "arena", false},
		{"arena", "swarm", false},
	} {
		tok := &tickwire.ConnectToken{UserData: lobby.UserDataForType(c.server)}
		if err := checkGame(tok, &options{game: c.bot}); (err == nil) != c.ok {
			t.Errorf("a %s bot on a %s server: %v, want ok %v", c.bot, c.server, err, c.ok)
		}
	}
}
