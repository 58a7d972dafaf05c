package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// joinRequest is the optional JSON body of POST /api/join.
type joinRequest struct {
	// Players is how many player slots the connection carries (1..4,
	// default 1): split-screen or several bots on one connection.
	Players int `json:"players,omitempty"`
}

// joinResponse is what POST /api/join answers.
type joinResponse struct {
	GameID   uint64    `json:"gameId,string"`
	Addr     string    `json:"addr"`
	Players  []uint16  `json:"players"`
	ClientID uint64    `json:"clientId,string"`
	Token    string    `json:"token"`
	Expires  time.Time `json:"expires"`
}

// joinHandler mints connect tokens for the server's default game: the
// way tools and bots get in without the lobby's ready flow.
type joinHandler struct {
	key  tickwire.Key
	o    *options
	game *gameHost
	log  *slog.Logger

	mu       sync.Mutex
	nextSlot uint16
}

const maxJoinBody = 1 << 10

func (j *joinHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJoinBody))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxJoinBody)
		return
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			httpError(w, http.StatusBadRequest, "malformed JSON: %v", err)
			return
		}
	}
	if req.Players == 0 {
		req.Players = 1
	}
	if req.Players < 1 || req.Players > proto.MaxPlayersPerConnection {
		httpError(w, http.StatusBadRequest, "players must be 1..%d, got %d", proto.MaxPlayersPerConnection, req.Players)
		return
	}
	slots, err := j.allocSlots(req.Players)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	var idb [8]byte
	rand.Read(idb[:])
	clientID := binary.LittleEndian.Uint64(idb[:]) | 1
	tok, err := tickwire.MintToken(j.key, tickwire.TokenParams{
		GameID:      j.o.gameID,
		ClientID:    clientID,
		Players:     slots,
		ServerAddrs: []string{j.o.publicAddr},
		TTL:         j.o.tokenTTL,
	}, time.Now())
	if err != nil {
		httpError(w, http.StatusInternalServerError, "mint token: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(joinResponse{
		GameID: j.o.gameID, Addr: j.o.publicAddr, Players: slots, ClientID: clientID,
		Token: tok.String(), Expires: tok.Expires,
	})
}

// maxSlot is the largest player slot: NetworkIDs hold the spawning slot
// in proto.SpawnerBits bits, and slot 0 is the server's.
const maxSlot = 1<<proto.SpawnerBits - 1

// allocSlots picks n player slots no open connection uses, round robin,
// refusing once the server holds -max-players players.
func (j *joinHandler) allocSlots(n int) ([]uint16, error) {
	used := map[uint16]bool{}
	j.game.srv.Do(func() {
		j.game.srv.Each(func(c *tickwire.Conn) {
			for _, p := range c.Players() {
				used[p] = true
			}
		})
	})
	if len(used)+n > j.o.maxPlayers {
		return nil, fmt.Errorf("server full: %d of %d players", len(used), j.o.maxPlayers)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var slots []uint16
	for tries := 0; len(slots) < n && tries < maxSlot; tries++ {
		j.nextSlot = j.nextSlot%maxSlot + 1
		if !used[j.nextSlot] {
			slots = append(slots, j.nextSlot)
			used[j.nextSlot] = true
		}
	}
	if len(slots) < n {
		return nil, errors.New("no free player slot")
	}
	return slots, nil
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}
