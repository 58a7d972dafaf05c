package netem

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
	}{
		{"", Spec{}},
		{"delay 50ms 10ms loss 5%", Spec{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: Loss{Model: LossRandom, Percent: 5}}},
		{"latency 1s 250us 25% distribution normal", Spec{Delay: time.Second, Jitter: 250 * time.Microsecond, DelayCorrelation: 25, Distribution: Normal}},
		{"delay 1.5ms 500ns distribution paretonormal", Spec{Delay: 1500 * time.Microsecond, Jitter: 500, Distribution: ParetoNormal}},
		{"delay 20MSEC 2Usec distribution pareto", Spec{Delay: 20 * time.Millisecond, Jitter: 2 * time.Microsecond, Distribution: Pareto}},
		{"loss random 0.1% 25%", Spec{Loss: Loss{Model: LossRandom, Percent: 0.1, Correlation: 25}}},
		{"drop 3", Spec{Loss: Loss{Model: LossRandom, Percent: 3}}},
		{"loss gemodel 1%", Spec{Loss: Loss{Model: LossGE, P: 1, R: 100, OneMinusH: 100}}},
		{"loss gemodel 1% 10% 70% 0.1%", Spec{Loss: Loss{Model: LossGE, P: 1, R: 10, OneMinusH: 70, OneMinusK: 0.1}}},
		{"duplicate 1% 5%", Spec{Duplicate: 1, DuplicateCorrelation: 5}},
		{"delay 10ms reorder 25% 50%", Spec{Delay: 10 * time.Millisecond, Reorder: 25, ReorderCorrelation: 50, Gap: 1}},
		{"delay 10ms reorder 25% gap 5", Spec{Delay: 10 * time.Millisecond, Reorder: 25, Gap: 5}},
		{"gap 5 delay 10ms reorder 25%", Spec{Delay: 10 * time.Millisecond, Reorder: 25, Gap: 5}},
		{"corrupt 0.5% 10%", Spec{Corrupt: 0.5, CorruptCorrelation: 10}},
		{"rate 1mbit", Spec{Rate: 125000}},
		{"rate 8000", Spec{Rate: 1000}},      // bare: bits/s
		{"rate 100kbps", Spec{Rate: 100000}}, // tc: kbps is kilobytes
		{"rate 1Mibit", Spec{Rate: 1 << 17}}, // IEC, any case
		{"rate 1mbit 42 48 5", Spec{Rate: 125000, PacketOverhead: 42, CellSize: 48, CellOverhead: 5}},
		{"rate 1mbit -4", Spec{Rate: 125000, PacketOverhead: -4}},
		{"limit 50 delay 1ms", Spec{Limit: 50, Delay: time.Millisecond}},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) =\n %#v, want\n %#v", tc.in, got, tc.want)
			continue
		}
		// String prints tc syntax that parses back to the same spec.
		again, err := Parse(got.String())
		if err != nil || again != got {
			t.Errorf("Parse(%q.String() = %q) = %#v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseErrorsNameTheToken(t *testing.T) {
	for _, tc := range []struct{ in, token, msg string }{
		{"delay 50xs", "50xs", "unknown time unit"},
		{"delay 50", "50", "needs a unit"},
		{"delay 50ms 10ms 25% distribution gaussian", "gaussian", "unknown distribution"},
		{"loss 105%", "105%", "outside 0..100"},
		{"loss random", "random", "needs a loss percentage"},
		{"loss state 1%", "state", "4-state"},
		{"loss 1% loss 2%", "loss", "twice"},
		{"loss banana", "banana", "unknown loss model"},
		{"duplicate 5x", "5x", "percentage"},
		{"reorder 25%", "reorder", "without some delay"},
		{"delay 1ms gap 5", "gap", "without a reorder"},
		{"delay 1ms distribution normal", "distribution", "needs a delay and a jitter"},
		{"rate 1mbps5", "1mbps5", "unknown rate unit"},
		{"rate 50%", "50%", "relative to the interface"},
		{"rate 0bit", "0bit", "at least"},
		{"limit 0", "0", "positive"},
		{"delay 1ms 3s", "3s", "jitter above"},
		{"ecn", "ecn", "not supported"},
		{"jitter 5ms", "jitter", "unknown keyword"},
		{"delay", "delay", "needs a delay"},
	} {
		_, err := Parse(tc.in)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SpecError", tc.in, err)
			continue
		}
		if se.Token != tc.token || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), `"`+tc.token+`"`) {
			t.Errorf("Parse(%q): %v (token %q); want token %q and %q", tc.in, err, se.Token, tc.token, tc.msg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"delay 50ms 10ms 25% distribution normal loss 5% duplicate 1%",
		"loss gemodel 1% 10% 70% 0.1%", "delay 10ms reorder 25% 50% gap 5",
		"corrupt 0.5% rate 1mbit 42 48 5 limit 100", "drop 3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SpecError", err)
			}
			return
		}
		again, err := Parse(sp.String())
		if err != nil || again != sp {
			t.Fatalf("%q parsed to %#v, printed %q, reparsed %#v, %v", s, sp, sp.String(), again, err)
		}
	})
}
