package migrate

// Epoch is the term of a host: 1 for the host the lobby chose, one more
// with every migration. Frames about the roster, the standby and the
// migration carry it; a receiver ignores those of an epoch older than the
// one it follows, and a host that hears of a newer epoch than its own was
// replaced and steps down. Epochs only grow, one per migration, so they
// never wrap in a game's life.
type Epoch uint32

// EpochGate is the newest epoch a party follows, and the count of stale
// frames it refused.
type EpochGate struct {
	cur   Epoch
	Stale uint64 // frames of an older epoch refused
}

// Current is the epoch followed.
func (g *EpochGate) Current() Epoch { return g.cur }

// Admit reports whether a frame of epoch e is current or newer (and
// follows e if newer); an older one is refused and counted.
func (g *EpochGate) Admit(e Epoch) bool {
	if e < g.cur {
		g.Stale++
		return false
	}
	g.cur = e
	return true
}

// Replaced reports whether e, heard from anyone, says a newer host took
// over from a host of epoch mine.
func Replaced(mine, e Epoch) bool { return e > mine }
