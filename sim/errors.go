package sim

import "errors"

// Errors a caller acts on.
var (
	// ErrPlayerExists: Join for a player slot that is already joined.
	ErrPlayerExists = errors.New("sim: player already joined")
	// ErrNoPlayer: the player slot is not joined.
	ErrNoPlayer = errors.New("sim: no such player")
	// ErrBadPlayer: player slot 0 (the server's) or above proto.MaxSpawner.
	ErrBadPlayer = errors.New("sim: invalid player slot")
	// ErrNotStarted: the engine has no state yet (Start not called).
	ErrNotStarted = errors.New("sim: not started")
	// ErrJoinPanicked: OnPlayerJoin panicked; the world was restored.
	ErrJoinPanicked = errors.New("sim: OnPlayerJoin panicked")
)

// ConfigError reports an invalid configuration or schema value.
type ConfigError struct {
	Field   string
	Problem string
}

func (e *ConfigError) Error() string { return "sim: " + e.Field + ": " + e.Problem }

func errSchema(problem string) error { return &ConfigError{Field: "Schema", Problem: problem} }
