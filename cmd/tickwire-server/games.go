package main

import (
	"fmt"
	"log/slog"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// newGame builds the handler of the embedded game named by -game.
func newGame(o *options, log *slog.Logger) (*gameHost, error) {
	switch o.game {
	case "arena":
		return newGameHost(o.game, o.tick, log, connectionsOnly{}), nil
	}
	return nil, fmt.Errorf("game %q is not embedded", o.game)
}

// connectionsOnly runs connections without a game: what the server does
// until the arena is wired to the tick engine.
type connectionsOnly struct{}

func (connectionsOnly) Connected(*tickwire.Conn)                            {}
func (connectionsOnly) Message(*tickwire.Conn, *tickwire.Message)           {}
func (connectionsOnly) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
