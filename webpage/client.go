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
	"runtime"
	"strings"
	"sync"
	"time"
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
	began  time.Time // when the build began
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
		return nil, nil, nil, buildingError{time.Since(c.began)}
	case c.err != nil:
		return nil, nil, nil, c.err
	}
	return c.wasm, c.gz, c.loader, nil
}

var errBuilding = errors.New("webpage: the browser client is being built")

// buildingError is errBuilding with how long the build has run, which
// the page shows while it waits.
type buildingError struct{ took time.Duration }

func (e buildingError) Error() string {
	return fmt.Sprintf("building the browser client… %d s (the first build takes a minute or two; the game starts when it is done)", int(e.took.Seconds()))
}

func (e buildingError) Is(target error) bool { return target == errBuilding }

// SourceDir is the root of the tickwire module source this binary was
// compiled from, which Build compiles the browser client from: a clone
// (go run, go build, go install ./cmd/...) or the module cache (go
// install ...@version). The compiler records each source file's path in
// the binary; a binary built with -trimpath, or whose source has gone,
// has none ("") and builds from the current directory's module.
func SourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(file))
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			if strings.Trim(f[1], `"`) == modulePath {
				return root
			}
			break
		}
	}
	return ""
}

// modulePath is the module the client package is in.
const modulePath = "github.com/tickwire/tickwire"

// Build compiles the browser client with the go command goBin (""
// means "go" on PATH) into dir, from the module source in SourceDir (or
// the current directory's module without one), and returns it loaded. The build cache makes a
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
		c.mu.Lock()
		c.began = time.Now()
		c.mu.Unlock()
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
	out, err := filepath.Abs(filepath.Join(dir, WASMFile))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", out, clientPackage)
	cmd.Dir = SourceDir() // "": the current directory's module
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
