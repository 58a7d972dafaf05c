package peerhost

import (
	"maps"
	"slices"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// A host keeps the first HostConfig.Standbys candidates of its
// succession warm (docs/MIGRATION.md): each gets the game from its own
// StandbyFeed and a copy of every fact of the players' message streams,
// and acknowledges the ticks it holds. The host releases a stream
// message, or acknowledges a player's, once every standby holds it, so
// that whichever of them takes over knows all the players may have been
// told. With two, the game survives its host and its first successor
// dying together: the second holds the game and has credentials.

// DefaultStandbys is HostConfig.Standbys' default.
const DefaultStandbys = 2

// warmStandby is one of the host's warm standbys.
type warmStandby struct {
	c     *tickwire.Conn
	feed  StandbyFeed
	acked bool   // it acknowledged a tick since it became a standby
	tick  uint32 // the newest tick it acknowledged
	// behind: a copy of the streams did not go out to it (its queue was
	// full). It gets no copy until every stream went out to it again
	// (recopy), and nothing is released meanwhile: a successor must hold
	// whatever a player was told. copied is how far each player's stream
	// went out to it since (what a refusal stopped is not sent twice).
	behind bool
	copied map[uint16]streamCopied
	// batch holds the copies not sent yet: they go out as one reliable
	// message (flushCopies) before the next step is fed, not a message
	// each (a segment each in its queue: a few hundred a second with
	// twenty players, which filled it).
	batch []byte
}

// streamCopied is how far the copy of a player's stream went out to a
// standby: the run acknowledged, the last message copied.
type streamCopied struct {
	ran, seq uint32
	ok       bool // ran went out
}

// standbyOf is c's place among the standbys (-1: not one).
func (m *hostMigration) standbyOf(c *tickwire.Conn) int {
	return slices.IndexFunc(m.standbys, func(w *warmStandby) bool { return w.c == c })
}

// primary is the first standby in line, the one a hand-over goes to
// (nil: none).
func (m *hostMigration) primary() *warmStandby {
	if len(m.standbys) == 0 {
		return nil
	}
	return m.standbys[0]
}

// setStandbys makes next, in the order of succession, the standbys: one
// already a standby goes on as it was; a new one gets the game from the
// next step on, and at once the state of every player's stream, and
// nothing more is released to the players until it acknowledged that.
func (m *hostMigration) setStandbys(next []*tickwire.Conn) {
	old := m.standbys
	m.standbys = nil
	for _, c := range next {
		if i := slices.IndexFunc(old, func(w *warmStandby) bool { return w.c == c }); i >= 0 {
			m.standbys = append(m.standbys, old[i])
			old = slices.Delete(old, i, i+1)
			continue
		}
		w := &warmStandby{c: c, feed: m.feedCfg, behind: true, copied: map[uint16]streamCopied{}}
		w.feed.SetStandby(c)
		m.standbys = append(m.standbys, w)
		m.copyStreams(w)
	}
	for _, w := range old {
		w.feed.SetStandby(nil)
		m.feedDone = addFeedStats(m.feedDone, w.feed.Stats())
		if !w.c.Closed() && !m.over() {
			m.endOwed = append(m.endOwed, w.c)
		}
	}
	m.endOwed = slices.DeleteFunc(m.endOwed, func(c *tickwire.Conn) bool { return m.standbyOf(c) >= 0 })
	m.endStandbys()
	m.ackedTick()
}

// endStandbys tells the former standbys owed it that they are fed no
// more (proto.ControlStandbyEnd): elected, a player promoting from a
// standby its host stopped feeding would start from a state the game
// left behind, and without the copies of the streams since. Those
// whose queue refuses it are told again at the next tick.
func (m *hostMigration) endStandbys() {
	owed := m.endOwed[:0]
	for _, c := range m.endOwed {
		ps := c.Players()
		if c.Closed() || len(ps) == 0 {
			continue
		}
		ctl := proto.ControlFrame{Code: proto.ControlStandbyEnd, Player: ps[0], Tick: m.tick(), Arg: uint64(m.cfg.Epoch)}
		b, err := ctl.Append(m.buf[:0])
		if err != nil {
			continue
		}
		m.buf = b
		if c.SendFrame(b) != nil {
			owed = append(owed, c)
		}
	}
	m.endOwed = owed
}

// copyStreams sends standby w, behind, the state of every player's
// stream, in batches of frames, from where the last attempt stopped;
// what was not released yet waits for its acknowledgement of the next
// tick. w is no longer behind once all went out; a batch w's queue
// refuses stops it, and recopy tries again at the next tick.
func (m *hostMigration) copyStreams(w *warmStandby) {
	due := m.tick() + 1
	b := m.buf[:0]
	inBatch := map[uint16]streamCopied{} // what b carries, done once it went out
	send := func() bool {
		if len(b) > 0 && w.c.SendFrame(b) != nil {
			return false
		}
		maps.Copy(w.copied, inBatch)
		clear(inBatch)
		b = b[:0]
		return true
	}
	defer func() { m.buf = b }()
	for p, st := range m.streams {
		if st.outUnknown || st.inUnknown {
			continue // copied once its numbering is known (copyStream)
		}
		done := w.copied[p]
		if !done.ok || done.ran != st.inNext-1 {
			// How far the player's messages ran, and how far its own
			// numbering went: with nothing left to copy, the standby
			// learns the host's last number from the player's receipt.
			b = appendPeerAck(b, p, proto.PeerAckStandbyRun, st.inNext-1)
			if len(st.out) == 0 {
				b = appendPeerAck(b, p, proto.PeerAckStandbyReceived, st.outSeq)
			}
			done.ran, done.ok = st.inNext-1, true
			inBatch[p] = done
		}
		for i := range st.out {
			o := &st.out[i]
			if done.seq != 0 && int32(o.seq-done.seq) <= 0 {
				continue
			}
			b = appendPeerMessage(b, proto.PeerMessageFrame{Player: p, Copy: true, Seq: o.seq, Channel: o.channel, Data: o.data})
			done.seq = o.seq
			inBatch[p] = done
			if len(b) >= maxCopyBatch && !send() {
				return
			}
		}
	}
	if !send() {
		return
	}
	// Everything went out: what was not released waits for w to hold it.
	for _, st := range m.streams {
		for i := range st.out {
			if o := &st.out[i]; !o.sent {
				o.release = due
			}
		}
		for i := range st.pending {
			st.pending[i].tick = due
		}
	}
	w.behind, w.copied = false, nil
}

// recopy copies the streams again to the standbys that fell behind,
// as far as their queues take it.
func (m *hostMigration) recopy() {
	for _, w := range m.standbys {
		if w.behind {
			m.copyStreams(w)
		}
	}
}

// copyStream sends every standby the messages of player's stream st,
// whose numbering the host just learnt (a cold take-over); they go out
// once the standbys acknowledged the next tick.
func (m *hostMigration) copyStream(player uint16, st *playerStream) {
	due := m.tick() + 1
	for i := range st.out {
		o := &st.out[i]
		m.buf = appendPeerMessage(m.buf[:0], proto.PeerMessageFrame{Player: player, Copy: true, Seq: o.seq, Channel: o.channel, Data: o.data})
		m.toStandby(m.buf)
		o.release = due
	}
}

// ackedTick sets the stats' StandbyTick to the newest tick every
// standby holds; it reports false while one has acknowledged nothing,
// or fell behind on the streams' copies, or a standby left and no
// roster named the standbys since.
func (m *hostMigration) ackedTick() bool {
	if m.standbyLeft {
		return false
	}
	for i, w := range m.standbys {
		if !w.acked || w.behind {
			return false
		}
		if i == 0 || int32(w.tick-m.stats.StandbyTick) < 0 {
			m.stats.StandbyTick = w.tick
		}
	}
	return true
}

// held reports whether every standby holds what went out to it before
// tick's step (or there is no standby to wait for).
func (m *hostMigration) held(tick uint32) bool {
	return m.ackedTick() && (len(m.standbys) == 0 || int32(m.stats.StandbyTick-tick) >= 0)
}

// toStandby adds a copy frame to every standby's batch (flushCopies
// sends it).
func (m *hostMigration) toStandby(b []byte) {
	for _, w := range m.standbys {
		if !w.behind {
			w.batch = append(w.batch, b...)
			if len(w.batch) >= maxCopyBatch {
				m.flushCopy(w)
			}
		}
	}
}

// maxCopyBatch bounds a batch of copies (one reliable message).
const maxCopyBatch = 16 << 10

// flushCopies sends every standby its batch of copies. It runs before
// the standbys are fed a step (and so before they can acknowledge the
// tick a copy's release waits for).
func (m *hostMigration) flushCopies() {
	for _, w := range m.standbys {
		m.flushCopy(w)
	}
}

// flushCopy sends w its batch of copies. A standby that refuses it (its
// queue full) falls behind: it gets no more copies until recopy made
// them all again, so that it never holds a later copy without an
// earlier one.
func (m *hostMigration) flushCopy(w *warmStandby) {
	if len(w.batch) == 0 || w.behind {
		return
	}
	if w.c.SendFrame(w.batch) != nil {
		w.behind, w.copied = true, map[uint16]streamCopied{}
		m.stats.StandbyBehind++
	}
	w.batch = w.batch[:0]
}

// standbyAck takes standby c's acknowledgement of tick for epoch.
func (m *hostMigration) standbyAck(c *tickwire.Conn, a *proto.StandbyAckFrame) error {
	i := m.standbyOf(c)
	if i < 0 || a.Epoch != m.cfg.Epoch {
		return errNotStandby
	}
	w := m.standbys[i]
	m.stats.StandbyAcks++
	if !w.acked || int32(a.Tick-w.tick) > 0 {
		w.tick, w.acked = a.Tick, true
	}
	if m.ackedTick() {
		m.stats.StandbyLag = m.tick() - m.stats.StandbyTick
	}
	m.release()
	return nil
}

// addFeedStats adds b's counts to a.
func addFeedStats(a, b StandbyFeedStats) StandbyFeedStats {
	a.States += b.States
	a.Steps += b.Steps
	a.StateBytes += b.StateBytes
	a.StepBytes += b.StepBytes
	a.SendErrors += b.SendErrors
	return a
}
