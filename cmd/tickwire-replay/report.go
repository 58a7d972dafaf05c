package main

import (
	"fmt"
	"io"

	"github.com/tickwire/tickwire/replay"
)

// maxShown bounds the entities a report lists (the JSON has them all).
const maxShown = 20

// writeCheck prints a re-run's report for a person.
func writeCheck(w io.Writer, file string, r *replay.CheckReport) {
	fmt.Fprintf(w, "%s: %s of game %q\n", file, r.Role, r.Game)
	if r.Note != "" {
		fmt.Fprintf(w, "  %s\n", r.Note)
		return
	}
	fmt.Fprintf(w, "  re-ran ticks %d to %d (%d steps", r.First, r.Last, r.Steps)
	if r.Restarts > 0 {
		fmt.Fprintf(w, ", started again from %d full states", r.Restarts)
	}
	fmt.Fprintf(w, "): %d checksums and %d full states compared\n", r.Checksums, r.States)
	m := r.Mismatch
	if m == nil {
		fmt.Fprintln(w, "  every recorded checksum and state reproduced")
		return
	}
	if m.What == "checksum" {
		fmt.Fprintf(w, "  FIRST MISMATCH at tick %d: recorded checksum %016x, re-run %016x\n", m.Tick, m.Want, m.Got)
		fmt.Fprintln(w, "  the game code that recorded it is not this build's, or is not deterministic (sim.SyncTest checks that)")
		return
	}
	fmt.Fprintf(w, "  FIRST MISMATCH at tick %d: the recorded full state (A) differs from the re-run's (B):\n", m.Tick)
	writeDifferences(w, m.Differences)
}

// writeBisect prints a bisection's report for a person.
func writeBisect(w io.Writer, r *replay.BisectReport) {
	fmt.Fprintf(w, "A: %s (%s of game %q, id %d)\n", r.A.Path, r.A.Role, r.A.Game, r.A.GameID)
	fmt.Fprintf(w, "B: %s (%s of game %q, id %d)\n", r.B.Path, r.B.Role, r.B.Game, r.B.GameID)
	if r.A.GameID != r.B.GameID {
		fmt.Fprintln(w, "warning: the recordings name different game ids")
	}
	switch r.How {
	case "prediction":
		fmt.Fprintf(w, "compared the client's own entities, as its game code stepped them from each server state, with the server's: %d ticks (%d to %d)",
			r.Compared, r.From, r.To)
		if r.Skipped > 0 {
			fmt.Fprintf(w, "; %d ticks skipped, whose inputs the server had late, lost or rejected", r.Skipped)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "compared the checksums of %d ticks (%d to %d)\n", r.Compared, r.From, r.To)
	}
	if !r.Diverged {
		fmt.Fprintln(w, "no divergence: the recordings agree")
		if r.Note != "" {
			fmt.Fprintf(w, "note: %s\n", r.Note)
		}
		return
	}
	fmt.Fprintf(w, "FIRST DIVERGENCE at tick %d\n", r.Tick)
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
	if r.StateTick != 0 || len(r.Differences) > 0 {
		fmt.Fprintf(w, "what differs at tick %d (A → B):\n", r.StateTick)
		writeDifferences(w, r.Differences)
	}
	if len(r.Inputs) > 0 {
		fmt.Fprintf(w, "inputs of tick %d:\n", r.Tick)
		for _, in := range r.Inputs {
			fmt.Fprintf(w, "  %s player %d %s", in.From, in.Player, in.Kind)
			if in.Seq != 0 {
				fmt.Fprintf(w, " #%d", in.Seq)
			}
			if in.Data != "" {
				fmt.Fprintf(w, " %s", in.Data)
			}
			if in.Missing {
				fmt.Fprint(w, " (missing: the previous input repeated)")
			}
			if in.Rejected {
				fmt.Fprint(w, " (action rejected)")
			}
			fmt.Fprintln(w)
		}
	}
}

func writeDifferences(w io.Writer, ds []replay.Difference) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "  (the states hold the same values)")
	}
	for i, d := range ds {
		if i == maxShown {
			fmt.Fprintf(w, "  ... and %d more entities (-json lists them all)\n", len(ds)-maxShown)
			break
		}
		if d.OnlyIn != "" {
			fmt.Fprintf(w, "  entity %s: only in %s\n", d.Entity, d.OnlyIn)
			continue
		}
		fmt.Fprintf(w, "  entity %s:", d.Entity)
		for _, f := range d.Fields {
			fmt.Fprintf(w, " %s %d → %d", f.Name, f.A, f.B)
		}
		fmt.Fprintln(w)
	}
}
