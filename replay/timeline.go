package replay

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Timeline is the picture of one or two recordings, tick by tick: for
// each, where its checksums agreed (with its re-run, or with the other
// recording), its full states, joins and leaves, late inputs, resyncs,
// desyncs, rollbacks and gaps; and the first divergence, marked across
// them. WriteHTML draws it as an SVG in an HTML page.
type Timeline struct {
	Recordings []*Recording
	// Checks are the recordings' re-runs (Check), by index (nil, or
	// shorter: not re-run).
	Checks []*CheckReport
	// Bisect is the comparison of the two recordings, if any.
	Bisect *BisectReport
}

// shortRole names a lane's recording.
var shortRole = [roleEnd]string{"", "server", "client", "commits server", "commits client"}

// lane is what the timeline shows of one recording.
type lane struct {
	title      string
	sumsLabel  string // what its sums row shows
	first      uint32
	last       uint32
	sums       []uint32 // ticks with a checksum (or a first step, for a client)
	keys       []uint32 // full states
	marks      []mark
	agreeFrom  uint32 // the ticks shown as agreeing: agreeFrom..agreeTo
	agreeTo    uint32
	agrees     bool
	differs    uint32 // the tick shown as differing
	hasDiffers bool
	skipped    []uint32 // ticks a bisection skipped
	// the states a commits-mode client kept and wrote after a desync
	keptFrom, keptTo uint32
	hasKept          bool
}

// mark is an event drawn on a lane.
type mark struct {
	tick  uint32
	kind  string // the CSS class: join, leave, late, resync, desync, rollback, gap, session
	label string
}

// Pixel geometry of the picture.
const (
	tlWidth   = 1200
	tlLeft    = 150 // room for the lanes' names
	tlRight   = 20
	tlTop     = 60
	tlLane    = 110 // height of a lane
	tlRowSums = 22  // offsets within a lane of its rows
	tlRowKeys = 44
	tlRowMark = 70
)

