package fleet

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Role is what a fleet connection may do on NATS.
type Role int

const (
	// RoleServer is a game server's: publish its own status, answer
	// the reservations sent to it.
	RoleServer Role = iota + 1
	// RoleLobby is a lobby's: read announcements, ask servers for
	// reservations in its own name, announce itself.
	RoleLobby
)

func (r Role) String() string {
	switch r {
	case RoleServer:
		return "server"
	case RoleLobby:
		return "lobby"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Permissions are the NATS subjects a connection may publish and
// subscribe to. Responses lets it answer, once each, the requests it
// received (NATS's allow_responses); it may publish on no other inbox.
type Permissions struct {
	Publish   []string
	Subscribe []string
	Responses bool
}

// PermissionsFor is what a connection of role with fleet id id (its nkey
// public key) may do on the fleet with subject prefix prefix (empty:
// DefaultPrefix):
//
//   - a game server publishes its status on <prefix>.servers.<id> only,
//     hears the hello and the requests on <prefix>.alloc.<id>.*, and
//     answers only those;
//   - a lobby asks any server in its own name (<prefix>.alloc.*.<id>),
//     announces itself and says hello, hears the servers' and lobbies'
//     announcements, and receives replies on its own inbox
//     (_INBOX.<id>.>) only.
//
// A server can therefore not read another's grants, announce under
// another id or reserve seats; a lobby cannot announce a server, nor
// ask in another lobby's name.
func PermissionsFor(role Role, prefix, id string) Permissions {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	switch role {
	case RoleServer:
		return Permissions{
			Publish:   []string{prefix + ".servers." + id},
			Subscribe: []string{prefix + ".alloc." + id + ".*", prefix + ".hello"},
			Responses: true,
		}
	case RoleLobby:
		return Permissions{
			Publish:   []string{prefix + ".alloc.*." + id, prefix + ".lobbies.*", prefix + ".hello"},
			Subscribe: []string{prefix + ".servers.*", prefix + ".lobbies.*", prefix + ".hello", inboxPrefix(id) + ".>"},
		}
	}
	return Permissions{}
}

// inboxPrefix is where the replies to a lobby's requests go.
func inboxPrefix(id string) string { return "_INBOX." + id }

// MinToken is the shortest role token accepted.
const MinToken = 16

// Credentials are one connection's identity on the fleet's NATS: an
// nkey, whose public key is the connection's fleet id (the server id a
// Member announces, the lobby id a Directory asks in), and the token of
// its role for a NATS server that checks roles by token (the embedded
// one, Authorizer). An external NATS names each nkey in its own
// configuration instead (docs/FLEET.md).
type Credentials struct {
	Role  Role
	Token string // empty: none
	kp    nkeys.KeyPair
	id    string
}

// NewCredentials makes credentials of role with a fresh nkey.
func NewCredentials(role Role, token string) (*Credentials, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("fleet: nkey: %w", err)
	}
	return credentials(role, token, kp)
}

// LoadCredentials makes credentials of role with the nkey whose seed
// (SU...) is in seedFile, which only its owner may read.
func LoadCredentials(role Role, token, seedFile string) (*Credentials, error) {
	fi, err := os.Stat(seedFile)
	if err != nil {
		return nil, fmt.Errorf("fleet: nkey seed: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("fleet: nkey seed %s has mode %v: others may read it (chmod 600)", seedFile, fi.Mode().Perm())
	}
	b, err := os.ReadFile(seedFile)
	if err != nil {
		return nil, fmt.Errorf("fleet: nkey seed: %w", err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, fmt.Errorf("fleet: nkey seed %s: %w (make one with: nk -gen user)", seedFile, err)
	}
	return credentials(role, token, kp)
}

func credentials(role Role, token string, kp nkeys.KeyPair) (*Credentials, error) {
	if role != RoleServer && role != RoleLobby {
		return nil, fmt.Errorf("fleet: role %v", role)
	}
	id, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("fleet: nkey: %w", err)
	}
	if !nkeys.IsValidPublicUserKey(id) {
		return nil, errors.New("fleet: the nkey is not a user key (its seed starts SU)")
	}
	return &Credentials{Role: role, Token: token, kp: kp, id: id}, nil
}

// ID is the connection's fleet id: its nkey's public key.
func (c *Credentials) ID() string { return c.id }

// Options are the nats.Connect options that present the credentials and
// receive replies on the connection's own inbox.
func (c *Credentials) Options() []nats.Option {
	opts := []nats.Option{
		nats.Nkey(c.id, c.kp.Sign),
		nats.CustomInboxPrefix(inboxPrefix(c.id)),
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	return opts
}

// Authorizer returns the check an embedded NATS server applies to a
// client that proved it holds the nkey id and presented token: the
// client gets the permissions of the role whose token it presented
// (PermissionsFor), or is refused. A role without a token (empty) admits
// nobody.
func Authorizer(prefix string, tokens map[Role]string) func(token, id string) (Permissions, bool) {
	return func(token, id string) (Permissions, bool) {
		if !nkeys.IsValidPublicUserKey(id) {
			return Permissions{}, false
		}
		for role, t := range tokens {
			if t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
				return PermissionsFor(role, prefix, id), true
			}
		}
		return Permissions{}, false
	}
}
