package lobby

import (
	"time"

	"github.com/tickwire/tickwire"
)

// Hosting says who runs a game: a game server ("server": "Steve is
// host") or one of its players ("peer": "Bob is host").
type Hosting string

// Hosting values.
const (
	ServerHosted Hosting = "server"
	PeerHosted   Hosting = "peer"
)

// TypeInfo describes a game type on the menu (GET /api/types).
type TypeInfo struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Description string    `json:"description,omitempty"`
	MinPlayers  int       `json:"minPlayers"`
	MaxPlayers  int       `json:"maxPlayers"`
	Hosting     []Hosting `json:"hosting"` // what create accepts; the first is the default
	Rooms       int       `json:"rooms"`   // open rooms
	Players     int       `json:"players"` // players in open rooms
}

// RoomInfo is the public state of an open room, as the pages, the API and
// every WebSocket "room" message show it.
type RoomInfo struct {
	ID         string       `json:"id"`
	Type       string       `json:"type"`
	Name       string       `json:"name"`
	Hosting    Hosting      `json:"hosting"`
	MinPlayers int          `json:"minPlayers"`
	MaxPlayers int          `json:"maxPlayers"`
	Players    []PlayerInfo `json:"players"` // in join order; slot i+1 at assignment
	Created    time.Time    `json:"created"`
}

// PlayerInfo is one player in a room.
type PlayerInfo struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// CanHost is set for a player of a peer-hosted room that offered a
	// UDP port; the first such player hosts the game.
	CanHost bool `json:"canHost,omitempty"`
}

