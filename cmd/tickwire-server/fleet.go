package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/fleet/embedded"
)

// fleetParts are this process's place in a fleet: the NATS connection
// (to the embedded server or an external one), the game server's Member,
// the lobby's Directory and the Agones reports; each nil when unused.
type fleetParts struct {
	embedded *embedded.Server
	nc       *nats.Conn
	member   *fleet.Member
	dir      *fleet.Directory
	agones   *fleet.Agones
	log      *slog.Logger
}

// joinFleet connects to the fleet: an external NATS with -nats, else an
// embedded one when this process runs the lobby. The game server (game,
// nil in a lobby-only process) announces itself; the lobby watches.
// Without -nats and without a lobby, the server runs alone: nil parts.
func joinFleet(ctx context.Context, o *options, log *slog.Logger, key tickwire.Key, game *gameHost) (_ *fleetParts, err error) {
	f := &fleetParts{log: log}
	name := strings.TrimSpace("tickwire-server " + o.name) // the NATS connection's
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	switch {
	case o.natsURL != "":
		if f.nc, err = fleet.Dial(o.natsURL, o.natsToken, name); err != nil {
			return nil, err
		}
		log.Info("fleet: NATS", "url", o.natsURL)
	case o.http != "":
		if f.embedded, err = embedded.Start(embedded.Config{Listen: o.natsListen, Token: o.natsToken, MaxPayload: fleet.MaxMessage}); err != nil {
			return nil, err
		}
		if f.nc, err = f.embedded.Connect(name); err != nil {
			return nil, err
		}
		if u := f.embedded.URL(); u != "" {
			log.Info("fleet: embedded NATS", "url", u)
		}
	default:
		return f, nil
	}
	agonesURL, err := fleet.AgonesURLFromEnv()
	if err != nil {
		return nil, err
	}
	if agonesURL != "" && game != nil {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		f.agones, err = fleet.StartAgones(actx, fleet.AgonesConfig{URL: agonesURL, Capacity: o.maxPlayers, Load: game.load, Logger: log})
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if game != nil {
		// An empty -name makes the Member name the server by its address.
		cfg := fleet.MemberConfig{Name: o.name, Types: []string{o.game}, Addrs: []string{o.publicAddr},
			Capacity: o.maxPlayers, Key: key, Load: game.load, Logger: log}
		if f.agones != nil {
			cfg.OnGrant = func(fleet.Request) { f.agones.Allocated() }
		}
		if f.member, err = fleet.Join(f.nc, cfg); err != nil {
			return nil, err
		}
		game.member = f.member
		log.Info("fleet: joined", "id", f.member.ID(), "name", f.member.Status().Name, "type", o.game, "capacity", o.maxPlayers)
	}
	if o.http != "" {
		if f.dir, err = fleet.NewDirectory(f.nc, fleet.DirectoryConfig{Logger: log}); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ended is closed when Agones was told the last game ended.
func (f *fleetParts) ended() <-chan struct{} {
	if f.agones == nil {
		return nil
	}
	return f.agones.Ended()
}

// drain tells the fleet this server takes no new game.
func (f *fleetParts) drain() {
	if f.member != nil {
		f.member.Drain()
	}
}

func (f *fleetParts) close() {
	var errs []error
	if f.dir != nil {
		errs = append(errs, f.dir.Close())
	}
	if f.member != nil {
		errs = append(errs, f.member.Close())
	}
	if f.agones != nil {
		f.agones.Close()
	}
	if f.nc != nil {
		f.nc.Close()
	}
	if f.embedded != nil {
		f.embedded.Close()
	}
	if err := errors.Join(errs...); err != nil {
		f.log.Warn("fleet: leaving", "err", err)
	}
}
