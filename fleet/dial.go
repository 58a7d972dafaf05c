package fleet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Dial connects to the fleet's NATS at url (nats://host:port; several
// comma-separated for a cluster) with token (empty: none, or the user
// and password in url). It keeps trying in the background when NATS is
// not up yet, and reconnects for ever.
func Dial(url, token, name string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
	}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: NATS %s: %w", url, err)
	}
	return nc, nil
}
