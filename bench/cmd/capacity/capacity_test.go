package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

// TestWriteSVG: the chart of three steps is well-formed XML, an <svg>
// with a polyline of three points per series (p50, p99, server CPU, bot
// CPU), the budget line, and the failed step drawn hollow.
func TestWriteSVG(t *testing.T) {
	pts := []point{
		{players: 200, p50: 4, p99: 7, serverCPU: 0.6, botCPU: 0.2, held: true},
		{players: 300, p50: 6, p99: 11, serverCPU: 0.9, botCPU: 0.3, held: true},
		{players: 400, p50: 9, p99: 80, serverCPU: 1.6, botCPU: 0.4}, // off the scale, not held
	}
	var buf bytes.Buffer
	if err := writeSVG(&buf, `arena <300 NPCs> & "60 Hz"`, pts, 16.7, 2); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var root string
	polylines, hollow, budget := 0, 0, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch se.Name.Local {
		case "polyline":
			polylines++
			if n := len(strings.Fields(attr["points"])); n != len(pts) {
				t.Errorf("polyline %d has %d points, want %d", polylines, n, len(pts))
			}
		case "circle":
			if attr["fill"] == "white" {
				hollow++
			}
		case "line":
			if attr["stroke"] == "#d00" {
				budget = true
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	if polylines != 4 || hollow != 4 || !budget {
		t.Fatalf("%d polylines (want 4), %d hollow markers (want 4, the failed step's), budget line %v", polylines, hollow, budget)
	}
	if err := writeSVG(io.Discard, "", nil, 16.7, 2); err == nil {
		t.Fatal("writeSVG drew no steps without an error")
	}
}

// TestParseFlags: the defaults are valid and each bad flag is refused
// with a message naming it.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o.start != 200 || o.max != 1000 || o.hold != 30*time.Second || o.pin != "none" || o.freshBots || o.botPriority != "idle" {
		t.Fatalf("defaults %+v", o)
	}
	if o, err := parseFlags([]string{"-fresh-bots"}, io.Discard); err != nil || !o.freshBots {
		t.Fatalf("-fresh-bots: %+v, %v", o, err)
	}
	if o, err := parseFlags([]string{"-bot-priority", "normal"}, io.Discard); err != nil || o.botPriority != "normal" {
		t.Fatalf("-bot-priority normal: %+v, %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-start", "0"}, "-start"},
		{[]string{"-step", "0"}, "-step"},
		{[]string{"-start", "500", "-max", "400"}, "-max 400 is below -start 500"},
		{[]string{"-hold", "500ms"}, "-hold"},
		{[]string{"-warmup", "-1s"}, "-warmup"},
		{[]string{"-tick", "0"}, "-tick"},
		{[]string{"-npcs", "-3"}, "-npcs"},
		{[]string{"-snapshot-interval", "0"}, "-snapshot-interval"},
		{[]string{"-snapshot-interval", "9"}, "-snapshot-interval"},
		{[]string{"-input-interval", "5"}, "-input-interval"},
		{[]string{"-verify", "-1"}, "-verify"},
		{[]string{"-groups", "999"}, "-groups"},
		{[]string{"-pin", "both"}, "-pin"},
		{[]string{"-bot-priority", "realtime"}, "-bot-priority"},
		{[]string{"-bin", t.TempDir()}, "-bin"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// TestDiff: percentiles come from the bucket deltas, rates per client
// from the byte counters, CPU in cores.
func TestDiff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := reading{at: t0, buckets: map[float64]float64{0.005: 100, 0.01: 100, 0.02: 100, 1e10: 100}, count: 100,
		bytesOut: 0, bytesIn: 0, sockDrops: 40, missing: 1000, serverCPU: time.Second, botCPU: 0,
		machine: []cpuTimes{{total: 100, idle: 50}}}
	b := reading{at: t0.Add(10 * time.Second), buckets: map[float64]float64{0.005: 350, 0.01: 680, 0.02: 700, 1e10: 700}, count: 700,
		players: 500, bytesOut: 500 * 10 * 1000, bytesIn: 500 * 10 * 250, sockDrops: 240, missing: 4000, serverCPU: 16 * time.Second, botCPU: 3 * time.Second,
		machine: []cpuTimes{{total: 1100, idle: 150}}}
	r := diff(a, b, 500, 60)
	if r.p50 != 10*time.Millisecond || r.p99 != 20*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 10ms 20ms", r.p50, r.p99)
	}
	if r.serverCPU != 1.5 || r.botCPU != 0.3 || r.downKbps != 8 || r.upKbps != 2 {
		t.Errorf("server %.2f bots %.2f cores, down %.1f up %.1f kbit/s; want 1.5, 0.3, 8, 2", r.serverCPU, r.botCPU, r.downKbps, r.upKbps)
	}
	if r.tickRate != 60 || r.botUsPerTick != 10 || r.serverUsPerTick != 50 {
		t.Errorf("tick rate %.1f, bot %.2f µs per client-tick, server %.2f µs per player-tick; want 60, 10, 50", r.tickRate, r.botUsPerTick, r.serverUsPerTick)
	}
	if r.sockDrops != 20 {
		t.Errorf("socket drops %.1f/s, want 20", r.sockDrops)
	}
	if r.inputsMissing != 0.01 { // 3,000 of 500 players × 600 ticks
		t.Errorf("inputs missing %v of the player ticks, want 0.01", r.inputsMissing)
	}
	if len(r.machineBusy) != 1 || r.machineBusy[0] != 0.9 {
		t.Errorf("machine busy %v, want [0.9]", r.machineBusy)
	}
}

