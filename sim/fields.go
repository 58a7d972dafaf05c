package sim

// Field is one named value of a game's state, for tools that show a
// person what differs between two states of a game (tickwire-replay
// -bisect, package replay) by name rather than by byte offset.
type Field struct {
	// Entity names what the field belongs to in a canonical state
	// ("unit 17"; empty for the world's own fields). A snapshot
	// record's fields leave it empty: the record's NetworkID names the
	// entity.
	Entity string
	// Name is the field's name ("hp", "x").
	Name string
	// Value is the field's value, decoded as the game reads it.
	Value int64
}

// RecordFields is an optional interface of a Game that names the fields
// of its snapshot records (the Schema.RecordSize bytes WriteSnapshot
// appends per entity).
type RecordFields interface {
	// AppendRecordFields appends the fields of one entity's record to
	// dst, decoded, in the same order for every record. It must accept
	// any bytes of the record's size (a corrupt record's fields are
	// what they decode to) and never panic.
	AppendRecordFields(dst []Field, record []byte) []Field
}

// CanonicalFields is an optional interface of a World that names the
// fields of its canonical state (AppendCanonical's output), entity by
// entity.
type CanonicalFields interface {
	// AppendCanonicalFields appends every field of the canonical state
	// b to dst, in AppendCanonical's order, or returns an error for a
	// state LoadCanonical would refuse. It must never panic.
	AppendCanonicalFields(dst []Field, b []byte) ([]Field, error)
}
