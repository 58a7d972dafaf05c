package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tickwire/tickwire/replay"
)

// timelinePath is where the operator listener serves a recorded game's
// live timeline (with -record): the dashboard links each game there.
const timelinePath = "/timeline"

// timelineURL is the link to game id's live timeline.
func timelineURL(id uint64) string { return fmt.Sprintf("%s?game=%d", timelinePath, id) }

// timelineHandler draws the timeline of the newest recording of a game
// of type game in dir (-record): GET /timeline?game=ID. The recording is
// read as it stands, its last block perhaps half-written (the timeline
// stops where the good records do).
func timelineHandler(dir, game string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.URL.Query().Get("game"), 10, 64)
		if err != nil {
			http.Error(w, "timeline: ?game= needs a game id (a number)", http.StatusBadRequest)
			return
		}
		// recorder names a game's files <game>-game<id>-<start time>.replay:
		// in name order, the newest last.
		files, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-game%d-*.replay", game, id)))
		if err != nil || len(files) == 0 {
			http.Error(w, fmt.Sprintf("timeline: no recording of game %d in %s", id, dir), http.StatusNotFound)
			return
		}
		slices.Sort(files)
		rec, err := replay.ReadFile(files[len(files)-1])
		if err != nil {
			http.Error(w, "timeline: "+err.Error(), http.StatusInternalServerError)
			return
		}
		t := replay.Timeline{Recordings: []*replay.Recording{rec}}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := t.WriteHTML(w); err != nil {
			http.Error(w, "timeline: "+err.Error(), http.StatusInternalServerError)
		}
	}
}
