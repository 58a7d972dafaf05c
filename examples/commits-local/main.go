// Command commits-local is a networked commits-mode game in one
// process: a server (commits.Host) and two clients (commits.Client)
// over UDP on the loopback interface, with the public API only. Each
// client orders its dot around (game.go) for -duration; then both print
// the committed tick and the checksum of their committed world, which
// agree, and the server prints what its own committed world holds.
// Client 2 also orders a point outside the field once: the game refuses
// it on every client, and client 2 is told why.
//
// To make it a real game, keep game.go (your world and rules) and split
// the rest: the server part into the server's program, a client part
// into the player's, and get the connect token from your lobby.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

const gameID = 1

func main() {
	duration := flag.Duration("duration", 5*time.Second, "how long the clients play")
	flag.Parse()
	if err := run(*duration); err != nil {
		fmt.Fprintln(os.Stderr, "commits-local:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration) error {
	// The server: a Host runs the game too, as the authority.
	key, err := tickwire.GenerateKey()
	if err != nil {
		return err
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{TickRate: 30})
	if err != nil {
		return err
	}
	host, err := commits.NewHost(srv, func(uint64) (sim.CommitGame, error) { return &dots{}, nil }, commits.Config{})
	if err != nil {
		return err
	}
	srv.Handle(host)
	conn, err := udp.Listen("udp", "127.0.0.1:0", udp.Config{})
	if err != nil {
		return err
	}
	go srv.Serve(conn)
	defer srv.Close()

	// Two clients, each with its own world and player slot.
	clients := make([]*commits.Client, 2)
	for i := range clients {
		slot := uint16(i + 1)
		token, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: gameID, ClientID: uint64(slot),
			Players: []uint16{slot}, ServerAddrs: []string{conn.LocalAddr().String()}}, time.Now())
		if err != nil {
			return err
		}
		cc, err := commits.NewClient(&dots{}, commits.ClientConfig{
			Rejected: func(c *sim.Command, reason error) {
				fmt.Printf("client %d: the command of tick %d refused: %v\n", slot, c.Tick, reason)
			},
		})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = (&tickwire.Dialer{Game: cc}).Dial(ctx, token)
		cancel()
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[i] = cc
	}

	// Play: every 200 ms each client orders its dot somewhere. Issue
	// returns the tick the command runs at on every client. A command
	// issued before the client has the committed state fails: it tries
	// again next time.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last uint32 // the latest tick a command was issued for
	)
	for i, cc := range clients {
		slot := uint16(i + 1)
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(slot), 0))
			for n := 0; time.Duration(n)*200*time.Millisecond < duration; n++ {
				time.Sleep(200 * time.Millisecond)
				order := command(r.IntN(field), r.IntN(field))
				if slot == 2 && n == 1 {
					order = command(field+1, 0) // outside: refused
				}
				if tick, err := cc.Issue(slot, order); err == nil {
					mu.Lock()
					last = max(last, tick)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	// A command is final once its tick is committed: wait for that on
	// both clients, then compare their committed worlds at the newest
	// tick both have.
	if last == 0 {
		return fmt.Errorf("no command issued in %v", duration)
	}
	tick := uint32(0)
	for deadline := time.Now().Add(5 * time.Second); tick < last; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("tick %d not committed within 5 s", last)
		}
		tick = min(clients[0].Stats().Committed, clients[1].Stats().Committed)
	}
	sums := make([]uint64, len(clients))
	for i, cc := range clients {
		ok := false
		cc.Do(func(ls *sim.Lockstep) { sums[i], ok = ls.CommittedSum(tick) })
		if !ok {
			return fmt.Errorf("client %d has no checksum of tick %d", i+1, tick)
		}
		fmt.Printf("client %d: committed tick %d, checksum %016x\n", i+1, tick, sums[i])
	}

	// The server reads its own committed world, on its loop.
	srv.Do(func() {
		host.Committed(gameID, func(w sim.CommitGame, at uint32) {
			for _, d := range w.(*dots).dots {
				fmt.Printf("server: committed tick %d, player %d's dot at (%d, %d)\n", at, d.player, d.x, d.y)
			}
		})
	})

	if sums[0] != sums[1] {
		return fmt.Errorf("the clients' committed worlds differ at tick %d", tick)
	}
	fmt.Println("the clients agree")
	return nil
}
