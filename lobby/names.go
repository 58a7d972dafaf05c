package lobby

import (
	"net/http"
	"slices"
	"strconv"
)

// The lobby remembers the names of the players of the server-hosted
// games it assigned, by slot, so that a game's page shows "Carol", not
// "P1": GET /api/play/{game}/players answers them (the game id is a
// random 64-bit number only its players were told). A "Play now" player
// who joins a running game adds its name. The lobby keeps the last
// maxNamedGames games.

// maxNamedGames bounds the games whose names the lobby keeps.
const maxNamedGames = 4096

// playerName is one player of an assigned game.
type playerName struct {
	Slot uint16 `json:"slot"`
	Name string `json:"name"`
}

// keepNames records a game's players' names; l.mu is held.
func (l *Lobby) keepNames(gameID uint64, players ...playerName) {
	if l.names == nil {
		l.names = map[uint64][]playerName{}
	}
	if _, ok := l.names[gameID]; !ok {
		l.namedGames = append(l.namedGames, gameID)
		if len(l.namedGames) > maxNamedGames {
			delete(l.names, l.namedGames[0])
			l.namedGames = slices.Delete(l.namedGames, 0, 1)
		}
	}
	l.names[gameID] = append(l.names[gameID], players...)
}

// apiPlayers is GET /api/play/{game}/players.
func (l *Lobby) apiPlayers(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("game"), 10, 64)
	l.mu.Lock()
	names := slices.Clone(l.names[id])
	l.unlock()
	if err != nil || names == nil {
		l.writeError(w, errorf(CodeUnknownGame, "this lobby assigned no game %q", r.PathValue("game")))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	l.writeJSON(w, http.StatusOK, struct {
		Players []playerName `json:"players"`
	}{names})
}
