package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spec is one direction's impairment, in the terms of Linux netem. The
// zero value impairs nothing. Parse builds one from tc's argument syntax;
// String prints it back in that syntax.
//
// Percentages are 0..100. Correlations follow netem's (known to be
// approximate) scheme: each draw is a weighted average of a fresh random
// number and the previous draw.
type Spec struct {
	// Delay is added to every datagram; Jitter spreads it over
	// [Delay-Jitter, Delay+Jitter) (uniform) or by the Distribution's
	// shape with Jitter as its standard deviation. Delays may reorder
	// datagrams, as in netem.
	Delay, Jitter    time.Duration
	DelayCorrelation float64
	Distribution     Distribution

	Loss Loss

	Duplicate, DuplicateCorrelation float64

	// Reorder sends this percentage of datagrams at once, ahead of the
	// delayed ones. Gap N makes only every Nth datagram a candidate
	// (netem's "gap"); Parse sets it to 1 when reorder is given without.
	Reorder, ReorderCorrelation float64
	Gap                         uint32

	// Corrupt flips one random bit in this percentage of datagrams.
	Corrupt, CorruptCorrelation float64

	// Rate limits the link to this many bytes per second (netem "rate";
	// 0: unlimited). Each datagram takes (len+PacketOverhead) bytes of
	// serialisation time, rounded up to whole cells of CellSize bytes
	// plus CellOverhead each when CellSize is set. Lengths are UDP
	// payloads: add 42 (IPv4) or 62 (IPv6) as PacketOverhead to count
	// Ethernet, IP and UDP headers the way tc does on a veth.
	Rate           uint64
	PacketOverhead int32
	CellSize       uint32
	CellOverhead   int32

	// Limit is the most datagrams queued at once; more are dropped
	// (Stats.Overlimit). Zero selects 1000, netem's default.
	Limit int
}

// Distribution shapes the delay jitter.
type Distribution uint8

const (
	Uniform      Distribution = iota // netem's default, no table
	Normal                           // normal.dist
	Pareto                           // pareto.dist
	ParetoNormal                     // paretonormal.dist
)

var distNames = [...]string{"uniform", "normal", "pareto", "paretonormal"}

func (d Distribution) String() string {
	if int(d) < len(distNames) {
		return distNames[d]
	}
	return fmt.Sprintf("Distribution(%d)", uint8(d))
}

// LossModel selects how datagrams are lost.
type LossModel uint8

const (
	LossNone   LossModel = iota
	LossRandom           // independent (or correlated) random loss
	LossGE               // Gilbert-Elliott two-state model
)

// Loss is the loss model and its parameters.
type Loss struct {
	Model LossModel
	// Random: Percent lost, with Correlation.
	Percent, Correlation float64
	// Gilbert-Elliott (percentages): P moves good→bad, R bad→good; in the
	// bad state a datagram is lost with probability OneMinusH, in the
	// good state with OneMinusK. Parse's defaults are tc's: R 100, 1-h
	// 100, 1-k 0 (the simple Gilbert model: every datagram in the bad
	// state is lost, a burst lasts 1/R datagrams on average).
	P, R, OneMinusH, OneMinusK float64
}

// DefaultLimit is Spec.Limit's default.
const DefaultLimit = 1000

// maxJitter is the largest jitter netem supports (a signed 32-bit count
// of nanoseconds).
const maxJitter = time.Duration(math.MaxInt32)

// SpecError reports a spec that does not parse, naming the token.
type SpecError struct {
	Spec  string // the whole spec
	Token string // the offending token ("" at the end of the spec)
	Index int    // its position among the spec's tokens, from 0
	Msg   string
}

func (e *SpecError) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("netem spec %q: %s", e.Spec, e.Msg)
	}
	return fmt.Sprintf("netem spec %q: token %d %q: %s", e.Spec, e.Index+1, e.Token, e.Msg)
}

// parser walks a spec's tokens.
type parser struct {
	spec string
	toks []string
	i    int
}

func (p *parser) errAt(i int, format string, args ...any) error {
	tok := ""
	if i < len(p.toks) {
		tok = p.toks[i]
	}
	return &SpecError{Spec: p.spec, Token: tok, Index: i, Msg: fmt.Sprintf(format, args...)}
}

