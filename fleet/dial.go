package fleet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Dial connects to the fleet's NATS at url (nats://host:port; several
// comma-separated for a cluster) with the credentials c. It keeps trying
// in the background when NATS is not up yet, and reconnects for ever;
// but it fails at once when NATS refuses the credentials.
func Dial(url string, c *Credentials, name string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
	}
	nc, err := nats.Connect(url, append(opts, c.Options()...)...)
	if err != nil {
		return nil, fmt.Errorf("fleet: NATS %s: %w", url, err)
	}
	return nc, nil
}
