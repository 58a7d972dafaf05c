package tickwire

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/tickwire/tickwire/internal/session"
	"os"
	"runtime"
	"strings"

	"github.com/tickwire/tickwire/proto"
)

// Key is the secret a game server shares with the lobby that mints its
// connect tokens (AES-256-GCM). Whoever holds it can let anyone in.
type Key [proto.KeySize]byte

// GenerateKey returns a new random key.
func GenerateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("tickwire: generate key: %w", err)
	}
	return k, nil
}

// ID names the key in the tokens it seals (ConnectToken.KeyID): the
// first four bytes of its SHA-256, so a server holding several keys
// during a rotation knows which one opens a token.
func (k Key) ID() uint32 { return session.KeyID((*[proto.KeySize]byte)(&k)) }

// String is the key in hex, as stored in key files. Never log it.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ParseKey parses a key written by Key.String (surrounding space ignored).
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return Key{}, fmt.Errorf("tickwire: key is not hex: %w", err)
	}
	if len(b) != len(k) {
		return Key{}, fmt.Errorf("tickwire: key has %d bytes, want %d", len(b), len(k))
	}
	copy(k[:], b)
	return k, nil
}

// ReadSecretFile reads a file that holds a secret (a token key, a shared
// secret), refusing one whose mode gives group or other users access:
// whoever reads a token key can let anyone in. Windows has no such mode
// bits and is not checked.
func ReadSecretFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tickwire: read secret file: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("tickwire: %s has mode %04o, which gives group or other users access to a secret: run chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tickwire: read secret file: %w", err)
	}
	return b, nil
}

// LoadOrCreateKey reads the key at path, or, if the file does not exist,
// generates one and writes it there with mode 0600. created reports which.
// A key file that its group or others may access is refused.
func LoadOrCreateKey(path string) (k Key, created bool, err error) {
	b, err := ReadSecretFile(path)
	if err == nil {
		k, err = ParseKey(string(b))
		if err != nil {
			return Key{}, false, fmt.Errorf("tickwire: key file %s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return Key{}, false, err
	}
	if k, err = GenerateKey(); err != nil {
		return Key{}, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Key{}, false, fmt.Errorf("tickwire: create key file: %w", err)
	}
	if _, err := f.WriteString(k.String() + "\n"); err != nil {
		f.Close()
		return Key{}, false, fmt.Errorf("tickwire: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return Key{}, false, fmt.Errorf("tickwire: write key file: %w", err)
	}
	return k, true, nil
}
