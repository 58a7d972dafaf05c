package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// profiles are the loss suite's network conditions, from public presets
// (netem's examples, network-link-conditioner style Wi-Fi/4G/3G). A paced
// one runs the server with -snapshot-interval 2 and the bots with
// -input-interval 2: 30 Hz both ways at the 60 Hz tick.
var profiles = []struct {
	name, spec string
	paced      bool
}{
	{"LAN", "", false},
	{"Wi-Fi", "delay 5ms 1ms loss 2% reorder 2%", false},
	{"4G", "delay 50ms 10ms loss 4%", false},
	{"4G, 30 Hz", "delay 50ms 10ms loss 4%", true},
	{"3G", "delay 180ms 15ms loss 7%", false},
	{"terrible", "delay 100ms 20ms loss 20% reorder 4% duplicate 2%", false},
	{"burst loss", "loss gemodel 1% 30% 100% 0%", false},
	// The awful network of issue 20: heavy loss with duplicates and
	// reordering, where late deltas used to force resyncs.
	{"awful", "delay 90ms 30ms loss 12% duplicate 3% reorder 8%", false},
}

// TestLossSuite runs the server and bots through tickwire-netem under
// each profile (both directions) and checks every bot stayed connected,
// no reliable message was lost, duplicated or reordered, nobody desynced
// or resynced and late inputs stayed bounded. It prints a table of the bots'
// summaries: stalls are the frames whose interpolation ran out of
// snapshots, bounded those of them during which the lag-compensation
// bound (sim.ClientConfig.MaxInterpLag, the server's MaxRewind) held the
// interpolation delay below its target, stalls3s and bound3s the same
// once a client had played game.ConvergeTime (the first seconds'
// stalls are the estimators learning the path), and the resyncs by
// cause.
func TestLossSuite(t *testing.T) {
	t.Parallel() // eight light bots through netem: beside the migration tests (doc.go)
	if testing.Short() {
		t.Skip("loss suite in -short mode")
	}
	const n, duration = 8, "8s"
	var table, causes strings.Builder
	fmt.Fprintf(&table, "%-11s %9s %7s %7s %9s %9s %9s %8s %8s %7s %6s %7s %6s %9s %7s %8s %8s %8s %8s\n",
		"profile", "connected", "rtt50", "rtt99", "echo99", "down kb/s", "up kb/s", "reliable", "lost/dup", "inputs", "late", "resyncs", "desync", "rollbacks", "correct", "stalls", "bounded", "stalls3s", "bound3s")
	for _, p := range profiles {
		t.Run(strings.NewReplacer(" ", "-", ",", "").Replace(p.name), func(t *testing.T) {
			var srvArgs []string
			args := []string{"-n", fmt.Sprint(n), "-duration", duration}
			if p.paced {
				srvArgs = []string{"-snapshot-interval", "2"}
				args = append(args, "-input-interval", "2")
			}
			_, a := server(t, srvArgs...)
			args = append(args, "-server", "http://"+a.http)
			if p.spec != "" {
				proxy := start(t, "tickwire-netem", "-listen", "127.0.0.1:0", "-upstream", a.udp, "-spec", p.spec, "-seed", "7", "-stats-interval", "0")
				via := proxy.await(t, `listening on (\S+),`)
				args = append(args, "-via", via)
			}
			s, code := bots(t, args...)
			share := func(n, of uint64) float64 { return 100 * float64(n) / float64(max(of, 1)) }
			stalls, bounded := share(s.InterpStalls, s.InterpFrames), share(s.InterpStallsBounded, s.InterpFrames)
			stalls3, bounded3 := share(s.InterpStallsSettled, s.InterpFramesSettled), share(s.InterpStallsBoundedSettled, s.InterpFramesSettled)
			fmt.Fprintf(&table, "%-11s %6d/%-2d %7.1f %7.1f %9.1f %9.1f %9.1f %8d %4d/%-3d %7d %6d %7d %6d %9d %7d %7.2f%% %7.2f%% %7.2f%% %7.2f%%\n",
				p.name, s.Connected, s.Clients, s.RTTms.P50, s.RTTms.P99, s.EchoMs.P99, s.DownKbpsPerClient, s.UpKbpsPerClient,
				s.ReliableReceived, s.ReliableLost, s.ReliableDuplicates, s.InputsSent, s.LateInputs, s.Resyncs, s.Desyncs,
				s.Rollbacks, s.Corrections, stalls, bounded, stalls3, bounded3)
			if len(s.ResyncCauses) > 0 {
				fmt.Fprintf(&causes, "resyncs on %s by cause: %v\n", p.name, s.ResyncCauses)
			}
			if code != 0 {
				t.Errorf("tickwire-bot exit %d", code)
			}
			if s.Connected != n || s.Disconnects != 0 {
				t.Errorf("%d/%d connected, %d disconnects", s.Connected, n, s.Disconnects)
			}
			if s.ReliableLost+s.ReliableDuplicates+s.ReliableOutOfOrder != 0 || s.ReliableReceived == 0 {
				t.Errorf("reliable: %d received, %d lost, %d duplicated, %d out of order", s.ReliableReceived, s.ReliableLost, s.ReliableDuplicates, s.ReliableOutOfOrder)
			}
			if s.Desyncs != 0 {
				t.Errorf("%d desyncs", s.Desyncs)
			}
			if s.Resyncs != 0 {
				// Loss, duplication and reordering alone never need one
				// (issue 20); a resync here names its cause.
				t.Errorf("%d resyncs: %v", s.Resyncs, s.ResyncCauses)
			}
			if s.InputsSent > 0 && float64(s.LateInputs) > 0.05*float64(s.InputsSent) {
				t.Errorf("%d of %d inputs late", s.LateInputs, s.InputsSent)
			}
			if s.Rollbacks == 0 || s.InterpFrames == 0 {
				t.Errorf("the bots did not predict (%d rollbacks) or interpolate (%d frames)", s.Rollbacks, s.InterpFrames)
			}
		})
	}
	t.Logf("loss suite, %d bots each, %s per profile:\n%s%s", n, duration, table.String(), causes.String())
}
