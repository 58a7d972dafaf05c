package lobby

import (
	"cmp"
	"time"

	"github.com/coder/websocket"
	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/addrlimit"
	"github.com/tickwire/tickwire/proto"
)

// "Play now" (op "quick") seats a player in a game at once. It picks, in
// this order:
//
//  1. the running server-hosted game "Play now" started for the type
//     that has the most players and still a free seat: the player gets a
//     token for it at once (the next free slot);
//  2. an open room "Play now" created that has a free seat (its game is
//     being placed): the player joins it, ready;
//  3. a new room of the type's maximum size, ready, which starts at once.
//
// Rooms created from the lobby page's form are not joined: their players
// wait for each other, and "Play now" means playing now. A running game's
// players are those the game server's Stats (Config.Stats) shows
// connected plus the tokens handed out within the token lifetime that
// have not connected yet; without Stats, every token handed out counts.
// A game that Stats no longer shows and that has no such token left has
// ended and is forgotten.

// quickGame is a running game "Play now" started.
type quickGame struct {
	id     uint64
	typ    *gameType
	key    tickwire.Key
	server string
	addrs  []string // the game server's addresses (completeAddrs per player)
	max    int
	last   uint16    // the last slot handed out
	handed []handout // recent tokens: not connected yet, or connected
	start  time.Time // when the game was assigned
}

// handout is one token a quickGame handed out.
type handout struct {
	slot uint16
	at   time.Time
}

// quickPlayers counts q's players, given the game server's stats (nil:
// none), pruning tokens past their lifetime; gone is true for a game
// that ended.
func (l *Lobby) quickPlayers(q *quickGame, live *ServerStats, now time.Time) (n int, gone bool) {
	ttl := cmp.Or(l.cfg.TokenTTL, tickwire.DefaultTokenTTL)
	if live == nil {
		return int(q.last), false
	}
	kept := q.handed[:0]
	for _, h := range q.handed {
		if now.Sub(h.at) <= ttl {
			kept = append(kept, h)
		}
	}
	q.handed = kept
	slots := map[uint16]bool{}
	for _, h := range q.handed {
		slots[h.slot] = true
	}
	running := false
	for _, g := range live.Games {
		if g.ID != q.id {
			continue
		}
		running = true
		for _, c := range g.Connections {
			for _, p := range c.Players {
				slots[p] = true
			}
		}
	}
	return len(slots), !running && len(q.handed) == 0
}

// maxQuickSlot is the largest slot a quickGame hands out: entity ids hold
// the spawning slot in proto.SpawnerBits bits, and slot 0 is the server's.
const maxQuickSlot = 1<<proto.SpawnerBits - 1

// quick runs "Play now" for the socket's player; l.mu is held. live is
// the game server's stats, read before the lock (nil: none).
func (l *Lobby) quick(s *socket, player string, o origin, live *ServerStats) *Error {
	if s.closed {
		return nil
	}
	if err := l.checkOpen(); err != nil {
		return err
	}
	if err := l.checkFree(o); err != nil {
		return err
	}
	name, err := l.cleanName("your name", player)
	if err != nil {
		return err
	}
	t := s.typ
	now := time.Now()
	var best *quickGame
	bestN := 0
	kept := t.quick[:0]
	for _, q := range t.quick {
		n, gone := l.quickPlayers(q, live, now)
		if gone {
			continue
		}
		kept = append(kept, q)
		if n < q.max && int(q.last) < maxQuickSlot && (best == nil || n > bestN) {
			best, bestN = q, n
		}
	}
	clear(t.quick[len(kept):])
	t.quick = kept
	if best != nil {
		if err := l.take(l.joinRate, addrlimit.KeyOf(o.remote), "joins"); err != nil {
			return err
		}
		return l.quickJoin(s, best, name, o, now)
	}
	for _, r := range t.rooms {
		if r.quick && len(r.players) < r.maxPlayers {
			seat, err := l.join(r.id, JoinRequest{Player: name}, o)
			if err != nil {
				return err
			}
			return l.setReady(seat, "", true, 0)
		}
	}
	seat, e := l.create(t.Name, CreateRequest{Name: name + "'s game", Hosting: ServerHosted, Player: name}, o)
	if e != nil {
		return e
	}
	seat.room.quick = true
	return l.setReady(seat, "", true, 0)
}

// quickJoin hands the socket's player a token for q, in the next slot.
func (l *Lobby) quickJoin(s *socket, q *quickGame, name string, o origin, now time.Time) *Error {
	q.last++
	slot := q.last
	p := AssignedPlayer{Name: name, Slot: slot, ClientID: randomID()}
	addrs := completeAddrs(q.addrs, o.host)
	tok, err := tickwire.MintToken(q.key, tickwire.TokenParams{
		GameID: q.id, ClientID: p.ClientID, Players: []uint16{slot},
		ServerAddrs: addrs, TTL: l.cfg.TokenTTL, UserData: userDataForType(q.typ.Name),
	}, now)
	if err != nil {
		return errorf(CodeAssignFailed, "cannot mint a connect token: %v", err)
	}
	q.handed = append(q.handed, handout{slot: slot, at: now})
	l.keepNames(q.id, playerName{Slot: slot, Name: name})
	a := &Assignment{
		GameID: q.id, Type: q.typ.Name, Hosting: ServerHosted, Addrs: addrs, Slot: slot,
		ClientID: p.ClientID, Token: tok, Expires: tok.Expires, Role: RolePlayer, Players: []AssignedPlayer{p},
	}
	a.Host, a.Port = splitAddr(addrs[0])
	s.sendJSON(wsAssigned{Type: "assigned", Assignment: a})
	s.closeAfterSend(websocket.StatusNormalClosure, "assigned")
	delete(q.typ.watchers, s)
	l.cfg.Logger.Info("lobby: player joined a running game", "game", q.id, "type", q.typ.Name, "server", q.server, "slot", slot)
	return nil
}

// keepQuick remembers a game "Play now" started, so that later "Play
// now" players of its type join it.
func (l *Lobby) keepQuick(r *room, gameID uint64, p placement, slots int) {
	r.typ.quick = append(r.typ.quick, &quickGame{
		id: gameID, typ: r.typ, key: p.key, server: p.server, addrs: p.addrs,
		max: r.maxPlayers, last: uint16(slots), start: time.Now(),
		handed: make([]handout, 0, slots),
	})
	q := r.typ.quick[len(r.typ.quick)-1]
	for i := range slots {
		q.handed = append(q.handed, handout{slot: uint16(i + 1), at: q.start})
	}
}
