package botproto

// Summary is a tickwire-bot run's result; its JSON form is the bot's
// -json output, which the end-to-end tests read.
type Summary struct {
	Clients     int    `json:"clients"`
	Connected   int    `json:"connected"`
	Disconnects int    `json:"disconnects"`
	Desyncs     uint64 `json:"desyncs"`
	Resyncs     uint64 `json:"resyncs"`
	// ResyncCauses counts the resyncs started by cause (the
	// proto.ResyncReason's name); absent causes are left out.
	ResyncCauses      map[string]uint64 `json:"resync_causes,omitempty"`
	InputsSent        uint64            `json:"inputs_sent"`
	LateInputs        uint64            `json:"late_inputs"`
	RTTms             Percentiles       `json:"rtt_ms"`
	EchoMs            Percentiles       `json:"echo_ms"`
	DownKbpsPerClient float64           `json:"down_kbps_per_client"`
	UpKbpsPerClient   float64           `json:"up_kbps_per_client"`
	Rollbacks         uint64            `json:"rollbacks"`
	Corrections       uint64            `json:"corrections"`
	InterpStalls      uint64            `json:"interp_stalls"`
	// InterpStallsBounded are the stalls the lag-compensation bound won
	// (sim.ClientStats.InterpStallsBounded).
	InterpStallsBounded uint64 `json:"interp_stalls_bounded"`
	// The interpolated frames, stalls and stalls the bound won once the
	// clients had played game.ConvergeTime (game.ClientStats.Settled).
	InterpFramesSettled        uint64 `json:"interp_frames_settled"`
	InterpStallsSettled        uint64 `json:"interp_stalls_settled"`
	InterpStallsBoundedSettled uint64 `json:"interp_stalls_bounded_settled"`
	InterpFrames               uint64 `json:"interp_frames"`
	ReliableSent               uint64 `json:"reliable_sent"`
	ReliableReceived           uint64 `json:"reliable_received"`
	ReliableDuplicates         uint64 `json:"reliable_duplicates"`
	ReliableOutOfOrder         uint64 `json:"reliable_out_of_order"`
	ReliableLost               uint64 `json:"reliable_lost"`
	// ReliableLostWithSession counts the echoes in flight on a session
	// that was lost (and then rejoined or replaced): the transport does
	// not carry a lost session's reliable data to the next.
	ReliableLostWithSession uint64  `json:"reliable_lost_with_session"`
	DurationSeconds         float64 `json:"duration_s"`
	// BotCPUPerClientTick is the bot process's own CPU time (user +
	// system) over the run, per client and per 60 Hz tick, in
	// microseconds: what load generation costs beside the server.
	BotCPUPerClientTick float64  `json:"bot_cpu_us_per_client_tick"`
	DisconnectReasons   []string `json:"disconnect_reasons,omitempty"`
	// Servers counts the connected clients by the game server address
	// their tokens named (with -lobby in a fleet: where the lobby put
	// their games).
	Servers map[string]int `json:"servers,omitempty"`
	// Events sums the game events (tickwire.GameEvent) the bots' games
	// received.
	Events Events `json:"events"`
	// Interruptions counts the sessions the bots lost without a leave
	// (with -rejoin), Rejoins those that came back into their slots, and
	// RejoinMs how long each took from the loss; RejoinFailures counts
	// the losses no rejoin brought back (past the server's grace), each
	// of which then joined as a new player (NewPlayers).
	Interruptions  int         `json:"interruptions"`
	Rejoins        int         `json:"rejoins"`
	RejoinMs       Percentiles `json:"rejoin_ms"`
	RejoinMaxMs    float64     `json:"rejoin_max_ms"`
	RejoinFailures int         `json:"rejoin_failures"`
	NewPlayers     int         `json:"new_players"`
	// Peer is set in -peer mode (one player of a peer-hosted game).
	Peer *PeerSummary `json:"peer,omitempty"`
	// Commits is set when the bots played a commits-mode game (-game
	// swarm).
	Commits *CommitsSummary `json:"commits,omitempty"`
}

// CommitsSummary is what the bots of a commits-mode game saw, summed
// over the clients (maxima where said).
type CommitsSummary struct {
	Issued    uint64 `json:"issued"`    // commands sent
	Executed  uint64 `json:"executed"`  // commands the committed worlds ran
	Committed uint64 `json:"committed"` // ticks committed
	Lead      int    `json:"lead"`      // ticks ahead commands run (the last client's)
	// CommitLagMax is the largest live − committed seen, in ticks.
	CommitLagMax int    `json:"commit_lag_max"`
	Rollbacks    uint64 `json:"rollbacks"`
	Replayed     uint64 `json:"replayed"`
	Kicks        uint64 `json:"kicks"`
	Resyncs      uint64 `json:"resyncs"`
	Desyncs      uint64 `json:"desyncs"`
	Rejoins      uint64 `json:"rejoins"`
	// StallMaxMs is the longest time a client's committed tick did not
	// move (the largest over clients).
	StallMaxMs float64 `json:"stall_max_ms"`
	// Mismatches counts clients whose committed record differs from the
	// first client's over the ticks both ran.
	Mismatches int `json:"mismatches"`
	// Mesh sums the peer mesh's figures (absent with -mesh=false).
	Mesh *MeshSummary `json:"mesh,omitempty"`
}