// next consumes the token after keyword and returns its index.
func (p *parser) next(what string) (int, error) {
	if p.i+1 >= len(p.toks) {
		return 0, p.errAt(p.i, "needs %s after it", what)
	}
	p.i++
	return p.i, nil
}

// nextIsNumber is tc's NEXT_IS_NUMBER: an optional argument follows when
// the next token starts with a digit.
func (p *parser) nextIsNumber() bool {
	return p.i+1 < len(p.toks) && p.toks[p.i+1] != "" && p.toks[p.i+1][0] >= '0' && p.toks[p.i+1][0] <= '9'
}

func (p *parser) nextIsSignedNumber() bool {
	return p.nextIsNumber() || (p.i+1 < len(p.toks) && strings.HasPrefix(p.toks[p.i+1], "-"))
}

func (p *parser) time(what string) (time.Duration, error) {
	i, err := p.next(what)
	if err != nil {
		return 0, err
	}
	d, err := parseTime(p.toks[i])
	if err != nil {
		return 0, p.errAt(i, "%s: %v", what, err)
	}
	return d, nil
}

func (p *parser) percent(what string) (float64, error) {
	i, err := p.next(what)
	if err != nil {
		return 0, err
	}
	v, err := parsePercent(p.toks[i])
	if err != nil {
		return 0, p.errAt(i, "%s: %v", what, err)
	}
	return v, nil
}

// optPercent parses an optional percentage argument.
func (p *parser) optPercent(what string, dst *float64) error {
	if !p.nextIsNumber() {
		return nil
	}
	v, err := p.percent(what)
	*dst = v
	return err
}