// TestPrintTable: every row has the header's columns, and a step the
// server fell behind in shows its ticks per second below the rate.
func TestPrintTable(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, []row{
		{players: 600, p50: 9540 * time.Microsecond, p99: 13740 * time.Microsecond, tickRate: 60, serverCPU: 0.66, held: true},
		{players: 700, p50: 19780 * time.Microsecond, p99: 28480 * time.Microsecond, tickRate: 43.5, serverCPU: 1},
	}, 2)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want header, rule and 2 rows:\n%s", len(lines), b.String())
	}
	cols := strings.Count(lines[0], "|")
	for _, l := range lines[1:] {
		if n := strings.Count(l, "|"); n != cols {
			t.Errorf("%d column bars, header %d: %s", n, cols, l)
		}
	}
	if !strings.Contains(lines[0], "| ticks/s |") || !strings.Contains(lines[3], "| 28.48 ms | 43.5 |") {
		t.Errorf("no ticks per second after the p99:\n%s", b.String())
	}
}

func TestRawProfileName(t *testing.T) {
	for file, want := range map[string]string{
		"bench/capacity-profile.txt": "bench/capacity-profile.pprof",
		"top":                        "top.pprof",
		"p.pprof":                    "p.pprof.pprof",
	} {
		if got := rawProfileName(file); got != want {
			t.Errorf("rawProfileName(%q) = %q, want %q", file, got, want)
		}
	}
}

// TestTitleLines: a title longer than a line breaks at its "; "
// separators into lines that fit, which read back as the title; a short
// one stays one line.
func TestTitleLines(t *testing.T) {
	long := "tickwire-server: arena, 300 NPCs, 60 Hz (snapshots 30 Hz, inputs 30 Hz); 2 × AMD EPYC; pinning none; bots at idle priority"
	lines := titleLines(long)
	if len(lines) != 2 {
		t.Fatalf("%d lines %q, want 2", len(lines), lines)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > titleRunes {
			t.Errorf("line of %d runes, more than %d: %q", n, titleRunes, l)
		}
	}
	if got := strings.Join(lines, " "); got != long {
		t.Errorf("lines read back as %q", got)
	}
	if lines := titleLines("arena; 60 Hz"); len(lines) != 1 || lines[0] != "arena; 60 Hz" {
		t.Errorf("short title: %q", lines)
	}
}

// TestDisconnectsBetween: the reasons the server ended connections for
// during a step, from two readings of its counters.
func TestDisconnectsBetween(t *testing.T) {
	a := reading{disconnects: map[string]float64{"timeout": 2, "closed": 5}}
	b := reading{disconnects: map[string]float64{"timeout": 902, "closed": 5, "too_slow": 98}}
	if got, want := disconnectsBetween(a, b), "timeout 900, too_slow 98"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := disconnectsBetween(b, b); got != "none" {
		t.Errorf("no change: got %q, want none", got)
	}
}
