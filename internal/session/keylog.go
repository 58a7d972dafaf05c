package session

import "github.com/tickwire/tickwire/internal/keylog"

// keyLog is where the keys of new sessions and mesh links go: the
// process's key log, nil (nothing logged) unless TICKWIRE_KEYLOG names
// a file. Tests replace it.
var keyLog = keylog.FromEnv