// Parse reads a netem argument list as tc accepts it after "netem", for
// example "delay 50ms 10ms 25% distribution normal loss 5% duplicate 1%".
//
// Supported: limit PACKETS; delay (or latency) TIME [JITTER
// [CORRELATION]]; distribution uniform|normal|pareto|paretonormal; loss
// (or drop) [random] PERCENT [CORRELATION]; loss gemodel P [R [1-H
// [1-K]]]; duplicate PERCENT [CORRELATION]; reorder PERCENT
// [CORRELATION] [gap DISTANCE] (gap may also stand alone); corrupt
// PERCENT [CORRELATION]; rate RATE [PACKETOVERHEAD [CELLSIZE
// [CELLOVERHEAD]]]. Keywords must be spelt out (tc also takes prefixes).
//
// Times need a unit (s, sec, ms, msec, us, usec, ns, nsec): tc versions
// disagree on what a bare number means. Percentages may omit "%". Rates
// take tc's units, case-insensitively: bit, kbit, mbit, gbit, tbit,
// kibit..tibit (bits per second; a bare number is bits per second too)
// and bps, kbps, mbps, gbps, tbps, kibps..tibps (BYTES per second, as in
// tc: "kbps" is kilobytes).
//
// Not supported (an error names them): loss state (4-state model), ecn,
// slot, rate as a percentage of the interface.
//
// The checks tc makes are made here too: reorder needs a delay, gap needs
// reorder, distribution needs delay and jitter, loss may appear once.
func Parse(s string) (Spec, error) {
	p := &parser{spec: s, toks: strings.Fields(s)}
	var sp Spec
	var reorderAt, gapAt, distAt, lossAt = -1, -1, -1, -1
	for ; p.i < len(p.toks); p.i++ {
		kw := p.i
		switch p.toks[p.i] {
		case "limit":
			i, err := p.next("a packet count")
			if err != nil {
				return Spec{}, err
			}
			n, err := strconv.ParseUint(p.toks[i], 10, 31)
			if err != nil || n == 0 {
				return Spec{}, p.errAt(i, "limit: want a positive packet count")
			}
			sp.Limit = int(n)

		case "delay", "latency":
			d, err := p.time("a delay")
			if err != nil {
				return Spec{}, err
			}
			sp.Delay = d
			if p.nextIsNumber() {
				j, err := p.time("a jitter")
				if err != nil {
					return Spec{}, err
				}
				if j > maxJitter {
					return Spec{}, p.errAt(p.i, "jitter above %v is not supported (netem's limit)", maxJitter)
				}
				sp.Jitter = j
				if err := p.optPercent("a delay correlation", &sp.DelayCorrelation); err != nil {
					return Spec{}, err
				}
			}

		case "distribution":
			i, err := p.next("a distribution name")
			if err != nil {
				return Spec{}, err
			}
			found := false
			for d, name := range distNames {
				if p.toks[i] == name {
					sp.Distribution, found = Distribution(d), true
				}
			}
			if !found {
				return Spec{}, p.errAt(i, "unknown distribution (want %s)", strings.Join(distNames[:], ", "))
			}
			distAt = kw

		case "loss", "drop":
			if lossAt >= 0 {
				return Spec{}, p.errAt(kw, "loss given twice")
			}
			lossAt = kw
			i, err := p.next("a loss model or percentage")
			if err != nil {
				return Spec{}, err
			}
			switch tok := p.toks[i]; {
			case tok == "random" || (tok != "" && tok[0] >= '0' && tok[0] <= '9'):
				if tok == "random" {
					if sp.Loss.Percent, err = p.percent("a loss percentage"); err != nil {
						return Spec{}, err
					}
				} else if sp.Loss.Percent, err = parsePercent(tok); err != nil {
					return Spec{}, p.errAt(i, "loss: %v", err)
				}
				sp.Loss.Model = LossRandom
				if err := p.optPercent("a loss correlation", &sp.Loss.Correlation); err != nil {
					return Spec{}, err
				}
			case tok == "gemodel":
				sp.Loss = Loss{Model: LossGE, R: 100, OneMinusH: 100}
				if sp.Loss.P, err = p.percent("gemodel p"); err != nil {
					return Spec{}, err
				}
				for _, f := range []struct {
					dst  *float64
					name string
				}{{&sp.Loss.R, "gemodel r"}, {&sp.Loss.OneMinusH, "gemodel 1-h"}, {&sp.Loss.OneMinusK, "gemodel 1-k"}} {
					if !p.nextIsNumber() {
						break
					}
					if *f.dst, err = p.percent(f.name); err != nil {
						return Spec{}, err
					}
				}
			case tok == "state":
				return Spec{}, p.errAt(i, "the 4-state loss model is not supported (use random or gemodel)")
			default:
				return Spec{}, p.errAt(i, "unknown loss model (want random, gemodel or a percentage)")
			}

		case "duplicate":
			var err error
			if sp.Duplicate, err = p.percent("a duplicate percentage"); err != nil {
				return Spec{}, err
			}
			if err := p.optPercent("a duplicate correlation", &sp.DuplicateCorrelation); err != nil {
				return Spec{}, err
			}

		case "reorder":
			var err error
			if sp.Reorder, err = p.percent("a reorder percentage"); err != nil {
				return Spec{}, err
			}
			if err := p.optPercent("a reorder correlation", &sp.ReorderCorrelation); err != nil {
				return Spec{}, err
			}
			reorderAt = kw

		case "gap":
			i, err := p.next("a distance")
			if err != nil {
				return Spec{}, err
			}
			n, err := strconv.ParseUint(p.toks[i], 10, 32)
			if err != nil {
				return Spec{}, p.errAt(i, "gap: want a packet count")
			}
			sp.Gap = uint32(n)
			gapAt = kw

		case "corrupt":
			var err error
			if sp.Corrupt, err = p.percent("a corrupt percentage"); err != nil {
				return Spec{}, err
			}
			if err := p.optPercent("a corrupt correlation", &sp.CorruptCorrelation); err != nil {
				return Spec{}, err
			}

		case "rate":
			i, err := p.next("a rate")
			if err != nil {
				return Spec{}, err
			}
			if sp.Rate, err = parseRate(p.toks[i]); err != nil {
				return Spec{}, p.errAt(i, "rate: %v", err)
			}
			if p.nextIsSignedNumber() {
				i, _ := p.next("")
				v, err := strconv.ParseInt(p.toks[i], 10, 32)
				if err != nil {
					return Spec{}, p.errAt(i, "rate packet overhead: want a byte count")
				}
				sp.PacketOverhead = int32(v)
				if p.nextIsNumber() {
					i, _ := p.next("")
					v, err := strconv.ParseUint(p.toks[i], 10, 32)
					if err != nil {
						return Spec{}, p.errAt(i, "rate cell size: want a byte count")
					}
					sp.CellSize = uint32(v)
					if p.nextIsSignedNumber() {
						i, _ := p.next("")
						v, err := strconv.ParseInt(p.toks[i], 10, 32)
						if err != nil {
							return Spec{}, p.errAt(i, "rate cell overhead: want a byte count")
						}
						sp.CellOverhead = int32(v)
					}
				}
			}

		case "ecn", "slot":
			return Spec{}, p.errAt(kw, "not supported by tickwire's netem")
		default:
			return Spec{}, p.errAt(kw, "unknown keyword (want limit, delay, distribution, loss, duplicate, reorder, gap, corrupt or rate)")
		}
	}

	if sp.Reorder > 0 {
		if sp.Delay == 0 {
			return Spec{}, p.errAt(reorderAt, "reordering is not possible without some delay")
		}
		if sp.Gap == 0 {
			sp.Gap = 1
		}
	} else if sp.Gap > 0 {
		return Spec{}, p.errAt(gapAt, "gap given without a reorder percentage")
	}
	if distAt >= 0 && (sp.Delay == 0 || sp.Jitter == 0) {
		return Spec{}, p.errAt(distAt, "distribution needs a delay and a jitter")
	}
	return sp, nil
}

