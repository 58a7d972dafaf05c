package main

import (
	"context"
	"crypto/rand"
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
	nc       *nats.Conn // the lobby's, or the game server's when there is no lobby
	serverNC *nats.Conn // the game server's own connection, with the embedded NATS
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
	// Each role connects with its own credentials: the lobby's and the
	// game server's (fleet.PermissionsFor).
	var lobbyCreds, serverCreds *fleet.Credentials
	switch {
	case o.natsURL != "":
		role := fleet.RoleLobby
		if o.http == "" {
			role = fleet.RoleServer
		}
		var c *fleet.Credentials
		if o.natsNKey != "" {
			c, err = fleet.LoadCredentials(role, o.natsToken, o.natsNKey)
		} else {
			c, err = fleet.NewCredentials(role, o.natsToken)
		}
		if err != nil {
			return nil, err
		}
		if f.nc, err = fleet.Dial(o.natsURL, c, name); err != nil {
			return nil, err
		}
		if role == fleet.RoleLobby {
			lobbyCreds = c
		} else {
			serverCreds = c
		}
		log.Info("fleet: NATS", "url", o.natsURL, "role", role, "nkey", c.ID())
	case o.http != "":
		// The embedded NATS admits the roles by their tokens: this
		// process's own (random, never leaving it) when it listens
		// nowhere else, the operator's with -nats-listen.
		tokens := map[fleet.Role]string{fleet.RoleServer: o.natsServerToken, fleet.RoleLobby: o.natsLobbyToken}
		for role, t := range tokens {
			if t == "" {
				tokens[role] = rand.Text()
			}
		}
		auth := fleet.Authorizer("", tokens)
		if f.embedded, err = embedded.Start(embedded.Config{Listen: o.natsListen, MaxPayload: fleet.MaxMessage,
			Authorize: func(token, id string) (embedded.Permissions, bool) {
				p, ok := auth(token, id)
				return embedded.Permissions(p), ok
			}}); err != nil {
			return nil, err
		}
		if lobbyCreds, err = fleet.NewCredentials(fleet.RoleLobby, tokens[fleet.RoleLobby]); err != nil {
			return nil, err
		}
		if f.nc, err = f.embedded.Connect(name, lobbyCreds.Options()...); err != nil {
			return nil, err
		}
		if game != nil {
			if serverCreds, err = fleet.NewCredentials(fleet.RoleServer, tokens[fleet.RoleServer]); err != nil {
				return nil, err
			}
			if f.serverNC, err = f.embedded.Connect(name, serverCreds.Options()...); err != nil {
				return nil, err
			}
		}
		if u := f.embedded.URL(); u != "" {
			log.Info("fleet: embedded NATS", "url", u, "lobbies", o.natsLobbyToken != "")
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
		cfg := fleet.MemberConfig{ID: serverCreds.ID(), Name: o.name, Types: []string{o.game}, Addrs: []string{o.publicAddr},
			Capacity: o.maxPlayers, Key: key, Load: game.load, Logger: log}
		if f.agones != nil {
			cfg.OnGrant = func(fleet.Request) { f.agones.Allocated() }
		}
		nc := f.nc
		if f.serverNC != nil {
			nc = f.serverNC
		}
		if f.member, err = fleet.Join(nc, cfg); err != nil {
			return nil, err
		}
		game.member = f.member
		log.Info("fleet: joined", "id", f.member.ID(), "name", f.member.Status().Name, "type", o.game, "capacity", o.maxPlayers)
	}
	if o.http != "" {
		if f.dir, err = fleet.NewDirectory(f.nc, fleet.DirectoryConfig{ID: lobbyCreds.ID(), Logger: log}); err != nil {
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
	if f.serverNC != nil {
		f.serverNC.Close()
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
