package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
)

// TestDashboardLinksTimeline: with -record, the operator's stats give
// each running game the link to its live timeline, and the link serves
// the timeline of the game's recording as it stands (an HTML page with
// its picture); a game that is not recorded, or a bad id, gets a clear
// error, and the public listener does not serve it.
func TestDashboardLinksTimeline(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, nil, "-record", dir, "-npcs", "5")
	tok, err := tickwire.MintToken(s.key, tickwire.TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1},
		ServerAddrs: []string{s.udp.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, tok)
	defer c.Close()

	var link string
	deadline := time.Now().Add(20 * time.Second)
	for link == "" {
		var st struct {
			Server struct {
				Games []struct {
					ID       string `json:"id"`
					Timeline string `json:"timeline"`
				} `json:"games"`
			} `json:"server"`
		}
		if err := json.Unmarshal([]byte(get(t, s.adminURL+"/api/stats")), &st); err != nil {
			t.Fatal(err)
		}
		for _, g := range st.Server.Games {
			if g.ID == "1" {
				link = g.Timeline
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stats give game 1 no timeline link")
		}
		time.Sleep(50 * time.Millisecond) // polling the stats while the game starts
	}
	if link != "/timeline?game=1" {
		t.Fatalf("timeline link %q", link)
	}
	// The recording is written as the game runs: its first blocks come
	// within a few seconds.
	var page string
	for {
		resp, err := http.Get(s.adminURL + link)
		if err != nil {
			t.Fatal(err)
		}
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(b.String(), "<svg") {
			page = b.String()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timeline: %d %s", resp.StatusCode, b)
		}
		time.Sleep(100 * time.Millisecond) // polling for the recording's first block
	}
	if !strings.Contains(page, "tickwire replay timeline") {
		t.Errorf("the timeline page lacks its title")
	}
	for _, q := range []string{"?game=2", "?game=x", ""} {
		if code := status(t, "GET", s.adminURL+"/timeline"+q); code != 404 && code != 400 {
			t.Errorf("/timeline%s: %d, want a clear refusal", q, code)
		}
	}
	if code := status(t, "GET", s.base+"/timeline?game=1"); code == 200 {
		t.Error("the timeline is served on the public listener")
	}
}
