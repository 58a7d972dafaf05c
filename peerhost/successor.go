package peerhost

import (
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// Host migration (docs/MIGRATION.md) needs the successor's server to admit
// the other players without a lobby round trip: the host mints the
// credentials in advance and hands them out over the encrypted sessions
// in successor frames — a fresh token key to the successor, and to every
// other player a connect token for the successor's address sealed with
// that key — and mints new ones before the tokens expire.

// SuccessorPlayer is a player the successor's server will admit: its
// connection's client id and player slots (as in its own token).
type SuccessorPlayer struct {
	ClientID uint64
	Players  []uint16
}

// SuccessorCredentials are one round of a host's credentials for its
// successor: the key the successor's server opens tokens with, and one
// token per other player, by the player's first slot.
type SuccessorCredentials struct {
	Key    tickwire.Key
	Tokens map[uint16]*tickwire.ConnectToken
}

// MintSuccessorCredentials draws a fresh key and mints, for every player,
// a token for game gameID at the successor's address addr, valid for ttl
// (DefaultTokenTTL when zero), created at now.
func MintSuccessorCredentials(gameID uint64, addr string, players []SuccessorPlayer, ttl time.Duration, userData [proto.UserDataSize]byte, now time.Time) (*SuccessorCredentials, error) {
	key, err := tickwire.GenerateKey()
	if err != nil {
		return nil, err
	}
	sc := &SuccessorCredentials{Key: key, Tokens: make(map[uint16]*tickwire.ConnectToken, len(players))}
	for _, p := range players {
		if len(p.Players) == 0 {
			return nil, fmt.Errorf("peerhost: successor credentials for client %#x without player slots", p.ClientID)
		}
		tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: gameID, ClientID: p.ClientID, Players: p.Players,
			ServerAddrs: []string{addr}, TTL: ttl, UserData: userData}, now)
		if err != nil {
			return nil, err
		}
		sc.Tokens[p.Players[0]] = tok
	}
	return sc, nil
}

// KeyFrame is the successor frame that gives the key to the successor
// (player slot successor) of a host of epoch.
func (sc *SuccessorCredentials) KeyFrame(epoch uint32, successor uint16) proto.SuccessorFrame {
	return proto.SuccessorFrame{Epoch: epoch, Successor: successor, Kind: proto.SuccessorKey,
		KeyID: sc.Key.ID(), Key: sc.Key}
}

// TokenFrame is the successor frame that gives player (its first slot)
// its token for the successor; ok is false when there is none.
func (sc *SuccessorCredentials) TokenFrame(epoch uint32, successor, player uint16) (f proto.SuccessorFrame, ok bool) {
	tok := sc.Tokens[player]
	if tok == nil {
		return f, false
	}
	return proto.SuccessorFrame{Epoch: epoch, Successor: successor, Kind: proto.SuccessorToken, Token: []byte(tok.String())}, true
}

// ErrSuccessorFrame wraps what makes a successor frame unusable.
var ErrSuccessorFrame = errors.New("peerhost: bad successor frame")

// SuccessorKey returns the key a key frame carries, checked against its
// key id.
func SuccessorKey(f *proto.SuccessorFrame) (tickwire.Key, error) {
	if f.Kind != proto.SuccessorKey {
		return tickwire.Key{}, fmt.Errorf("%w: kind %d is not a key", ErrSuccessorFrame, f.Kind)
	}
	if tickwire.Key(f.Key).ID() != f.KeyID {
		return tickwire.Key{}, fmt.Errorf("%w: key id %#x does not name its key", ErrSuccessorFrame, f.KeyID)
	}
	return tickwire.Key(f.Key), nil
}

// SuccessorToken returns the connect token a token frame carries.
func SuccessorToken(f *proto.SuccessorFrame) (*tickwire.ConnectToken, error) {
	if f.Kind != proto.SuccessorToken {
		return nil, fmt.Errorf("%w: kind %d is not a token", ErrSuccessorFrame, f.Kind)
	}
	tok, err := tickwire.ParseConnectToken(string(f.Token))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSuccessorFrame, err)
	}
	return tok, nil
}
