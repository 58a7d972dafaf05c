package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/sim"
)

// demoSpectators is how many spectator slots the demo game cycles
// through (arena.FirstSpectator up to proto.MaxSpawner).
const demoSpectators = 96

// demo is -demo: bots playing one arena game on this server, and
// spectator tokens for it (POST /play/spectate) so that a visitor of
// /play watches the engine at work without joining.
type demo struct {
	key     tickwire.Key
	addr    string // the server's address in the tokens
	gameID  uint64
	bots    int
	log     *slog.Logger
	buckets addrBuckets
	next    atomic.Uint32 // the next spectator slot, modulo demoSpectators
}

func newDemo(o *options, key tickwire.Key, log *slog.Logger) *demo {
	return &demo{
		key: key, addr: o.publicAddr, gameID: rand.Uint64() | 1, bots: o.demo, log: log,
		// a spectator token per second per address, 10 at once
		buckets: newAddrBuckets(rate.Limit(1), 10, o.now),
	}
}

// run plays the bots until ctx ends, each reconnecting when its session
// ends.
func (d *demo) run(ctx context.Context) {
	for i := range d.bots {
		go func() {
			for ctx.Err() == nil {
				if err := d.play(ctx, uint16(i+1)); err != nil && ctx.Err() == nil {
					d.log.Warn("demo bot", "slot", i+1, "err", err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
}

// play connects one bot in slot and plays until the session or ctx ends.
func (d *demo) play(ctx context.Context, slot uint16) error {
	tok, err := d.token(slot)
	if err != nil {
		return err
	}
	b := &demoBot{r: rand.New(rand.NewPCG(uint64(slot), d.gameID))}
	gc, err := game.NewClient(arena.NewGame(0), b.input, sim.ClientConfig{Headless: true})
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := (&tickwire.Dialer{Game: gc}).Dial(dctx, tok)
	if err != nil {
		return err
	}
	defer c.Close()
	select {
	case <-c.Done():
		return c.Err()
	case <-ctx.Done():
		return nil
	}
}

// token mints a token for the demo game in slot.
func (d *demo) token(slot uint16) (*tickwire.ConnectToken, error) {
	return tickwire.MintToken(d.key, tickwire.TokenParams{
		GameID: d.gameID, ClientID: rand.Uint64(), Players: []uint16{slot}, ServerAddrs: []string{d.addr},
	}, time.Now())
}

// spectate is POST /play/spectate: a token to watch the demo game, in a
// spectator slot (no avatar; its inputs do nothing), rate-limited per
// address.
func (d *demo) spectate(client func(*http.Request) netip.Addr) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.buckets.refuse(w, client(r)) {
			return
		}
		slot := arena.FirstSpectator + uint16(d.next.Add(1)%demoSpectators)
		tok, err := d.token(slot)
		if err != nil {
			httpError(w, http.StatusInternalServerError, "internal", "%v", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(struct {
			Token string `json:"token"`
		}{tok.String()})
	})
}

// demoBot wanders: a heading held for a second or two, the aim sweeping,
// a hitscan shot or a projectile now and then.
type demoBot struct {
	r     *rand.Rand
	in    arena.Input
	until uint32
}

// input is the bot's game.InputFunc (on the client's loop).
func (b *demoBot) input(_ uint16, tick uint32, dst []byte) []byte {
	if int32(tick-b.until) >= 0 {
		b.in.MoveX = int8(b.r.IntN(255) - 127)
		b.in.MoveY = int8(b.r.IntN(255) - 127)
		b.until = tick + 60 + uint32(b.r.IntN(60))
	}
	b.in.Aim += 300
	b.in.Buttons = 0
	switch b.r.IntN(40) {
	case 0:
		b.in.Buttons = arena.FireRay
	case 1:
		b.in.Buttons = arena.FireProjectile
	}
	return arena.AppendInput(dst, b.in)
}
