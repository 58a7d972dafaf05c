package embedded

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestTokenRequired(t *testing.T) {
	if _, err := Start(Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("an embedded NATS on TCP without a token started")
	}
	if _, err := Start(Config{Listen: "127.0.0.1:0", Token: "short"}); err == nil {
		t.Fatal("an embedded NATS on TCP with a 5-character token started")
	}
	token := "0123456789abcdef0123"
	e, err := Start(Config{Listen: "127.0.0.1:0", Token: token, MaxPayload: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.URL() == "" {
		t.Fatal("no URL")
	}
	nc, err := nats.Connect(e.URL(), nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("x", make([]byte, 2048)); err == nil {
		t.Fatal("a 2 KiB message went through a 1 KiB payload limit")
	}
	// Counted before the wrong token's attempt, whose connection the
	// server drops in its own time.
	if n := e.Clients(); n != 1 {
		t.Fatalf("%d clients, want 1", n)
	}
	if nc, err := nats.Connect(e.URL(), nats.Token("wrong-token-wrong-token")); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong token")
	}
}

func TestInProcessOnly(t *testing.T) {
	e, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.URL() != "" {
		t.Fatalf("listens on %s without Listen", e.URL())
	}
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}
