// Package lobby is how players find each other: the HTTP game menu and
// lobby pages, the WebSocket ready flow, game assignment (game id, host,
// port, connect token), a JSON API for bots and tools, and, on a separate
// operator handler, the live dashboard. It never touches the game's UDP
// traffic: it only mints the connect tokens (tickwire.MintToken) that the
// game server opens.
//
// # Where it sits
//
// The flow, with Steve the server and Alice and Bob players:
//
//	browser/bot --HTTP, WebSocket--> lobby --token--> player --UDP--> game server (Steve, or Bob)
//
// Bob opens the menu (GET /), picks a game type (GET /games/demo), creates
// a game; Alice does the same and joins it. Both mark themselves ready over
// their WebSockets, and each change reaches the other at once. When all
// players are ready and there are at least the type's MinPlayers, the
// lobby assigns the game: a fresh random 64-bit game id, a game server
// (round robin over those that run the type) or, for a peer-hosted game,
// the player that hosts, and one connect token per player with its own
// client id and player slot (1..N in join order). Each player gets its
// Assignment over its socket, then the lobby closes the socket with status
// 1000 "assigned". The game server needs no call: it creates a game the
// first time a valid token names its id. Every token's UserData holds the
// game type's name (GameTypeFromUserData).
//
// With Config.PlayURL (tickwire-server's /play) the pages end in play:
// on its assignment a player of a server-hosted game keeps its token in
// the tab's sessionStorage ("tickwire.token") and the page opens PlayURL;
// and the menu's "Play now in the browser" (/games/{type}?quick=1) picks
// a name if there is none and sends "quick": the lobby puts the player in
// the running game "Play now" started for the type that has the most
// players and a free seat (a token for the next slot at once), else in
// an open "Play now" room, else starts a new one — one click from the
// menu to the game, and everyone who clicks it plays together until the
// game is full. Rooms created from the form are never joined by it.
//
// # Mounting
//
// One process by default: the game server serves the lobby on its -http
// address and the operator pages on its -admin address, with the server's
// key and UDP address:
//
//	key, _, err := tickwire.LoadOrCreateKey("server.key")
//	lb, err := lobby.New(lobby.Config{
//		Servers: []lobby.GameServer{{Addrs: []string{":7777"}, Key: key}}, // host filled per player
//		Stats:   server,   // implements lobby.StatsSource
//		Registerer: reg,   // the server's *prometheus.Registry, served at /metrics
//	})
//	public := http.NewServeMux()
//	public.Handle("/", lb)            // players: pages, sockets, API
//	admin := http.NewServeMux()
//	admin.Handle("/", lb.Admin())     // operators only: dashboard, stats, /metrics
//	defer lb.Close()
//
// The public handler never shows a player's address. The operator pages
// do (the dashboard lists every game connection's UDP address), so serve
// them on loopback or a private network only.
//
// The lobby can also run alone, told about any number of game servers
// (their UDP addresses, keys and the types they run) in Config.Servers.
//
// # Peer-hosted games
//
// In a peer-hosted room ("Bob is host") one player's own process runs the
// game server. A player offers to host by sending the UDP port its process
// listens on with create, join or ready ("hostPort"). At the start, the
// first player in join order that offered a port hosts: the lobby makes a
// new tickwire.Key for the game, mints every token with it naming the
// address host-IP:hostPort, where host-IP is the address the host's HTTP
// connection came from, and sends the host its Assignment with Role
// "host" and HostKey (the key in hex), which its game server must open
// the tokens with. The host's own token lists 127.0.0.1:hostPort first.
// If everyone is ready and nobody offered a port, the room waits and its
// players get an "assign_failed" error saying so. Every player who
// offered a port is named in every assignment's players with its
// address ("hostAddr"): those are the players who can take the game over
// if its host is lost (host migration, docs/MIGRATION.md), so the other
// players of the game learn their addresses.
//
// Behind NATs: with Config.Rendezvous, each seat of a peer-hosted room
// gets a ticket (SeatInfo.Rendezvous) with which the player's program
// asks the reflector beside the lobby (package rendezvous) for the
// public mappings of its host and client sockets; the reflector reports
// them with NoteMapping. The assignment then names the host's mapping
// instead of host-IP:hostPort (and, to a player seen at the host's own
// public address, the host's local addresses first), and the
// assignment of every player who can host lists each other player's
// client candidates (ClientAddrs), to punch toward when it hosts, at
// the start or after a host migration. With Config.Relay, the host and
// the first successors (by client id, as the players elect them) each
// get an allocation with every other player: the candidate's side in
// AssignedPlayer.Relay, the player's in AssignedPlayer.HostRelay (and
// the side toward the host in Assignment.Relay). docs/NAT.md has the
// whole flow. Without a reflector the lobby sees the host's public
// address only if the host reaches it directly: behind NAT, the port
// must be forwarded (or the NAT must keep the same mapping for the UDP
// port, which the lobby cannot check); behind a reverse proxy the lobby
// sees the proxy's address unless Config.TrustedProxies names the proxy
// (Lobby.ClientAddr).
// Browsers cannot host. The relay's grants come from Lobby.RelayGrants
// (docs/NAT.md, "The relay").
//
// # Pages
//
//	GET /                   menu of game types
//	GET /games/{type}       the type's lobby: open games, create form, join buttons; the room view
//	GET /games/{type}/ws    the WebSocket the page uses (protocol below)
//	GET /static/...         embedded CSS and JavaScript
//
// Operator pages (Lobby.Admin):
//
//	GET /dashboard          live dashboard (polls /api/stats each second)
//	GET /api/stats          the dashboard's numbers, with every game connection's address
//	GET /metrics            Prometheus metrics (tickwire_lobby_* and whatever else Config.Registerer holds)
//	GET /static/...         embedded CSS and JavaScript
//
// # WebSocket protocol
//
// JSON text messages on GET /games/{type}/ws. From the client, "op" says
// what to do:
//
//	{"op":"create","name":"Bob's game","maxPlayers":4,"hosting":"server","player":"Bob"}
//	{"op":"join","room":"k3xq7p2m4a","player":"Alice"}
//	{"op":"ready"}                  or {"op":"ready","room":"k3xq7p2m4a","hostPort":7777}
//	{"op":"unready"}
//	{"op":"chat","text":"gl hf"}
//	{"op":"leave"}
//	{"op":"quick","player":"Carol"}   "Play now": a running game with a free seat, or a new one
//
// A "room" field, where given, must name the room the player is in. From
// the lobby, "type" says what happened:
//
//	{"type":"rooms","gameType":"demo","rooms":[RoomInfo...]}   sent on connect and on every change while not in a room
//	{"type":"joined","seat":"…","player":"Bob","room":RoomInfo,"chat":[ChatLine...]}
//	{"type":"room","event":"Alice is ready","room":RoomInfo}   every change in the player's room
//	{"type":"chat","room":"…","from":"Bob","text":"gl hf","at":"…"}
//	{"type":"left","room":"…"}                                 followed by a "rooms" list
//	{"type":"error","code":"room_full","error":"…"}            the last message changed nothing
//	{"type":"error","code":"rate_limited","error":"…","retryAfter":3}
//	{"type":"assigned","assignment":Assignment}                 then close 1000 "assigned"
//
// Closing the socket (or failing to answer pings for Config.PingInterval)
// takes the player out of its room.
//
// # JSON API
//
// For bots and tools; the same operations as the socket, no WebSocket
// needed. Bodies are JSON objects of at most Config.MaxMessageBytes. An
// error answer is {"code":"…","error":"…"} (an *Error) with a 4xx/5xx
// status; the Code constants list the codes.
//
//	GET  /api/types                                   []TypeInfo
//	GET  /api/games/{type}                            []RoomInfo: the open rooms
//	POST /api/games/{type}       CreateRequest     -> 201 SeatInfo (create and sit down)
//	GET  /api/rooms/{room}                            RoomInfo
//	POST /api/rooms/{room}/join  JoinRequest       -> SeatInfo
//	POST /api/rooms/{room}/ready ReadyRequest      -> AssignmentStatus
//	POST /api/rooms/{room}/chat  {"seat","text"}   -> AssignmentStatus
//	POST /api/rooms/{room}/leave {"seat"}          -> 204
//	GET  /api/rooms/{room}/assignment?seat=S&wait=25s -> AssignmentStatus (long-poll, wait ≤ 60s)
//	GET  /api/play/{game}/players                -> {"players":[{"slot":1,"name":"Bob"}...]} (a server-hosted game's names, for its page)
//
// The seat id in SeatInfo authenticates the player's later calls; keep it
// secret. A seat taken through the API is kept while its player calls the
// API at least every Config.SeatTimeout; a long-poll in progress counts as
// present the whole time. Any seat, API or socket, goes when its player
// has not acted (create, join, ready, unready, chat) for
// Config.IdleTimeout, polling or not.
//
// A complete bot flow with curl (Client does the same in Go):
//
//	# Bob creates a game and sits down
//	curl -s -XPOST localhost:8080/api/games/demo -d '{"name":"bots","player":"Bob","maxPlayers":2}'
//	  -> {"seat":"S1","player":"Bob","room":{"id":"R", ...}}
//	# Alice joins it
//	curl -s -XPOST localhost:8080/api/rooms/R/join -d '{"player":"Alice"}'            -> {"seat":"S2",...}
//	# both ready; the last ready already answers with the assignment
//	curl -s -XPOST localhost:8080/api/rooms/R/ready -d '{"seat":"S1","ready":true}'   -> {"status":"waiting",...}
//	curl -s -XPOST localhost:8080/api/rooms/R/ready -d '{"seat":"S2","ready":true}'   -> {"status":"assigned",...}
//	# Bob picks his up (long-polls while the room is waiting)
//	curl -s 'localhost:8080/api/rooms/R/assignment?seat=S1&wait=25s'
//	  -> {"status":"assigned","assignment":{"gameId":"…","host":"127.0.0.1","port":7777,
//	      "addrs":["127.0.0.1:7777"],"slot":1,"token":"…","role":"player",...}}
//
// Then the bot dials the assignment's Addrs with its Token
// (tickwire.ParseConnectToken, or a *tickwire.ConnectToken straight from
// Client, since Assignment.Token decodes itself).
//
// # Limits and bad input
//
// Names (players and games) are 1..Config.MaxNameLen printable
// characters, unique per room ignoring case; chat lines at most
// Config.MaxChatLen; a room holds 1..the type's MaxPlayers players; a type
// at most Config.MaxRoomsPerType open rooms (when full, a create from an
// address holding fewer of them displaces the oldest room of the address
// holding the most). Unknown types or rooms, a
// full room, a taken name, an oversized or malformed message, or a ready,
// chat or leave for a room the player is not in are answered with an
// error and change nothing.
//
// Each client address (Lobby.ClientAddr; an IPv6 address counts by its
// /64) has token buckets for creating rooms, joining and chatting
// (Config.CreateRate, JoinRate, ChatRate) and may hold at most
// Config.MaxRoomsPerAddr open rooms and Config.MaxSocketsPerAddr
// sockets; the lobby as a whole creates rooms at most as fast as
// Config.GlobalCreateRate. Over a rate limit the answer is 429 "rate_limited" with a
// Retry-After header and "retryAfter" (seconds) in the body; over a
// per-address cap, 429 "address_limit"; with Config.MaxSockets sockets
// open, 503 "busy". Each rate limit remembers at most 65536 addresses
// whose buckets are not full; past that it forgets the fullest buckets
// rather than grow. A browser request from another site's page is
// refused with 403 "cross_origin" (Lobby.ProtectCrossOrigin); WebSockets
// accept only same-origin pages and Config.OriginPatterns. Request
// bodies over Config.MaxMessageBytes are cut
// off (413) and their connection closed. The lobby sets no connection
// timeouts: give the http.Server serving it ReadTimeout, WriteTimeout and
// IdleTimeout (long-polls extend their own write deadline; sockets are
// hijacked and keep their own).
package lobby