// MustParse is Parse for specs known to be valid; it panics otherwise.
func MustParse(s string) Spec {
	sp, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return sp
}

// IsZero reports whether the spec impairs nothing.
func (s Spec) IsZero() bool { return s == Spec{} }

// String prints the spec in tc's syntax; Parse(s.String()) == s for any
// spec Parse returned.
func (s Spec) String() string {
	var b []string
	add := func(f string, args ...any) { b = append(b, fmt.Sprintf(f, args...)) }
	if s.Limit != 0 {
		add("limit %d", s.Limit)
	}
	if s.Delay != 0 || s.Jitter != 0 || s.DelayCorrelation != 0 || s.Distribution != Uniform {
		add("delay %s", fmtTime(s.Delay))
		if s.Jitter != 0 || s.DelayCorrelation != 0 {
			add("%s", fmtTime(s.Jitter))
			if s.DelayCorrelation != 0 {
				add("%s", fmtPercent(s.DelayCorrelation))
			}
		}
		if s.Distribution != Uniform {
			add("distribution %s", s.Distribution)
		}
	}
	switch s.Loss.Model {
	case LossRandom:
		add("loss random %s", fmtPercent(s.Loss.Percent))
		if s.Loss.Correlation != 0 {
			add("%s", fmtPercent(s.Loss.Correlation))
		}
	case LossGE:
		add("loss gemodel %s %s %s %s", fmtPercent(s.Loss.P), fmtPercent(s.Loss.R),
			fmtPercent(s.Loss.OneMinusH), fmtPercent(s.Loss.OneMinusK))
	}
	if s.Duplicate != 0 || s.DuplicateCorrelation != 0 {
		add("duplicate %s", fmtPercent(s.Duplicate))
		if s.DuplicateCorrelation != 0 {
			add("%s", fmtPercent(s.DuplicateCorrelation))
		}
	}
	if s.Reorder != 0 || s.ReorderCorrelation != 0 {
		add("reorder %s", fmtPercent(s.Reorder))
		if s.ReorderCorrelation != 0 {
			add("%s", fmtPercent(s.ReorderCorrelation))
		}
	}
	if s.Gap != 0 {
		add("gap %d", s.Gap)
	}
	if s.Corrupt != 0 || s.CorruptCorrelation != 0 {
		add("corrupt %s", fmtPercent(s.Corrupt))
		if s.CorruptCorrelation != 0 {
			add("%s", fmtPercent(s.CorruptCorrelation))
		}
	}
	if s.Rate != 0 {
		add("rate %dbit", s.Rate*8)
		if s.PacketOverhead != 0 || s.CellSize != 0 || s.CellOverhead != 0 {
			add("%d", s.PacketOverhead)
			if s.CellSize != 0 || s.CellOverhead != 0 {
				add("%d", s.CellSize)
				if s.CellOverhead != 0 {
					add("%d", s.CellOverhead)
				}
			}
		}
	}
	return strings.Join(b, " ")
}

