package scenario_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
)

// Example shows the calls a server makes each tick for each client, how
// the packet notifications are wired, and what the client does with the
// frames, including a resync.
func Example() {
	// Server, once: the ring of recent states and the per-tick world view.
	ring := deltacomp.NewRing(deltacomp.RingConfig{}) // 64 revisions
	world := interest.NewWorld(interest.WorldConfig{Kinds: []interest.Kind{scenario.KindPlayer: {Weight: 4}}})
	// Server, per client: an encoder (baselines) and a scheduler (priorities).
	enc := deltacomp.NewEncoder(ring, deltacomp.EncoderConfig{})
	sched := interest.NewScheduler(interest.SchedulerConfig{Radius: 0, BandwidthCap: 0})
	// reliability's notifications go to the encoder, which records what
	// each packet carried; a lost packet's entities go on to the
	// scheduler, to be sent again.
	var lostIDs []proto.NetworkID
	onLost := func(seq uint16) {
		ids, known := enc.Lost(seq, lostIDs[:0])
		if known {
			sched.Lost(ids)
		} else {
			sched.LostUnknown() // too old to be remembered
		}
		lostIDs = ids[:0]
	}
	// Client: the replica.
	replica, _ := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: scenario.CubeRecordSize})

	game := scenario.NewCubes(scenario.CubesConfig{Count: 99})
	var frame scenario.Frame
	var packet []byte
	var seq uint16
	var sent []uint16
	for tick := 0; tick < 120; tick++ {
		// 1. The tick's state (sorted ids, records) into the ring and world.
		game.Next(&frame)
		if _, err := ring.Push(&frame.Snap); err != nil {
			panic(err)
		}
		world.Begin(frame.Snap.Tick)
		for i, id := range frame.Snap.IDs {
			world.Add(id, frame.Pos[i], frame.Kind[i])
		}
		world.End(ring.Changed())

		// 2. Per client: choose entities, write the frame into the packet.
		now := time.Unix(0, 0).Add(time.Duration(tick) * time.Second / 60)
		enc.Prepare()
		sel, ok := sched.Schedule(now, world, interest.DefaultBudget, enc)
		if ok {
			var err error
			packet, err = enc.AppendFrame(packet[:0], seq, sel)
			if err != nil {
				panic(err)
			}
			sent = append(sent, seq)
			seq++
		}

		// 3. The client applies the frame (here: delivered at once, except
		// packet 10, which is lost).
		if ok && seq-1 != 10 {
			f, _, _ := proto.ParseSnapshotDeltaFrame(packet)
			if err := replica.Apply(&f); errors.Is(err, deltacomp.ErrBaselineMissing) {
				req := replica.ResyncRequest(proto.ResyncBaselineMissing)
				_ = req // sent to the server as a proto.ResyncRequestFrame
			}
		}

		// 4. Acks come back: every packet but the 10th is delivered.
		for _, s := range sent {
			if s == 10 {
				onLost(s)
				continue
			}
			enc.Delivered(s)
		}
		sent = sent[:0]

		// 5. A resync at tick 60: forget baselines, send a full snapshot
		// reliably, and take it as baseline once delivered.
		if tick == 60 {
			var codecs deltacomp.Codecs
			enc.Reset()
			rev := ring.Revision()
			full, _ := codecs.AppendFullSnapshot(nil, ring.Latest(), proto.CauseResync, rev, proto.CodecZstd)
			ff, _, _ := proto.ParseFullSnapshotFrame(full)
			if err := replica.ApplyFull(&ff, &codecs); err != nil {
				panic(err)
			}
			enc.FullDelivered(rev, ring.Latest().IDs)
		}
	}
	st := replica.State()
	same := st.Len() == ring.Latest().Len() && string(st.Records) == string(ring.Latest().Records)
	fmt.Println("entities:", st.Len(), "client state equals server state:", same)
	// Output: entities: 100 client state equals server state: true
}
