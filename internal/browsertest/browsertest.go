// Package browsertest drives Debian's headless chromium for the browser
// tests (chromedp): find it, start it, open tabs in their own browser
// contexts, run steps with deadlines and keep screenshots as artifacts.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// LookChromium finds Debian's chromium; without it the test skips, or
// fails when TICKWIRE_REQUIRE_TOOLS is set (as test.sh sets it).
func LookChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TICKWIRE_REQUIRE_TOOLS") != "" {
		t.Fatal("chromium not found and TICKWIRE_REQUIRE_TOOLS is set (apt-get install chromium)")
	}
	t.Skip("chromium not installed; ./test.sh installs it")
	return ""
}

// ArtifactDir is where screenshots go: $TICKWIRE_ARTIFACTS/name, or a
// new temporary directory that outlives the test so the files can be
// looked at.
func ArtifactDir(t *testing.T, name string) string {
	t.Helper()
	var dir string
	var err error
	if base := os.Getenv("TICKWIRE_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, name)
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "tickwire-"+name+"-")
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// NewBrowser starts a headless chromium with a fresh profile, a window
// of w×h and the extra command-line flags, and returns a context on it
// that has already run (so children open tabs in it).
func NewBrowser(t *testing.T, w, h int, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := LookChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	)
	opts = append(opts, flags...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Tab is one browser context (its own cookies and storage) with one tab.
type Tab struct {
	T    *testing.T
	Name string
	Ctx  context.Context // has run once; actions use deadline-bound children
	dir  string
	shot *int

	mu         sync.Mutex
	errors     []string // the first maxErrors exceptions and console errors
	dropped    int      // errors after those
	exceptions []string // the first maxErrors uncaught exceptions alone
}

// Exceptions returns the page's uncaught exceptions so far (at most
// maxErrors): a script error, where console errors may be a page's
// expected complaints (a transport falling back).
func (p *Tab) Exceptions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exceptions...)
}

// NewTab opens a tab named name in a new browser context of browser;
// its screenshots go to dir, numbered by *shot (shared by the tabs of a
// test, so the files sort in the order taken).
func NewTab(t *testing.T, browser context.Context, name, dir string, shot *int) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab for %s: %v", name, err)
	}
	p := &Tab{T: t, Name: name, Ctx: ctx, dir: dir, shot: shot}
	if err := chromedp.Listen(ctx, p.keepError); err != nil {
		t.Fatalf("listen to the tab of %s: %v", name, err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.errors {
			t.Logf("%s: page error: %s", name, e)
		}
		if p.dropped > 0 {
			t.Logf("%s: %d more page errors", name, p.dropped)
		}
	})
	return p
}

// maxErrors is how many of a page's errors a Tab keeps to log.
const maxErrors = 20

// keepError keeps the page's uncaught exceptions and console errors, to
// log if the test fails (a page that stopped drawing says why).
func (p *Tab) keepError(ev any) {
	var e string
	exception := false
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		exception = true
		if d := ev.ExceptionDetails; d != nil {
			e = d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				e += " " + d.Exception.Description
			}
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
			return
		}
		e = "console." + string(ev.Type) + ":"
		for _, a := range ev.Args {
			if a.Description != "" {
				e += " " + a.Description
			} else {
				e += " " + string(a.Value)
			}
		}
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if exception && len(p.exceptions) < maxErrors {
		p.exceptions = append(p.exceptions, e)
	}
	if len(p.errors) < maxErrors {
		p.errors = append(p.errors, e)
	} else {
		p.dropped++
	}
}

// Do runs steps with a deadline of 15 s, failing the test with what was
// being done (and a screenshot).
func (p *Tab) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	p.DoWithin(15*time.Second, what, steps...)
}

// DoWithin is Do with another deadline.
func (p *Tab) DoWithin(limit time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	start := time.Now()
	defer func() { p.T.Logf("%s: %s took %v", p.Name, what, time.Since(start)) }()
	ctx, cancel := context.WithTimeout(p.Ctx, limit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.Screenshot("failed-" + what)
		p.T.Fatalf("%s: %s: %v", p.Name, what, err)
	}
}

// Screenshot saves the whole page as NN-name-what.png.
func (p *Tab) Screenshot(what string) {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.T.Errorf("%s: screenshot %s: %v", p.Name, what, err)
		return
	}
	p.save(what, png)
}

// ViewportScreenshot saves what the window shows as NN-name-what.png.
func (p *Tab) ViewportScreenshot(what string) {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.T.Errorf("%s: screenshot %s: %v", p.Name, what, err)
		return
	}
	p.save(what, png)
}

func (p *Tab) save(what string, png []byte) {
	p.T.Helper()
	*p.shot++
	path := filepath.Join(p.dir, fmt.Sprintf("%02d-%s-%s.png", *p.shot, p.Name, what))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.T.Error(err)
		return
	}
	p.T.Logf("screenshot: %s", path)
}
