package reliability

// ConnStats is everything a connection reports: packet counters, RTT,
// jitter and loss from its PacketAcks, and its reliable channel's queue.
type ConnStats struct {
	AckStats
	Reliable ReliableStats
}

// CollectStats gathers a connection's statistics; r may be nil for a
// connection without a reliable channel.
func CollectStats(a *PacketAcks, r *Reliable) ConnStats {
	s := ConnStats{AckStats: a.Stats()}
	if r != nil {
		s.Reliable = r.Stats()
	}
	return s
}
