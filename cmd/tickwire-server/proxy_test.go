package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustedProxyHeader: X-Forwarded-For names the client only when the
// TCP peer is one of -trusted-proxies. The per-address limit of
// POST /api/join (one token per address, -join-burst 1) shows whom the
// server counts: without -trusted-proxies, forged headers from 127.0.0.1
// all count as 127.0.0.1; with 127.0.0.1 trusted, each forwarded client
// has its own limit, and what a client writes left of the proxy's entry
// (a forged hop) changes nothing.
func TestTrustedProxyHeader(t *testing.T) {
	// step is one request: its X-Forwarded-For and the status it gets.
	type step struct {
		xff  string
		want int
	}
	for _, tc := range []struct {
		name, trusted string
		steps         []step
	}{
		{"untrusted", "", []step{{"192.0.2.1", 200}, {"192.0.2.2", 429}, {"192.0.2.3, 192.0.2.4", 429}, {"", 429}}},
		{"trusted", "127.0.0.0/8", []step{{"192.0.2.1", 200}, {"192.0.2.2", 200}, {"192.0.2.1", 429},
			{"198.51.100.9, 192.0.2.1", 429}, {"192.0.2.1, 192.0.2.3", 200}, {"", 200}, {"127.0.0.1", 429}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs syncBuffer
			ready := make(chan addrs, 1)
			exit := make(chan int, 1)
			args := []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "", "-web=false",
				"-key-file", filepath.Join(t.TempDir(), "k"), "-dev-join", "-join-burst", "1", "-join-rate", "0.001"}
			if tc.trusted != "" {
				args = append(args, "-trusted-proxies", tc.trusted)
			}
			go func() { exit <- run(ctx, args, &logs, ready) }()
			var a addrs
			select {
			case a = <-ready:
			case code := <-exit:
				t.Fatalf("exited %d: %s", code, logs.String())
			}
			for i, r := range tc.steps {
				req, err := http.NewRequest("POST", "http://"+a.http.String()+"/api/join", strings.NewReader(`{"players":1}`))
				if err != nil {
					t.Fatal(err)
				}
				if r.xff != "" {
					req.Header.Set("X-Forwarded-For", r.xff)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != r.want {
					t.Errorf("request %d (X-Forwarded-For %q): HTTP %d, want %d", i, r.xff, res.StatusCode, r.want)
				}
			}
			cancel()
			if code := <-exit; code != 0 {
				t.Fatalf("exit %d: %s", code, logs.String())
			}
		})
	}
}
