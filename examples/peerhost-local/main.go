// Command peerhost-local runs a peer-hosted game without a lobby: a few
// players of the game of tag in one process, each offering its own UDP
// socket to host, the first one hosting. After a while the host's player
// quits: its host hands the game to its successor, which the others
// follow, and they play on. It prints what each player sees.
//
//	go run ./examples/peerhost-local -players 3 -play 3s
//
// Everything it does is the public API a game's own program would use:
// a key for the game (the lobby would draw it), a game.Client per player,
// a peerhost.Player that can host it on its socket, Host on the first,
// and a connect token per player (the lobby would mint them). Run the
// players in several processes instead by giving each the key, the
// sockets' addresses and its own token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/tag"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/peerhost"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "peerhost-local:", err)
		os.Exit(1)
	}
}

// gameID names the game in the tokens.
const gameID = 1

// printer writes whole lines from any goroutine.
type printer struct {
	mu  sync.Mutex
	out io.Writer
}

func (p *printer) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format+"\n", args...)
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("peerhost-local", flag.ContinueOnError)
	n := fs.Int("players", 3, "players in the game (2–4: tag's field)")
	play := fs.Duration("play", 3*time.Second, "how long they play before the host quits, and after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 2 || *n > 4 {
		return fmt.Errorf("-players %d: tag has 2 to 4 players", *n)
	}
	pr := &printer{out: out}

	// The game's key: the host's server opens the players' tokens with it.
	key, err := tickwire.GenerateKey()
	if err != nil {
		return err
	}
	// Every player can host: its own socket, bound for the whole game,
	// where the others reach it if it takes over.
	candidates := map[uint16]string{}
	socks := make([]udp.BatchConn, *n)
	for i := range socks {
		if socks[i], err = udp.Listen("udp4", "127.0.0.1:0", udp.Config{}); err != nil {
			return err
		}
		candidates[uint16(i+1)] = socks[i].LocalAddr().String()
	}
	back := make(chan uint16, *n) // a player plays on a new host
	players := make([]*peerhost.Player, *n)
	games := make([]*game.Client, *n)
	for i := range players {
		slot := uint16(i + 1)
		if games[i], err = game.NewClient(tag.New(), run8(slot), sim.ClientConfig{}); err != nil {
			return err
		}
		players[i], err = peerhost.NewPlayer(peerhost.Config{
			Game:     games[i],
			Factory:  func(uint64) (game.Game, error) { return tag.New(), nil },
			HostConn: socks[i],
			HostAddr: candidates[slot],
			OnEvent: func(e peerhost.Event) {
				line := fmt.Sprintf("player %d: %v (epoch %d, slot %d)", slot, e.Kind, e.Epoch, e.Slot)
				if e.Text != "" {
					line += " " + e.Text
				}
				pr.say("%s", line)
				if e.Kind == peerhost.EventResumed || e.Kind == peerhost.EventPromoted {
					back <- slot
				}
			},
		})
		if err != nil {
			return err
		}
	}

	// Player 1 hosts: it runs the game's server on its socket.
	if err := players[0].Host(gameID, key, 1, candidates, [proto.UserDataSize]byte{}); err != nil {
		return err
	}
	// Every player joins it with its own token. The client ids are
	// random, as a lobby's: the succession follows them.
	for i, p := range players {
		tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: gameID, ClientID: rand.Uint64() | 1,
			Players: []uint16{uint16(i + 1)}, ServerAddrs: []string{candidates[1]}}, time.Now())
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = p.Join(ctx, tok)
		cancel()
		if err != nil {
			return fmt.Errorf("player %d joins: %w", i+1, err)
		}
	}
	defer func() {
		// The players leave, the host's last: nobody is left to hand
		// the game to.
		for _, p := range players {
			if !p.Stats().Hosting {
				p.Close()
			}
		}
		for _, p := range players {
			p.Close()
		}
	}()
	pr.say("%d players on player 1's host", *n)
	time.Sleep(*play)
	report(pr, 1, players, games)

	// The host's player quits: Close hands the game over.
	pr.say("player 1 quits")
	quit := time.Now()
	if err := players[0].Close(); err != nil {
		return err
	}
	deadline := time.After(10 * time.Second)
	for range *n - 1 {
		select {
		case <-back:
		case <-deadline:
			return errors.New("the others were not playing again within 10 s")
		}
	}
	pr.say("the others play on, %v after player 1 quit", time.Since(quit).Round(time.Millisecond))
	time.Sleep(*play)
	return report(pr, 2, players[1:], games[1:])
}

// report prints each player's epoch and its game's checksums (the
// first of players has slot first), and fails on a desync.
func report(pr *printer, first uint16, players []*peerhost.Player, games []*game.Client) error {
	var err error
	for i, p := range players {
		slot := first + uint16(i)
		st, gs := p.Stats(), games[i].Stats()
		pr.say("player %d: epoch %d, hosting %v, %d checksums agreed, %d desyncs", slot, st.Epoch, st.Hosting, gs.ChecksumsOK, gs.Desyncs)
		if gs.Desyncs != 0 {
			err = fmt.Errorf("player %d desynced", slot)
		}
	}
	return err
}

// run8 moves player slot's runner around the field: a new direction of
// eight every second.
func run8(slot uint16) game.InputFunc {
	dirs := [8][2]int8{{127, 0}, {90, 90}, {0, 127}, {-90, 90}, {-127, 0}, {-90, -90}, {0, -127}, {90, -90}}
	return func(player uint16, tick uint32, dst []byte) []byte {
		d := dirs[(tick/60+uint32(slot)*3)%8]
		return append(dst, byte(d[0]), byte(d[1]))
	}
}
