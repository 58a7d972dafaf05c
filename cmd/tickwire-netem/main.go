// Command tickwire-netem is a UDP proxy that impairs traffic the way
// Linux netem does, without the kernel module:
//
//	tickwire-netem -listen :7000 -upstream 127.0.0.1:7777 -spec "delay 50ms 10ms loss 5%"
//	tickwire-netem -listen :7000 -upstream 127.0.0.1:7777 \
//	    -up-spec "delay 20ms loss gemodel 1% 20%" -down-spec "delay 30ms 5ms distribution normal rate 2mbit"
//
// Clients send to -listen; each gets its own socket towards -upstream.
// -spec applies to both directions unless -up-spec (client → upstream)
// or -down-spec (upstream → client) replaces it. Specs use tc netem's
// syntax (see package udp/netem). It prints per-direction statistics
// every -stats-interval and when it stops (SIGINT, SIGTERM).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tickwire/tickwire/udp/netem"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sig))
}

// options are the parsed, validated flags.
type options struct {
	listen, upstream string
	up, down         netem.Spec
	seed             uint64
	interval         time.Duration
	idle             time.Duration
}

// usageError is a problem with the flags, said in words for the user.
type usageError string

func (e usageError) Error() string { return string(e) }

// errFlagSyntax is a flag the flag package rejected (it has printed why).
var errFlagSyntax = errors.New("bad flag syntax")

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("tickwire-netem", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var spec, upSpec, downSpec string
	var seed int64
	fs.StringVar(&o.listen, "listen", "", "address clients send to, e.g. :7000 (required)")
	fs.StringVar(&o.upstream, "upstream", "", "address of the real server, e.g. 127.0.0.1:7777 (required)")
	fs.StringVar(&spec, "spec", "", `netem spec for both directions, e.g. "delay 50ms 10ms loss 5%"`)
	fs.StringVar(&upSpec, "up-spec", "", "netem spec for client → upstream (replaces -spec that way)")
	fs.StringVar(&downSpec, "down-spec", "", "netem spec for upstream → client (replaces -spec that way)")
	fs.Int64Var(&seed, "seed", 0, "random seed; 0 picks one and prints it so a run can be repeated")
	fs.DurationVar(&o.interval, "stats-interval", 5*time.Second, "how often to print statistics; 0 only at exit")
	fs.DurationVar(&o.idle, "idle-timeout", netem.DefaultIdleTimeout, "forget a client after this long without traffic")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tickwire-netem -listen ADDR -upstream ADDR [-spec SPEC] [-up-spec SPEC] [-down-spec SPEC] [-seed N] [-stats-interval D]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errFlagSyntax
	}
	bad := func(format string, a ...any) (options, error) {
		return o, usageError(fmt.Sprintf(format, a...))
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q (quote the spec: -spec \"delay 50ms loss 5%%\")", fs.Arg(0))
	case o.listen == "":
		return bad("-listen is required: the address clients send to, e.g. -listen :7000")
	case o.upstream == "":
		return bad("-upstream is required: the server to forward to, e.g. -upstream 127.0.0.1:7777")
	case o.interval < 0:
		return bad("-stats-interval %v is negative (0 prints only at exit)", o.interval)
	case o.idle <= 0:
		return bad("-idle-timeout %v must be positive", o.idle)
	case spec != "" && upSpec != "" && downSpec != "":
		return bad("-spec is unused when both -up-spec and -down-spec are given; drop one")
	}
	if seed < 0 {
		return bad("-seed %d is negative", seed)
	}
	var err error
	parse := func(name, s string) netem.Spec {
		if err != nil {
			return netem.Spec{}
		}
		var sp netem.Spec
		if sp, err = netem.Parse(s); err != nil {
			err = usageError(fmt.Sprintf("-%s: %v", name, err))
		}
		return sp
	}
	both := parse("spec", spec)
	o.up, o.down = both, both
	if upSpec != "" {
		o.up = parse("up-spec", upSpec)
	}
	if downSpec != "" {
		o.down = parse("down-spec", downSpec)
	}
	if err != nil {
		return o, err
	}
	o.seed = uint64(seed)
	if o.seed == 0 {
		o.seed = rand.Uint64() >> 1 // printable as a positive -seed
	}
	return o, nil
}

// run is main without the process: it returns the exit status (2 for bad
// flags) once a value arrives on stop.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	o, err := parseFlags(args, stderr)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tickwire-netem: %v\n(tickwire-netem -h lists the flags)\n", ue)
		return 2
	case err != nil: // -h, or a flag syntax error the flag package reported
		return 2
	}
	p, err := netem.ListenProxy(o.listen, o.upstream, netem.ProxyConfig{
		Up: o.up, Down: o.down, Seed: o.seed, IdleTimeout: o.idle,
	})
	if err != nil {
		fmt.Fprintf(stderr, "tickwire-netem: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "tickwire-netem: listening on %v, forwarding to %s, seed %d\n", p.Addr(), o.upstream, o.seed)
	fmt.Fprintf(stdout, "  up   (client → upstream): %s\n", describe(o.up))
	fmt.Fprintf(stdout, "  down (upstream → client): %s\n", describe(o.down))

	start := time.Now()
	var tick <-chan time.Time
	if o.interval > 0 {
		t := time.NewTicker(o.interval)
		defer t.Stop()
		tick = t.C
	}
	report := func(label string) {
		up, down := p.Stats()
		fmt.Fprintf(stdout, "%s after %v, %d clients\n  up   %v\n  down %v\n",
			label, time.Since(start).Round(time.Second), p.Clients(), up, down)
	}
	for {
		select {
		case <-tick:
			report("stats")
		case s := <-stop:
			fmt.Fprintf(stdout, "tickwire-netem: %v, stopping\n", s)
			p.Close()
			report("final stats")
			return 0
		}
	}
}

func describe(s netem.Spec) string {
	if s.IsZero() {
		return "no impairment"
	}
	return s.String()
}
