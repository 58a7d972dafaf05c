package embedded

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// nkeyUser is a client's nkey and the options that present it with token.
func nkeyUser(t *testing.T, token string) (string, []nats.Option) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub, []nats.Option{nats.Nkey(pub, kp.Sign), nats.Token(token)}
}

func TestAuthorizeRequired(t *testing.T) {
	if _, err := Start(Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("an embedded NATS on TCP without Authorize started")
	}
	const token = "0123456789abcdef0123"
	var (
		mu    sync.Mutex // Authorize runs on the NATS server's goroutines
		asked []string
	)
	e, err := Start(Config{Listen: "127.0.0.1:0", MaxPayload: 1024, Authorize: func(tok, id string) (Permissions, bool) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
		return Permissions{Publish: []string{"x"}, Subscribe: []string{"y." + id}}, tok == token
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.URL() == "" {
		t.Fatal("no URL")
	}
	pub, opts := nkeyUser(t, token)
	nc, err := nats.Connect(e.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	mu.Lock()
	if len(asked) != 1 || asked[0] != pub {
		t.Fatalf("Authorize asked about %v, want the client's nkey %s", asked, pub)
	}
	mu.Unlock()
	if err := nc.Publish("x", make([]byte, 2048)); err == nil {
		t.Fatal("a 2 KiB message went through a 1 KiB payload limit")
	}
	// The permissions hold: a subscription outside them is refused.
	errs := make(chan error, 1)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
	if _, err := nc.SubscribeSync("y.other"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("subscribing outside the permissions: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a subscription outside the permissions was not refused")
	}

	_, wrong := nkeyUser(t, "wrong-token-wrong-token")
	if nc, err := nats.Connect(e.URL(), wrong...); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong token")
	}
	if nc, err := nats.Connect(e.URL(), nats.Token(token)); err == nil {
		nc.Close()
		t.Fatal("connected with a token and no nkey")
	}
	// An nkey whose signature does not verify: another key signs.
	other, _ := nkeys.CreateUser()
	if nc, err := nats.Connect(e.URL(), nats.Nkey(pub, other.Sign), nats.Token(token)); err == nil {
		nc.Close()
		t.Fatal("connected with a signature of another key")
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
