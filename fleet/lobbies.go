package fleet

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Several lobbies can serve one fleet. A room lives in the lobby that
// created it; its id starts with that lobby's tag, and every lobby
// announces its tag and public URL, so that a lobby asked about another's
// room can send the player there (HTTP 307) without asking anyone.

// TagLen is the length of a lobby's tag, the first characters of the ids
// of its rooms.
const TagLen = 4

// lobbyInterval is the heartbeat interval of lobby announcements.
const lobbyInterval = time.Second

// LobbyStatus is what a lobby announces.
type LobbyStatus struct {
	Tag        string `json:"tag"`
	URL        string `json:"url"` // where players reach it
	IntervalMs int64  `json:"intervalMs"`
	Seq        uint64 `json:"seq"`
	Leaving    bool   `json:"leaving,omitempty"`
}

func (s *LobbyStatus) check() error {
	if len(s.Tag) != TagLen || strings.Trim(s.Tag, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return fmt.Errorf("bad lobby tag %q", s.Tag)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s.URL) > maxText {
		return fmt.Errorf("bad lobby URL %q", s.URL)
	}
	if s.IntervalMs <= 0 || s.IntervalMs > 60_000 {
		return fmt.Errorf("heartbeat interval %d ms", s.IntervalMs)
	}
	return nil
}

// Lobby is one lobby of the fleet as a Directory sees it.
type Lobby struct {
	LobbyStatus
	LastSeen time.Time
	Healthy  bool
	Self     bool // the lobby this Directory announces
}

type lobbyEntry struct {
	st   LobbyStatus
	seen time.Time
}

func (e *lobbyEntry) lastSeen() time.Time { return e.seen }

// Announce makes this Directory's lobby known to the fleet at url (where
// players reach it) and returns its tag, which starts the ids of its
// rooms from now on (Tag). It announces again every second until Close.
func (d *Directory) Announce(publicURL string) (string, error) {
	st := LobbyStatus{Tag: strings.ToLower(rand.Text()[:TagLen]), URL: strings.TrimSuffix(publicURL, "/"),
		IntervalMs: lobbyInterval.Milliseconds()}
	if err := st.check(); err != nil {
		return "", fmt.Errorf("fleet: %v", err)
	}
	d.mu.Lock()
	if d.self != nil {
		d.mu.Unlock()
		return "", errors.New("fleet: the lobby is announced already")
	}
	d.self = &st
	d.announcing = every(lobbyInterval, d.stop, func() { d.announceLobby(false) })
	d.mu.Unlock()
	d.announceLobby(false)
	return st.Tag, nil
}

// Tag is the tag of this Directory's lobby; empty until Announce.
func (d *Directory) Tag() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.self == nil {
		return ""
	}
	return d.self.Tag
}

func (d *Directory) announceLobby(leaving bool) {
	d.mu.Lock()
	if d.self == nil {
		d.mu.Unlock()
		return
	}
	d.self.Seq++
	st := *d.self
	d.mu.Unlock()
	st.Leaving = leaving
	b, _ := json.Marshal(st)
	if err := d.nc.Publish(d.cfg.Prefix+".lobbies."+st.Tag, b); err != nil {
		d.cfg.Logger.Debug("fleet: announce the lobby", "err", err)
	}
}

// heardLobby takes one lobby announcement.
func (d *Directory) heardLobby(msg *nats.Msg) {
	var st LobbyStatus
	if err := decode(msg.Data, &st); err != nil || st.check() != nil || msg.Subject != d.cfg.Prefix+".lobbies."+st.Tag {
		d.bad.Add(1)
		return
	}
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.lobbies[st.Tag]
	switch {
	case st.Leaving:
		delete(d.lobbies, st.Tag)
		return
	case e == nil && len(d.lobbies) >= d.cfg.MaxServers:
		forget(d.lobbies, now, d.cfg.ForgetAfter)
		if len(d.lobbies) >= d.cfg.MaxServers {
			d.dropped.Add(1)
			return
		}
	case e != nil && e.st.URL == st.URL && st.Seq <= e.st.Seq:
		return
	}
	if e == nil {
		e = &lobbyEntry{}
		d.lobbies[st.Tag] = e
	}
	e.st, e.seen = st, now
}

// LobbyURL returns the URL of the live lobby with this tag, other than
// this Directory's own.
func (d *Directory) LobbyURL(tag string) (string, bool) {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.lobbies[tag]
	if e == nil || (d.self != nil && d.self.Tag == tag) || !d.fresh(e.seen, e.st.IntervalMs, now) {
		return "", false
	}
	return e.st.URL, true
}

func (d *Directory) fresh(seen time.Time, intervalMs int64, now time.Time) bool {
	return now.Sub(seen) <= time.Duration(d.cfg.StaleAfter*float64(time.Duration(intervalMs)*time.Millisecond))
}

// Lobbies returns every lobby the Directory knows, by tag.
func (d *Directory) Lobbies() []Lobby {
	now := d.cfg.Now()
	d.mu.Lock()
	forget(d.lobbies, now, d.cfg.ForgetAfter)
	out := make([]Lobby, 0, len(d.lobbies))
	for tag, e := range d.lobbies {
		out = append(out, Lobby{LobbyStatus: e.st, LastSeen: e.seen, Healthy: d.fresh(e.seen, e.st.IntervalMs, now),
			Self: d.self != nil && d.self.Tag == tag})
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Lobby) int { return cmp.Compare(a.Tag, b.Tag) })
	return out
}
