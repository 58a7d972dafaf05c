package main

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/addrlimit"
	"github.com/tickwire/tickwire/lobby"
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
// way tools and bots get in without the lobby's ready flow. It is a
// development switch (-dev-join): it mints a token for anyone it lets
// through, so it is on loopback only or behind a bearer secret, and each
// client address gets -join-burst tokens at once, then -join-rate a
// second. The server wraps it in the lobby's cross-origin protection.
type joinHandler struct {
	key    tickwire.Key
	o      *options
	game   *gameHost
	log    *slog.Logger
	client func(*http.Request) netip.Addr // the lobby's Lobby.ClientAddr

	secret  *[sha256.Size]byte // the bearer secret's hash; nil: none needed
	buckets addrBuckets

	mu       sync.Mutex
	nextSlot uint16
}

func newJoinHandler(key tickwire.Key, o *options, game *gameHost, log *slog.Logger, client func(*http.Request) netip.Addr) *joinHandler {
	j := &joinHandler{key: key, o: o, game: game, log: log, client: client,
		buckets: newAddrBuckets(rate.Limit(o.joinRate), o.joinBurst, o.now)}
	if o.joinSecret != "" {
		h := sha256.Sum256([]byte(o.joinSecret))
		j.secret = &h
	}
	return j
}

// Error codes of POST /api/join beyond the lobby's.
const (
	codeUnauthorized = "unauthorized" // no or a wrong bearer secret
	codeServerFull   = "server_full"  // every player slot is taken
	codeJoinOff      = "dev_join_off" // the server runs without -dev-join
)

// joinOff answers POST /api/join when -dev-join is off.
func joinOff(w http.ResponseWriter, r *http.Request) {
	httpError(w, http.StatusNotFound, codeJoinOff,
		"POST /api/join is off: it is a development switch (tickwire-server -dev-join); players get tokens from the lobby")
}

const maxJoinBody = 1 << 10

func (j *joinHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if j.buckets.refuse(w, j.client(r)) {
		return
	}
	if !j.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tickwire-server"`)
		httpError(w, http.StatusUnauthorized, codeUnauthorized, "POST /api/join needs the server's -join-secret: Authorization: Bearer <secret>")
		return
	}
	var req joinRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJoinBody))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, lobby.CodeMessageTooLarge, "body larger than %d bytes", maxJoinBody)
		return
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			httpError(w, http.StatusBadRequest, lobby.CodeBadJSON, "malformed JSON: %v", err)
			return
		}
	}
	if req.Players == 0 {
		req.Players = 1
	}
	if req.Players < 1 || req.Players > proto.MaxPlayersPerConnection {
		httpError(w, http.StatusBadRequest, lobby.CodeBadRequest, "players must be 1..%d, got %d", proto.MaxPlayersPerConnection, req.Players)
		return
	}
	slots, err := j.allocSlots(req.Players)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeServerFull, "%v", err)
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
		UserData:    lobby.UserDataForType(j.o.game),
	}, time.Now())
	if err != nil {
		httpError(w, http.StatusInternalServerError, lobby.CodeAssignFailed, "mint token: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(joinResponse{
		GameID: j.o.gameID, Addr: j.o.publicAddr, Players: slots, ClientID: clientID,
		Token: tok.String(), Expires: tok.Expires,
	})
}

// authorized reports whether r carries the bearer secret, when one is
// needed. The hashes are compared in constant time.
func (j *joinHandler) authorized(r *http.Request) bool {
	if j.secret == nil {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h := sha256.Sum256([]byte(got))
	return ok && subtle.ConstantTimeCompare(h[:], j.secret[:]) == 1
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
		return nil, fmt.Errorf("server full: %d of %d players (tickwire-server -max-players raises the limit)", len(used), j.o.maxPlayers)
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

// httpError answers with status and a JSON error in the lobby's format.
func httpError(w http.ResponseWriter, status int, code, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(&lobby.Error{Code: code, Message: fmt.Sprintf(format, args...)})
}

// addrBuckets is a token bucket per client address, on the server's
// clock.
type addrBuckets struct {
	*addrlimit.Buckets
	now func() time.Time
}

func newAddrBuckets(limit rate.Limit, burst int, now func() time.Time) addrBuckets {
	return addrBuckets{addrlimit.NewBuckets(limit, burst, addrlimit.DefaultMaxKeys), now}
}

// refuse spends a token of a's bucket, or answers 429 with Retry-After
// and returns true.
func (b addrBuckets) refuse(w http.ResponseWriter, a netip.Addr) bool {
	wait := b.Take(b.now(), addrlimit.KeyOf(a))
	if wait <= 0 {
		return false
	}
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	httpError(w, http.StatusTooManyRequests, lobby.CodeRateLimited, "too many tokens asked for from your address: wait %d s", secs)
	return true
}
