// Package botproto holds the conventions tickwire-server and
// tickwire-bot share beyond the game itself, and the bot's summary that
// the end-to-end tests read.
package botproto

// EchoChannel is the message channel on which the server sends every
// reliable message straight back: bots number their messages on it and
// check that each comes back exactly once and in order.
const EchoChannel = 250
