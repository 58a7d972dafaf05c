// Package lobby is how players find each other: the HTTP game menu and
// lobby pages, the WebSocket ready flow, game assignment (game id, host,
// port, connect token), a JSON API for bots and tools, and the live
// dashboard. It never touches the game's UDP traffic.
package lobby