// ChatLine is one chat message in a room.
type ChatLine struct {
	From string    `json:"from"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// CreateRequest is the body of POST /api/games/{type} and the fields of the
// WebSocket "create" op. The creator joins the new room as its first
// player.
type CreateRequest struct {
	Name       string  `json:"name"`                 // the game's name
	MaxPlayers int     `json:"maxPlayers,omitempty"` // zero: the type's MaxPlayers
	Hosting    Hosting `json:"hosting,omitempty"`    // empty: the type's default
	Player     string  `json:"player"`               // the creator's name
	// HostPort is the UDP port the creator's process listens on, offered
	// to host a peer-hosted game (see the package doc).
	HostPort uint16 `json:"hostPort,omitempty"`
}

// JoinRequest is the body of POST /api/rooms/{room}/join.
type JoinRequest struct {
	Player   string `json:"player"`
	HostPort uint16 `json:"hostPort,omitempty"`
}

// ReadyRequest is the body of POST /api/rooms/{room}/ready.
type ReadyRequest struct {
	Seat  string `json:"seat"`
	Ready bool   `json:"ready"`
	// HostPort, when not zero, offers (or changes) the UDP port this
	// player would host a peer-hosted game on.
	HostPort uint16 `json:"hostPort,omitempty"`
}

// SeatInfo answers a create or join: the seat id authenticates the
// player's later calls; keep it secret.
type SeatInfo struct {
	Seat   string   `json:"seat"`
	Player string   `json:"player"`
	Room   RoomInfo `json:"room"`
	// Rendezvous is set in a peer-hosted room when the lobby learns
	// players' NAT mappings (Config.Rendezvous).
	Rendezvous *RendezvousInfo `json:"rendezvous,omitempty"`
}

// Assignment is what each player of a started room receives: where to
// connect and the connect token to present. Every player of a game gets
// the same GameID, Host and Port and its own Slot, ClientID and Token.
type Assignment struct {
	GameID  uint64  `json:"gameId,string"` // a string in JSON: JavaScript numbers are 53-bit
	Type    string  `json:"type"`
	Room    string  `json:"room"`
	Hosting Hosting `json:"hosting"`
	// Host and Port split Addrs[0]: the game's first UDP address.
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Addrs []string `json:"addrs"`
	// Slot is this player's slot in the game, 1..len(Players).
	Slot     uint16                 `json:"slot"`
	ClientID uint64                 `json:"clientId,string"`
	Token    *tickwire.ConnectToken `json:"token"`
	Expires  time.Time              `json:"expires"`
	// Role is "host" for the player that hosts a peer-hosted game and
	// "player" for everyone else.
	Role string `json:"role"`
	// HostKey is set for the host of a peer-hosted game only: the hex
	// tickwire.Key (tickwire.ParseKey) that sealed every player's token,
	// which the host's game server must open them with.
	HostKey string           `json:"hostKey,omitempty"`
	Players []AssignedPlayer `json:"players"`
	// Relay, in a peer-hosted game with a relay (Config.Relay), is
	// this player's side of its allocation toward the host: the host's
	// HostRelay in Players (not set for the host: its sides are in
	// Players' Relay).
	Relay *RelayGrant `json:"relay,omitempty"`
}

// RelayGrant is one side of a relay allocation: the relay's control
// address and the grant that binds the side (package relay).
type RelayGrant struct {
	Addr  string `json:"addr"`
	Grant []byte `json:"grant"`
}

// RendezvousInfo tells a seated player of a peer-hosted room where to
// send its game sockets' mapping requests and with which ticket
// (package rendezvous): a secret, like the seat id.
type RendezvousInfo struct {
	Addr   string `json:"addr"`
	Ticket []byte `json:"ticket"`
}

// Roles in an Assignment.
const (
	RolePlayer = "player"
	RoleHost   = "host"
)

// AssignedPlayer is one player of an assigned game.
type AssignedPlayer struct {
	Name     string `json:"name"`
	Slot     uint16 `json:"slot"`
	ClientID uint64 `json:"-"` // only Config.OnAssigned sees other players' ids
	Host     bool   `json:"host,omitempty"`
	// HostAddr, in a peer-hosted game, is where the player's own game
	// server is reached when it offered a UDP port (it can take over the
	// game: host migration, docs/MIGRATION.md); empty otherwise.
	HostAddr string `json:"hostAddr,omitempty"`
	// ClientAddrs, in the assignment of a player who can host, when the
	// lobby learned the mappings (Config.Rendezvous), are the
	// candidates of this player's client socket: the host punches toward
	// them, at the start or promoted (host migration).
	ClientAddrs []string `json:"clientAddrs,omitempty"`
	// Relay and HostRelay are the assignment's player's sides of relay
	// allocations (Config.Relay) between this player and itself: Relay
	// its host side, on its host socket, for this player's client
	// socket, when it is the host or one of the first successors;
	// HostRelay its joiner side, on its client socket, toward this
	// player's host socket, when this player is. A successor and its
	// followers reach each other through them after a host migration.
	Relay     *RelayGrant `json:"relay,omitempty"`
	HostRelay *RelayGrant `json:"hostRelay,omitempty"`
}

// AssignmentStatus answers GET /api/rooms/{room}/assignment: Status is
// "assigned" with Assignment set, or "waiting" with the room's state.
type AssignmentStatus struct {
	Status     string      `json:"status"`
	Assignment *Assignment `json:"assignment,omitempty"`
	Room       *RoomInfo   `json:"room,omitempty"`
}

// GameTypeFromUserData returns the game type name the lobby writes into
// every token's UserData (NUL-padded), so a game server hosting several
// types knows which game to create for a new game id.
func GameTypeFromUserData(ud [32]byte) string {
	n := 0
	for n < len(ud) && ud[n] != 0 {
		n++
	}
	return string(ud[:n])
}

func userDataForType(name string) [32]byte { return UserDataForType(name) }

// UserDataForType is the token UserData naming game type name, as the
// lobby writes it (GameTypeFromUserData reads it back): a game server
// that mints its own tokens writes it too, so that a client can tell
// which game a token is for before it plays.
func UserDataForType(name string) (ud [32]byte) {
	copy(ud[:], name)
	return ud
}
