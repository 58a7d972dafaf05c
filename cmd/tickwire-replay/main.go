// Command tickwire-replay re-runs and compares recordings of tickwire
// games (package replay; docs/DEBUGGING.md, "Replays"):
//
//	tickwire-replay game.replay
//	tickwire-replay -bisect server.replay client.replay
//	tickwire-replay -html timeline.html -bisect a.replay b.replay
//
// With one file it re-runs the recorded game with the game's code (the
// file names its game: arena or swarm; -game overrides it) and checks
// every checksum and full state the file holds, reporting the first
// that does not reproduce. With -bisect it finds the first tick at
// which two recordings of the same game disagree (a server's and a
// client's, two commits-mode clients') and names the entities and
// fields that differ there and the inputs or commands of that tick.
// -json prints the report as JSON; -html writes a timeline of the
// recordings. It exits with 0 when everything agrees, 1 when something
// does not, 2 when it cannot tell (a bad flag or file).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the parsed, validated flags and arguments.
type options struct {
	files  []string
	bisect bool
	game   string
	json   bool
	html   string
}

// usageError is a problem with the flags or arguments, said for the
// user.
type usageError string

func (e usageError) Error() string { return string(e) }

// errFlagSyntax is a flag the flag package rejected (it printed why).
var errFlagSyntax = errors.New("bad flag syntax")

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("tickwire-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: tickwire-replay [flags] FILE
       tickwire-replay [flags] -bisect A B

Re-runs a recorded game and checks every recorded checksum (FILE), or
finds the first tick two recordings of the same game disagree and names
what differs (-bisect). Exit status: 0 all agree, 1 something does not,
2 a bad flag or file.

`)
		fs.PrintDefaults()
	}
	var o options
	fs.BoolVar(&o.bisect, "bisect", false, "compare two recordings, A and B: a state-sync server's and a client's, or two commits-mode recordings")
	fs.StringVar(&o.game, "game", "", "the game's code to run: arena or swarm (default: the game the file names)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.StringVar(&o.html, "html", "", "write a timeline of the recording(s) as an HTML page to `file`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errFlagSyntax
	}
	o.files = fs.Args()
	switch {
	case o.bisect && len(o.files) != 2:
		return o, usageError(fmt.Sprintf("-bisect needs two recordings, A and B (got %d)", len(o.files)))
	case !o.bisect && len(o.files) != 1:
		return o, usageError(fmt.Sprintf("give one recording to re-run, or -bisect A B (got %d files)", len(o.files)))
	case o.game != "" && o.game != "arena" && o.game != "swarm":
		return o, usageError(fmt.Sprintf("-game %q: the games built in are arena and swarm", o.game))
	}
	return o, nil
}

// games is the code of the game named name.
func games(name string) (replay.Games, error) {
	switch name {
	case "arena":
		return replay.Games{State: func() sim.Game { return arena.NewGame(0) }}, nil
	case "swarm":
		// A commits-mode game: its committed states carry everything.
		// (Its state-sync form networks the units but not their orders,
		// so a server's recording of it does not re-run.)
		return replay.Games{Commits: func() sim.CommitGame { g, _ := swarm.NewGame(1); return g }}, nil
	}
	return replay.Games{}, fmt.Errorf("the recording's game %q is not built in (arena, swarm): give -game", name)
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errFlagSyntax) {
			fmt.Fprintf(stderr, "tickwire-replay: %v (-h for help)\n", err)
		}
		return 2
	}
	var recs []*replay.Recording
	for _, f := range o.files {
		r, err := replay.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: %v\n", err)
			return 2
		}
		if r.Err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: warning: %s: %v; using the %d records before it\n", f, r.Err, len(r.Records))
		}
		recs = append(recs, r)
	}
	name := o.game
	if name == "" {
		name = recs[0].Header.Game
	}
	g, err := games(name)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire-replay: %s: %v\n", o.files[0], err)
		return 2
	}
	var report any
	var agrees bool
	tl := replay.Timeline{Recordings: recs}
	if o.bisect {
		rep, err := replay.Bisect(recs[0], recs[1], g)
		if err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: %v\n", err)
			return 2
		}
		report, agrees, tl.Bisect = rep, !rep.Diverged, &rep
		if !o.json {
			writeBisect(stdout, &rep)
		}
	} else {
		rep, err := replay.Check(recs[0], g)
		if err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: %s: %v\n", o.files[0], err)
			return 2
		}
		report, agrees, tl.Checks = rep, rep.Mismatch == nil, []*replay.CheckReport{&rep}
		if !o.json {
			writeCheck(stdout, o.files[0], &rep)
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: %v\n", err)
			return 2
		}
	}
	if o.html != "" {
		if err := writeTimeline(o.html, &tl); err != nil {
			fmt.Fprintf(stderr, "tickwire-replay: -html: %v\n", err)
			return 2
		}
	}
	if !agrees {
		return 1
	}
	return 0
}

func writeTimeline(path string, tl *replay.Timeline) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := tl.WriteHTML(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
