package lobby

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
)

// The pages are plain HTML templates with a little CSS and JavaScript,
// embedded in the binary: no build step.
//
//go:embed web/templates/*.html web/static/*
var webFS embed.FS

func (l *Lobby) initPages() error {
	t, err := template.ParseFS(webFS, "web/templates/*.html")
	if err != nil {
		return err
	}
	l.pages = t
	l.static, err = fs.Sub(webFS, "web/static")
	return err
}

// securityHeaders keeps the pages to their own scripts and styles.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

func (l *Lobby) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := l.pages.ExecuteTemplate(&buf, name, data); err != nil {
		l.cfg.Logger.Error("lobby: page template", "page", name, "err", err)
		http.Error(w, "page template failed", http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

type menuPage struct {
	Title   string
	Types   []TypeInfo
	PlayURL string
	DemoURL string
}

func (l *Lobby) serveMenu(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	p := menuPage{Title: "Choose a game", PlayURL: l.cfg.PlayURL, DemoURL: l.cfg.DemoURL}
	for _, t := range l.order {
		p.Types = append(p.Types, l.typeInfo(t))
	}
	l.unlock()
	l.render(w, http.StatusOK, "menu.html", p)
}

type typePage struct {
	Title      string
	Type       TypeInfo
	Rooms      []RoomInfo
	MaxNameLen int
	MaxChatLen int
	PlayURL    string
}

type errorPage struct {
	Title string
	Error *Error
}

func (l *Lobby) serveTypePage(w http.ResponseWriter, r *http.Request) {
	t := l.types[r.PathValue("type")]
	if t == nil {
		e := errorf(CodeUnknownType, "There is no game type %q.", r.PathValue("type"))
		l.metrics.errors.WithLabelValues(e.Code).Inc()
		l.render(w, http.StatusNotFound, "error.html", errorPage{Title: "Unknown game", Error: e})
		return
	}
	l.mu.Lock()
	p := typePage{Title: t.Title, Type: l.typeInfo(t), Rooms: l.roomList(t),
		MaxNameLen: l.cfg.MaxNameLen, MaxChatLen: l.cfg.MaxChatLen, PlayURL: l.cfg.PlayURL}
	l.unlock()
	l.render(w, http.StatusOK, "type.html", p)
}

func (l *Lobby) serveDashboard(w http.ResponseWriter, r *http.Request) {
	l.render(w, http.StatusOK, "dashboard.html", struct {
		Title    string
		HasStats bool
		HasFleet bool
	}{"Dashboard", l.cfg.Stats != nil, l.cfg.Fleet != nil})
}
