package webpage

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandler(t *testing.T) {
	dir := t.TempDir()
	wasm := bytes.Repeat([]byte("\x00asm"), 1000)
	os.WriteFile(filepath.Join(dir, WASMFile), wasm, 0o644)
	os.WriteFile(filepath.Join(dir, LoaderFile), []byte("// loader"), 0o644)
	c, err := LoadClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(Config{Client: c, WebSocket: http.NotFoundHandler(),
		WebTransport: &WebTransport{Port: 4433, Path: "/tickwire", CertHash: []byte{1, 2, 3}}, Demo: "/play/spectate"})

	if w := get(t, h, "/play"); w.Code != 200 || !strings.Contains(w.Body.String(), "play.js") ||
		!strings.Contains(w.Header().Get("Content-Security-Policy"), "'wasm-unsafe-eval'") {
		t.Errorf("/play: %d %q", w.Code, w.Header())
	}
	var conf pageConfig
	if w := get(t, h, "/play/config.json"); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &conf) != nil {
		t.Fatalf("config: %d %s", w.Code, w.Body)
	}
	if conf.WebSocket != "/play/ws" || conf.WebTransport == nil || conf.WebTransport.Port != 4433 ||
		conf.WebTransport.CertHash != "AQID" || conf.Lobby != "/" || conf.Demo != "/play/spectate" {
		t.Errorf("config %+v %+v", conf, conf.WebTransport)
	}
	w := get(t, h, "/play/client.wasm", "Accept-Encoding", "gzip")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/wasm" || w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("client.wasm: %d %v", w.Code, w.Header())
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, wasm) {
		t.Error("the gzipped module is not the module")
	}
	if w := get(t, h, "/play/client.wasm"); !bytes.Equal(w.Body.Bytes(), wasm) {
		t.Error("the plain module is not the module")
	}
	if w := get(t, h, "/play/wasm_exec.js"); w.Body.String() != "// loader" {
		t.Errorf("loader %q", w.Body)
	}
	if w := get(t, h, "/play/static/play.js"); w.Code != 200 || !strings.Contains(w.Body.String(), "tickwireConnect") {
		t.Errorf("play.js: %d", w.Code)
	}
}

// TestBuildOnDemand: the page hears 503 while the client builds, then
// the reason when the build failed.
func TestBuildOnDemand(t *testing.T) {
	// A go command that fails after the test has looked.
	goBin := filepath.Join(t.TempDir(), "go")
	looked := filepath.Join(t.TempDir(), "looked")
	script := "#!/bin/sh\nwhile [ ! -e " + looked + " ]; do sleep 0.05; done\nexit 1\n"
	if err := os.WriteFile(goBin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	c := BuildOnDemand(goBin, t.TempDir(), func(err error) { done <- err })
	h := Handler(Config{Client: c})
	if w := get(t, h, "/play/client.wasm"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "building the browser client") {
		t.Errorf("while building: %d", w.Code)
	}
	os.WriteFile(looked, nil, 0o644)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a build without a go command succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the build did not end")
	}
	if w := get(t, h, "/play/client.wasm"); w.Code != http.StatusInternalServerError {
		t.Errorf("after a failed build: %d", w.Code)
	}
}
