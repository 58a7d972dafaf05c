package webpage

import (
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var staticFS embed.FS

// Config says what the page serves.
type Config struct {
	// Client is the WebAssembly client. Required.
	Client *Client
	// WebSocket is the gateway's WebSocket endpoint, served at
	// /play/ws; nil: none.
	WebSocket http.Handler
	// WebTransport says where the WebTransport server is; nil: none.
	WebTransport *WebTransport
	// Lobby is the URL of the lobby, where a page without a token sends
	// the player. Empty means "/".
	Lobby string
	// Demo is the URL of the spectator view the page shows without a
	// token; empty: none.
	Demo string
}

// WebTransport is where browsers open WebTransport sessions.
type WebTransport struct {
	// Port is the server's QUIC port on the host the page came from.
	Port int
	// Addr, if set, is "host:port" to use instead (a proxy in front, a
	// tickwire-netem in the path). A page's ?wt=host:port overrides both.
	Addr string
	// Path is the session's path (webgate.WebTransportPath).
	Path string
	// CertHash is the SHA-256 of a development certificate the page
	// trusts through serverCertificateHashes; nil for a certificate a
	// browser trusts on its own.
	CertHash []byte
}

// pageConfig is /play/config.json.
type pageConfig struct {
	WebSocket    string         `json:"websocket,omitempty"`
	WebTransport *pageTransport `json:"webtransport,omitempty"`
	Lobby        string         `json:"lobby"`
	Demo         string         `json:"demo,omitempty"`
}

type pageTransport struct {
	Port     int    `json:"port"`
	Addr     string `json:"addr,omitempty"`
	Path     string `json:"path"`
	CertHash string `json:"certHash,omitempty"` // base64
}

// Handler serves the page under /play.
func Handler(cfg Config) http.Handler {
	static, _ := fs.Sub(staticFS, "static")
	pc := pageConfig{Lobby: cfg.Lobby, Demo: cfg.Demo}
	if pc.Lobby == "" {
		pc.Lobby = "/"
	}
	if cfg.WebSocket != nil {
		pc.WebSocket = "/play/ws"
	}
	if wt := cfg.WebTransport; wt != nil {
		pc.WebTransport = &pageTransport{Port: wt.Port, Addr: wt.Addr, Path: wt.Path}
		if wt.CertHash != nil {
			pc.WebTransport.CertHash = base64.StdEncoding.EncodeToString(wt.CertHash)
		}
	}
	conf, _ := json.Marshal(pc)

	m := http.NewServeMux()
	files := http.FileServerFS(static)
	m.HandleFunc("GET /play", func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, static, "play.html")
	})
	m.Handle("GET /play/static/", http.StripPrefix("/play/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		files.ServeHTTP(w, r)
	})))
	m.HandleFunc("GET /play/config.json", func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(conf)
	})
	m.HandleFunc("GET /play/"+WASMFile, func(w http.ResponseWriter, r *http.Request) {
		wasm, gz, _, err := cfg.Client.files()
		if !serveBuild(w, err) {
			return
		}
		headers(w)
		w.Header().Set("Content-Type", "application/wasm")
		w.Header().Set("Cache-Control", "no-cache")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Vary", "Accept-Encoding")
			w.Write(gz)
			return
		}
		w.Write(wasm)
	})
	m.HandleFunc("GET /play/"+LoaderFile, func(w http.ResponseWriter, r *http.Request) {
		_, _, loader, err := cfg.Client.files()
		if !serveBuild(w, err) {
			return
		}
		headers(w)
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(loader)
	})
	if cfg.WebSocket != nil {
		m.Handle("GET /play/ws", cfg.WebSocket)
	}
	return m
}

// serveBuild answers for a build that is not there: 503 while it runs
// (the page asks again), 500 with the reason when it failed.
func serveBuild(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, errBuilding):
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
	return false
}

// headers keeps the page to its own scripts; WebAssembly needs
// 'wasm-unsafe-eval', WebTransport an https: connection anywhere (its
// port is not the page's).
func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' ws: wss: https:; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}
