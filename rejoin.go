package tickwire

import (
	"crypto/hkdf"
	"crypto/sha256"
	"slices"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// A session that ends without a leave — a timeout, a process restart, a
// new network — need not cost the player its place. At accept the server
// gives the client a rejoin credential over the encrypted session: a
// connect token for the same game, client id and player slots, sealed
// with a key derived from the server's own (rejoinKey), so that it opens
// nowhere else and no lobby token is ever taken for one. The server keeps
// one rejoinEntry per client id: the newest credential's nonce, which
// alone is honoured, and, once the session ended without a leave, the end
// of its grace (Config.RejoinGrace). A credential opens one session (the
// handshake's used-token history refuses it twice), replaces the client's
// session if that one still lives (an address the session could not
// follow, a restarted process), and is refused after the grace.

// rejoinTokenTTL is a rejoin credential's expiry; the server sends a new
// one at half its life, so a client always holds one valid for the
// grace. What bounds a rejoin is the grace, kept by the server.
const rejoinTokenTTL = time.Hour

// rejoinEntry is what a server remembers of a client's rejoin
// credential.
type rejoinEntry struct {
	nonce   [proto.NonceSize]byte // the newest credential's: the only one honoured
	gameID  uint64
	players []uint16
	conn    *Conn     // the live session it belongs to; nil once that ended
	until   time.Time // conn nil: when the grace ends
}

// rejoinKeyFor derives the key that seals a server's rejoin credentials
// from its token key.
func rejoinKeyFor(k Key) (Key, error) {
	b, err := hkdf.Key(sha256.New, k[:], nil, "tickwire rejoin credential v1", proto.KeySize)
	if err != nil {
		return Key{}, err
	}
	return Key(b), nil
}

// offerRejoin sends c a fresh rejoin credential and makes it the only one
// its client id may use.
func (s *Server) offerRejoin(c *Conn, now time.Time) {
	if s.rejoinKey == nil {
		return
	}
	addrs := s.cfg.ServerAddrs
	if len(addrs) == 0 {
		// The client dials the address it reached us at; the token
		// names one only because every token does.
		addrs = []string{c.Addr().String()}
	}
	tok, err := MintToken(*s.rejoinKey, TokenParams{GameID: c.gameID, ClientID: c.clientID, Players: c.players,
		ServerAddrs: addrs, TTL: rejoinTokenTTL, UserData: c.userData}, now)
	if err != nil {
		s.cfg.Logger.Error("mint a rejoin credential", "conn", c.id, "err", err)
		return
	}
	f := proto.SuccessorFrame{Kind: proto.SuccessorRejoin, Token: []byte(tok.String())}
	frame, err := f.Append(nil)
	if err == nil {
		err = c.sess.SendFrame(frame)
	}
	if err != nil {
		s.cfg.Logger.Error("send a rejoin credential", "conn", c.id, "err", err)
		return
	}
	c.rejoinSent = now
	s.rejoins[c.clientID] = &rejoinEntry{nonce: tok.Nonce, gameID: c.gameID, players: c.players, conn: c}
}

// admitRejoin decides on a rejoin credential: the newest one sent to its
// client id, for the same game and slots, with the session alive or in
// its grace.
func (s *Server) admitRejoin(a *session.Admission, now time.Time) proto.DenyReason {
	e := s.rejoins[a.Priv.ClientID]
	ok := e != nil && e.nonce == a.Nonce && e.gameID == a.GameID &&
		slices.Equal(e.players, a.Priv.Players[:a.Priv.PlayerCount]) &&
		(e.conn != nil || now.Before(e.until))
	if !ok {
		s.stats.RejoinRefused++
		return proto.DenyRejoin
	}
	if e.conn == nil && len(s.conns) >= s.cfg.MaxConnections {
		return proto.DenyServerFull
	}
	return 0
}

// rejoinEnded updates c's client's credential when c ends for r: a leave
// ends it, any other end opens its grace.
func (s *Server) rejoinEnded(c *Conn, r proto.DisconnectReason, now time.Time) {
	e := s.rejoins[c.clientID]
	if e == nil || e.conn != c {
		return
	}
	switch r {
	case proto.DisconnectTimeout, proto.DisconnectReplaced:
		e.conn, e.until = nil, now.Add(s.cfg.RejoinGrace)
		c.rejoinUntil = e.until
	default:
		delete(s.rejoins, c.clientID)
	}
}

// expireRejoins forgets the credentials whose grace is over, and sends a
// fresh credential to the sessions whose one is half its life old. It
// runs about once a second.
func (s *Server) expireRejoins(now time.Time) {
	if s.rejoinKey == nil || now.Sub(s.rejoinSweep) < time.Second {
		return
	}
	s.rejoinSweep = now
	for id, e := range s.rejoins {
		switch {
		case e.conn == nil && !now.Before(e.until):
			delete(s.rejoins, id)
		case e.conn != nil && now.Sub(e.conn.rejoinSent) > rejoinTokenTTL/2:
			s.offerRejoin(e.conn, now)
		}
	}
}

// Rejoined reports whether c came back with its rejoin credential: its
// client's earlier session ended without a leave (or was replaced), and
// c carries the same player slots in the same game.
func (c *Conn) Rejoined() bool { return c.rejoined }

// RejoinUntil says, once c has ended (Handler.Disconnected), whether its
// client may come back into its slots with its rejoin credential, and
// until when (Config.RejoinGrace after the end). A leave, a kick or a
// shutdown end it for good.
func (c *Conn) RejoinUntil() (time.Time, bool) { return c.rejoinUntil, !c.rejoinUntil.IsZero() }