// WriteHTML writes the timeline as an HTML page holding one SVG.
func (t *Timeline) WriteHTML(w io.Writer) error {
	lanes := make([]lane, len(t.Recordings))
	lo, hi := ^uint32(0), uint32(0)
	for i, r := range t.Recordings {
		lanes[i] = laneOf(r)
		lanes[i].title = fmt.Sprintf("%c: %s", 'A'+i, shortRole[r.Header.Role])
		if i < len(t.Checks) && t.Checks[i] != nil {
			c := t.Checks[i]
			lanes[i].agrees, lanes[i].agreeFrom, lanes[i].agreeTo = c.Steps > 0, c.First, c.Last
			if c.Mismatch != nil {
				lanes[i].agreeTo = c.Mismatch.Tick - 1
				lanes[i].differs, lanes[i].hasDiffers = c.Mismatch.Tick, true
			}
		}
		if t.Bisect != nil && t.Bisect.Compared > 0 {
			b := t.Bisect
			lanes[i].agrees, lanes[i].agreeFrom, lanes[i].agreeTo = true, b.From, b.To
			if b.Diverged {
				lanes[i].agreeTo = b.Tick - 1
				lanes[i].differs, lanes[i].hasDiffers = b.Tick, true
			}
			lanes[i].skipped = b.skipped
		}
		if lanes[i].last >= lanes[i].first {
			lo, hi = min(lo, lanes[i].first), max(hi, lanes[i].last)
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if hi == lo {
		hi++
	}
	x := func(tick uint32) float64 {
		return tlLeft + float64(int64(tick)-int64(lo))*float64(tlWidth-tlLeft-tlRight)/float64(hi-lo)
	}
	height := tlTop + tlLane*len(lanes) + 70
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tickwire replay timeline</title>
<style>
body { font: 14px sans-serif; margin: 16px; }
svg text { font: 12px sans-serif; }
.axis { stroke: #888; }
.agree { fill: #cdeccd; }
.sum { stroke: #2a8a2a; }
.sum.after { stroke: #bbb; }
.key { fill: #3b6fb6; } .kept { fill: #9db8dd; }
.differs { stroke: #d22; stroke-width: 3; }
.join { fill: #2a8a2a; } .leave { fill: #7a4a00; } .session { fill: #555; }
.late { fill: #e69b00; } .resync { fill: #8a2be2; } .desync { fill: #d22; } .rollback { fill: #e69b00; } .gap { fill: #000; }
.skipped { stroke: #e69b00; }
</style></head><body>
<h1>tickwire replay timeline</h1>
%s
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">
`, t.summaryHTML(), tlWidth, height, tlWidth, height)
	// The tick axis, with about ten labelled ticks.
	axisY := tlTop - 20
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", tlLeft, axisY, tlWidth-tlRight, axisY)
	step := niceStep((hi - lo) / 10)
	for tk := (lo + step - 1) / step * step; tk <= hi; tk += step {
		fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n",
			x(tk), axisY-4, x(tk), axisY+4, x(tk), axisY-8, tk)
	}
	fmt.Fprintf(&b, `<text x="4" y="%d">tick</text>`+"\n", axisY-8)
	for i, l := range lanes {
		y := tlTop + i*tlLane
		fmt.Fprintf(&b, `<g class="lane" data-title="%s">`+"\n", html.EscapeString(l.title))
		fmt.Fprintf(&b, `<text x="4" y="%d" font-weight="bold">%s</text>`+"\n", y+8, html.EscapeString(l.title))
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text><text x="4" y="%d">full states</text><text x="4" y="%d">events</text>`+"\n",
			y+tlRowSums+4, l.sumsLabel, y+tlRowKeys+4, y+tlRowMark+4)
		if l.agrees && int32(l.agreeTo-l.agreeFrom) >= 0 {
			fmt.Fprintf(&b, `<rect class="agree" x="%.1f" y="%d" width="%.1f" height="16"><title>ticks %d to %d agree</title></rect>`+"\n",
				x(l.agreeFrom), y+tlRowSums-8, max(x(l.agreeTo)-x(l.agreeFrom), 1), l.agreeFrom, l.agreeTo)
		}
		for _, s := range thin(l.sums, hi-lo) {
			class := "sum"
			if l.hasDiffers && int32(s-l.differs) > 0 {
				class = "sum after"
			}
			fmt.Fprintf(&b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", class, x(s), y+tlRowSums-6, x(s), y+tlRowSums+6)
		}
		for _, s := range thin(l.skipped, hi-lo) {
			fmt.Fprintf(&b, `<line class="skipped" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x(s), y+tlRowSums+7, x(s), y+tlRowSums+10)
		}
		if l.hasKept {
			fmt.Fprintf(&b, `<rect class="kept" x="%.1f" y="%d" width="%.1f" height="6"><title>states of ticks %d to %d, kept for the desync</title></rect>`+"\n",
				x(l.keptFrom), y+tlRowKeys-3, max(x(l.keptTo)-x(l.keptFrom), 2), l.keptFrom, l.keptTo)
		}
		for _, k := range l.keys {
			fmt.Fprintf(&b, `<rect class="key" x="%.1f" y="%d" width="6" height="6" transform="rotate(45 %.1f %d)"><title>full state, tick %d</title></rect>`+"\n",
				x(k)-3, y+tlRowKeys-3, x(k), y+tlRowKeys, k)
		}
		for _, m := range l.marks {
			fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%d" r="4"><title>tick %d: %s</title></circle>`+"\n",
				m.kind, x(m.tick), y+tlRowMark, m.tick, html.EscapeString(m.label))
		}
		if l.hasDiffers {
			fmt.Fprintf(&b, `<line class="differs" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x(l.differs), y+4, x(l.differs), y+tlLane-14)
		}
		fmt.Fprintf(&b, "</g>\n")
	}
	if d, ok := t.divergence(); ok {
		fmt.Fprintf(&b, `<g id="divergence"><line class="differs" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" fill="#d22" text-anchor="middle">first divergence: tick %d</text></g>`+"\n",
			x(d), tlTop-14, x(d), tlTop+tlLane*len(lanes), x(d), tlTop+tlLane*len(lanes)+16, d)
	}
	ly := tlTop + tlLane*len(lanes) + 40
	fmt.Fprintf(&b, `<g id="legend" transform="translate(%d %d)">`+
		`<rect class="agree" x="0" y="-10" width="24" height="12"/><text x="30" y="0">agree</text>`+
		`<line class="sum" x1="90" y1="-10" x2="90" y2="2"/><text x="96" y="0">checksum</text>`+
		`<rect class="key" x="170" y="-8" width="6" height="6"/><text x="182" y="0">full state</text>`+
		`<circle class="join" cx="260" cy="-4" r="4"/><text x="268" y="0">join</text>`+
		`<circle class="leave" cx="310" cy="-4" r="4"/><text x="318" y="0">leave</text>`+
		`<circle class="late" cx="365" cy="-4" r="4"/><text x="373" y="0">late input / rollback</text>`+
		`<circle class="resync" cx="510" cy="-4" r="4"/><text x="518" y="0">resync</text>`+
		`<circle class="desync" cx="575" cy="-4" r="4"/><text x="583" y="0">desync</text>`+
		`<line class="differs" x1="650" y1="-10" x2="650" y2="2"/><text x="656" y="0">first divergence</text>`+
		`<rect class="kept" x="770" y="-7" width="24" height="6"/><text x="800" y="0">states kept for a desync</text>`+
		"</g>\n", tlLeft, ly)
	b.WriteString("</svg>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// divergence is the tick the timeline marks across the lanes.
func (t *Timeline) divergence() (uint32, bool) {
	if t.Bisect != nil && t.Bisect.Diverged {
		return t.Bisect.Tick, true
	}
	for _, c := range t.Checks {
		if c != nil && c.Mismatch != nil {
			return c.Mismatch.Tick, true
		}
	}
	return 0, false
}

// summaryHTML is the text above the picture.
func (t *Timeline) summaryHTML() string {
	var b strings.Builder
	b.WriteString("<ul>\n")
	for i, r := range t.Recordings {
		h := &r.Header
		fmt.Fprintf(&b, "<li>%c: %s — %s of game %q (id %d), segment %d</li>\n", 'A'+i, html.EscapeString(r.Path), h.Role, h.Game, h.GameID, h.Segment)
	}
	b.WriteString("</ul>\n")
	if d, ok := t.divergence(); ok {
		fmt.Fprintf(&b, "<p>First divergence at tick <b>%d</b>.</p>\n", d)
	} else {
		b.WriteString("<p>No divergence.</p>\n")
	}
	return b.String()
}

// laneOf gathers what the timeline shows of r.
func laneOf(r *Recording) lane {
	h := &r.Header
	l := lane{sumsLabel: "checksums", first: ^uint32(0)}
	if h.Role == RoleClient {
		l.sumsLabel = "first steps"
	}
	var step sim.StepRecord
	for _, x := range r.Records {
		l.first, l.last = min(l.first, x.Tick), max(l.last, x.Tick)
		switch x.Type {
		case RecordChecksum, RecordPredicted:
			l.sums = append(l.sums, x.Tick)
		case RecordState, RecordConfirmed:
			l.keys = append(l.keys, x.Tick)
		case RecordCommitted:
			c, err := ParseCommitted(x.Body, x.Tick)
			switch {
			case err != nil:
			case c.Cause != StateBeforeDesync:
				l.keys = append(l.keys, x.Tick)
			case !l.hasKept:
				l.keptFrom, l.keptTo, l.hasKept = x.Tick, x.Tick, true
			default:
				l.keptFrom, l.keptTo = min(l.keptFrom, x.Tick), max(l.keptTo, x.Tick)
			}
		case RecordStep:
			if ParseStep(x.Body, x.Tick, h.Schema.InputSize, &step) == nil {
				for _, c := range step.Changes {
					l.marks = append(l.marks, changeMark(x.Tick, c.Player, c.Join))
				}
				if n := missing(&step); n > 0 {
					l.marks = append(l.marks, mark{x.Tick, "late", fmt.Sprintf("%d input(s) late or lost", n)})
				}
			}
		case RecordCommands:
			cmds, err := ParseCommands(x.Body, x.Tick, h.Schema.InputSize)
			for _, c := range cmds {
				if err == nil && c.Kind != 0 {
					l.marks = append(l.marks, changeMark(x.Tick, c.Player, c.Kind == 1))
				}
			}
		case RecordCheck:
			if _, ok, err := ParseCheck(x.Body); err == nil && ok {
				l.sums = append(l.sums, x.Tick)
			}
		case RecordEvent:
			if e, err := ParseEvent(x.Body); err == nil {
				l.marks = append(l.marks, eventMark(h.Role, x.Tick, &e))
			}
		}
	}
	slices.Sort(l.sums)
	l.sums = slices.Compact(l.sums)
	if l.first > l.last {
		l.first, l.last = 0, 0
	}
	return l
}

func changeMark(tick uint32, player uint16, join bool) mark {
	if join {
		return mark{tick, "join", fmt.Sprintf("player %d joins", player)}
	}
	return mark{tick, "leave", fmt.Sprintf("player %d leaves", player)}
}

func eventMark(role Role, tick uint32, e *Event) mark {
	label := e.Kind.String()
	switch e.Kind {
	case EventJoin, EventLeave:
		return changeMark(tick, e.Player, e.Kind == EventJoin)
	case EventRollback:
		label = fmt.Sprintf("rollback (%d ticks re-simulated)", e.Arg)
	case EventGap:
		label = fmt.Sprintf("gap: %d chunks of records lost", e.Arg)
	case EventSession:
		label = "session: " + e.Text
	case EventResync:
		if role.Commits() {
			label = "resync: " + proto.ResyncReason(e.Arg).String()
		} else {
			label = "full snapshot: " + proto.SnapshotCause(e.Arg).String()
		}
	}
	return mark{tick, e.Kind.String(), label}
}

// missing counts a step's inputs that arrived too late or not at all.
func missing(s *sim.StepRecord) int {
	n := 0
	for _, in := range s.Inputs {
		if in.Missing {
			n++
		}
	}
	return n
}

// thin keeps at most one tick per pixel's worth of ticks of span.
func thin(ticks []uint32, span uint32) []uint32 {
	per := span / (tlWidth - tlLeft - tlRight)
	if per <= 1 {
		return ticks
	}
	var out []uint32
	for _, t := range ticks {
		if n := len(out); n == 0 || t-out[n-1] >= per {
			out = append(out, t)
		}
	}
	return out
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(s uint32) uint32 {
	p := uint32(1)
	for {
		for _, m := range []uint32{1, 2, 5} {
			if m*p >= s {
				return m * p
			}
		}
		p *= 10
	}
}