// fmtTime prints d exactly, in the largest unit that divides it.
func fmtTime(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

func fmtPercent(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) + "%" }

// splitNumber splits a token into its leading number and its suffix.
func splitNumber(tok string) (float64, string, error) {
	end := 0
	for end < len(tok) && (tok[end] >= '0' && tok[end] <= '9' || tok[end] == '.' || (end == 0 && (tok[end] == '-' || tok[end] == '+'))) {
		end++
	}
	// An exponent, as strtod accepts ("1e3ms").
	if end < len(tok) && (tok[end] == 'e' || tok[end] == 'E') {
		j := end + 1
		if j < len(tok) && (tok[j] == '-' || tok[j] == '+') {
			j++
		}
		if j < len(tok) && tok[j] >= '0' && tok[j] <= '9' {
			for j < len(tok) && tok[j] >= '0' && tok[j] <= '9' {
				j++
			}
			end = j
		}
	}
	v, err := strconv.ParseFloat(tok[:end], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "", fmt.Errorf("not a number")
	}
	return v, tok[end:], nil
}

var timeUnits = map[string]float64{
	"s": 1e9, "sec": 1e9, "secs": 1e9,
	"ms": 1e6, "msec": 1e6, "msecs": 1e6,
	"us": 1e3, "usec": 1e3, "usecs": 1e3,
	"ns": 1, "nsec": 1, "nsecs": 1,
}

func parseTime(tok string) (time.Duration, error) {
	v, unit, err := splitNumber(tok)
	if err != nil {
		return 0, fmt.Errorf("want a time like 50ms")
	}
	if unit == "" {
		return 0, fmt.Errorf("a time needs a unit (s, ms, us or ns)")
	}
	scale, ok := timeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("unknown time unit %q (want s, ms, us or ns)", unit)
	}
	ns := v * scale
	if ns < 0 || ns > math.MaxInt64/2 {
		return 0, fmt.Errorf("time out of range")
	}
	return time.Duration(math.Round(ns)), nil
}

func parsePercent(tok string) (float64, error) {
	v, suffix, err := splitNumber(tok)
	if err != nil || (suffix != "" && suffix != "%") {
		return 0, fmt.Errorf("want a percentage like 5%% or 0.5%%")
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("percentage outside 0..100")
	}
	return v, nil
}

// rateUnits are tc's rate suffixes in bits per second.
var rateUnits = map[string]float64{
	"bit": 1, "kibit": 1024, "kbit": 1000, "mibit": 1 << 20, "mbit": 1e6,
	"gibit": 1 << 30, "gbit": 1e9, "tibit": 1 << 40, "tbit": 1e12,
	"bps": 8, "kibps": 8 << 10, "kbps": 8e3, "mibps": 8 << 20, "mbps": 8e6,
	"gibps": 8 << 30, "gbps": 8e9, "tibps": 8 << 40, "tbps": 8e12,
}

// parseRate returns bytes per second.
func parseRate(tok string) (uint64, error) {
	v, unit, err := splitNumber(tok)
	if err != nil {
		return 0, fmt.Errorf("want a rate like 1mbit")
	}
	scale := 1.0
	if unit != "" {
		var ok bool
		if scale, ok = rateUnits[strings.ToLower(unit)]; !ok {
			if unit == "%" {
				return 0, fmt.Errorf("a rate relative to the interface is not supported")
			}
			return 0, fmt.Errorf("unknown rate unit %q (want bit, kbit, mbit, gbit or bps, kbps, mbps, gbps)", unit)
		}
	}
	// In bits it must fit a uint64 too: String prints it in bits.
	bytes := v * scale / 8
	if bytes < 1 || bytes >= math.MaxUint64/8 {
		return 0, fmt.Errorf("rate must be at least 8bit and below 2^64 bit")
	}
	return uint64(bytes), nil
}