// MeshSummary is what the bots' peer mesh did, summed over clients.
type MeshSummary struct {
	Peers     int `json:"peers"`     // introduced
	Reachable int `json:"reachable"` // reaching at the end
	// Reached counts the peers each client reached at least once, summed.
	Reached int `json:"reached"`
	// Shortcut commands: sent to peers, received, useful (before the
	// server's copy), late (after their tick was committed).
	Sent     uint64 `json:"shortcuts_sent"`
	Received uint64 `json:"shortcuts_received"`
	Useful   uint64 `json:"shortcuts_useful"`
	Late     uint64 `json:"shortcuts_late"`
	// EarlierMs is how much earlier, on average, a useful shortcut
	// arrived than the server's copy.
	EarlierMs float64 `json:"earlier_ms"`
	Dropped   uint64  `json:"dropped"` // peer datagrams refused
}

// CommitRecord is one client's record, for cross-process checks
// (tickwire-bot -record): every command its committed world ran since its
// last state load, and every command it issued, with the moment each
// first reached its live world.
type CommitRecord struct {
	Client int `json:"client"`
	Loads  int `json:"loads"`
	// From is the first tick the record holds (after the last state
	// loaded).
	From     uint32        `json:"from"`
	Executed []CommitExec  `json:"executed"`
	Issued   []uint16      `json:"issued"`    // tags
	IssuedAt []CommitShown `json:"issued_at"` // tag and when it was issued
	Shown    []CommitShown `json:"shown"`
	StallMs  float64       `json:"stall_max_ms"`
}

// CommitExec is one executed command: its tick, kind (0 input, 1 join, 2
// leave), player and tag.
type CommitExec struct {
	Tick   uint32 `json:"t"`
	Kind   uint8  `json:"k"`
	Player uint16 `json:"p"`
	Tag    uint16 `json:"g"`
}

// CommitShown is when a command (by tag) first reached a client's live
// world, in Unix microseconds.
type CommitShown struct {
	Tag    uint16 `json:"g"`
	UnixUs int64  `json:"us"`
}

// PeerSummary is what one player of a peer-hosted game saw of host
// migration.
type PeerSummary struct {
	Slot       uint16 `json:"slot"`
	Epoch      uint32 `json:"epoch"` // of the last host
	Migrations uint64 `json:"migrations"`
	Promotions uint64 `json:"promotions"`
	Hosting    bool   `json:"hosting"` // it ran the game's host at the end
	// SteppedDown: its host learned it was replaced and stopped.
	SteppedDown bool `json:"stepped_down,omitempty"`
	// StandbyStates and StandbySteps count the standby frames it took as
	// the warm standby; StandbyBytes what its host sent its own standby.
	StandbyStates uint64 `json:"standby_states"`
	StandbySteps  uint64 `json:"standby_steps"`
	StandbyBytes  uint64 `json:"standby_bytes"`
	// ResumedMissing: as a promoted host, the inputs of the players back
	// from the migration its engine ran without (tickwire.GameHostStats).
	ResumedMissing uint64      `json:"resumed_missing"`
	Ended          string      `json:"ended,omitempty"` // why the peer ended before the run did
	Events         []PeerEvent `json:"events"`
	// Goroutines is how many goroutines the process ran at the end of
	// its play (its "playing" line says how many at the start).
	Goroutines int `json:"goroutines"`
	// Path is how it first reached its host through NATs (-nat): "self"
	// (it hosts), "local", "direct" (the host's public mapping) or
	// "relay"; Via the address it connected to and ConnectMs how long
	// from the assignment to the accept.
	Path      string  `json:"path,omitempty"`
	Via       string  `json:"via,omitempty"`
	ConnectMs float64 `json:"connect_ms,omitempty"`
}

// PeerEvent is one tickwire.PeerEvent with its wall-clock time.
type PeerEvent struct {
	Kind   string `json:"kind"`
	UnixMs int64  `json:"unix_ms"`
	Epoch  uint32 `json:"epoch"`
	Slot   uint16 `json:"slot"`
	Text   string `json:"text,omitempty"`
}

// Events counts game events by kind.
type Events struct {
	Ready           uint64 `json:"ready"`
	PlayersJoined   uint64 `json:"players_joined"`
	PlayersLeft     uint64 `json:"players_left"`
	ActionsAccepted uint64 `json:"actions_accepted"`
	ActionsRejected uint64 `json:"actions_rejected"`
	MessagesLate    uint64 `json:"messages_late"`
	ResyncsStarted  uint64 `json:"resyncs_started"`
	ResyncsFinished uint64 `json:"resyncs_finished"`
	Desyncs         uint64 `json:"desyncs"`
	Disconnects     uint64 `json:"disconnects"`
	// Players interrupted and back (others' and the bots' own), and the
	// bots' own sessions lost and rejoined.
	PlayersInterrupted uint64 `json:"players_interrupted"`
	PlayersBack        uint64 `json:"players_back"`
	Rejoining          uint64 `json:"rejoining"`
	Rejoined           uint64 `json:"rejoined"`
}

// Percentiles of a distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Failed reports whether the run failed, which the bot's exit status
// says too: any desync, any reliable message lost, duplicated or out of
// order, or a client that never connected.
func (s *Summary) Failed() bool {
	if c := s.Commits; c != nil && (c.Desyncs > 0 || c.Mismatches > 0) {
		return true
	}
	return s.Desyncs > 0 || s.ReliableLost > 0 || s.ReliableDuplicates > 0 || s.ReliableOutOfOrder > 0 || s.Connected < s.Clients
}
