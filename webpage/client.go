package webpage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The files of a built client.
const (
	WASMFile   = "client.wasm"
	LoaderFile = "wasm_exec.js"
)

// clientPackage is the browser client's main package.
const clientPackage = "github.com/tickwire/tickwire/cmd/tickwire-web"

// Client is a browser client build: the WebAssembly module and the
// loader of the Go release that built it. The zero value is a build not
// done yet; Set and Fail finish it (a server serves the page while the
// build runs).
type Client struct {
	mu     sync.Mutex
	wasm   []byte
	gz     []byte // wasm gzipped
	loader []byte
	err    error
	done   bool
	start  func() // starts the build on the first request (BuildOnDemand)
	once   sync.Once
}

// LoadClient reads a client built beforehand from dir (client.wasm and
// wasm_exec.js).
func LoadClient(dir string) (*Client, error) {
	c := &Client{}
	wasm, err := os.ReadFile(filepath.Join(dir, WASMFile))
	if err != nil {
		return nil, err
	}
	loader, err := os.ReadFile(filepath.Join(dir, LoaderFile))
	if err != nil {
		return nil, err
	}
	c.set(wasm, loader)
	return c, nil
}

func (c *Client) set(wasm, loader []byte) {
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	w.Write(wasm)
	w.Close()
	c.mu.Lock()
	c.wasm, c.gz, c.loader, c.done = wasm, gz.Bytes(), loader, true
	c.mu.Unlock()
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	c.err, c.done = err, true
	c.mu.Unlock()
}

// files returns the build, or why there is none (errBuilding while the
// build runs).
func (c *Client) files() (wasm, gz, loader []byte, err error) {
	if c.start != nil {
		c.once.Do(c.start)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.done:
		return nil, nil, nil, errBuilding
	case c.err != nil:
		return nil, nil, nil, c.err
	}
	return c.wasm, c.gz, c.loader, nil
}

var errBuilding = errors.New("webpage: the browser client is being built")

// Build compiles the browser client with the go command goBin (""
// means "go" on PATH) into dir, from the source of the module in the
// current directory, and returns it loaded. The build cache makes a
// build after the first take seconds.
func Build(ctx context.Context, goBin, dir string) (*Client, error) {
	c := &Client{}
	if err := c.build(ctx, goBin, dir); err != nil {
		return nil, err
	}
	return c, nil
}

// BuildOnDemand returns a client that Build makes the first time the
// page asks for it (a server that nobody plays in the browser builds
// nothing); until then the page hears it is being built. done, if not
// nil, hears how the build went.
func BuildOnDemand(goBin, dir string, done func(error)) *Client {
	c := &Client{}
	c.start = func() {
		go func() {
			err := c.build(context.Background(), goBin, dir)
			if err != nil {
				c.fail(err)
			}
			if done != nil {
				done(err)
			}
		}()
	}
	return c
}

func (c *Client) build(ctx context.Context, goBin, dir string) error {
	if goBin == "" {
		goBin = "go"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := exec.CommandContext(ctx, goBin, "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("webpage: go env GOROOT: %w", err)
	}
	out := filepath.Join(dir, WASMFile)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", out, clientPackage)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("webpage: build the browser client (GOOS=js GOARCH=wasm go build %s): %w\n%s", clientPackage, err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	loader, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", LoaderFile))
	if err != nil {
		return fmt.Errorf("webpage: the Go release's loader: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, LoaderFile), loader, 0o644); err != nil {
		return err
	}
	c.set(wasm, loader)
	return nil
}
