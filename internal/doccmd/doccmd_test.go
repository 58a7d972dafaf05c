package doccmd

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	doc := "text\n\n```sh\n" +
		"# a comment\n" +
		"go run ./cmd/tickwire-server -http 127.0.0.1:8080 &   # in the background\n" +
		"GOOS=js tickwire-bot -n 5 \\\n    -spec \"delay 5ms # not a comment\"\n" +
		"mkdir -p x && cd x; ls\n" +
		"```\n\n<!-- illustrative: tshark for -->\n```sh\n" +
		"tshark -i lo\nfor p in a b; do echo $p & sleep 1; done\nls\n" +
		"```\n<!-- illustrative -->\n```bash\nanything 'at all'\n```\n```go\nnot a command\n```\n"
	cmds, err := Parse("doc.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Line    int
		Env     []string
		Program string
		Args    []string
		Ill     bool
	}
	var got []short
	for _, c := range cmds {
		got = append(got, short{c.Line, c.Env, c.Program, c.Args, c.Illustrative})
	}
	want := []short{
		{5, nil, "tickwire-server", []string{"-http", "127.0.0.1:8080"}, false},
		{6, []string{"GOOS=js"}, "tickwire-bot", []string{"-n", "5", "-spec", "delay 5ms # not a comment"}, false},
		{8, nil, "mkdir", []string{"-p", "x"}, false},
		{8, nil, "cd", []string{"x"}, false},
		{8, nil, "ls", nil, false},
		{13, nil, "tshark", []string{"-i", "lo"}, true},
		{14, nil, "for", []string{"p", "in", "a", "b;", "do", "echo", "$p", "&", "sleep", "1;", "done"}, true},
		{15, nil, "ls", nil, false},
		{19, nil, "anything", []string{"at all"}, true},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

// checkedElsewhere are the programs whose commands their own package's
// TestDocCommands checks: it parses each command's flags with the
// binary's flag set and validation, as the binary would.
var checkedElsewhere = []string{"tickwire-server", "tickwire-bot", "tickwire-netem", "tickwire-replay"}

// How TestDocCommands treats a command.
const (
	skipped   = iota // illustrative, or checked by its binary's test
	goBuild          // go build or go install: built here
	goTest           // go test -run: its pattern listed here
	unchecked        // none of those: the test fails
)

func kindOf(c Command) int {
	switch {
	case c.Illustrative, slices.Contains(checkedElsewhere, c.Program):
		return skipped
	case c.Program == "go" && len(c.Args) > 0 && (c.Args[0] == "build" || c.Args[0] == "install"):
		return goBuild
	case c.Program == "go" && len(c.Args) > 0 && c.Args[0] == "test":
		return goTest
	}
	return unchecked
}

// TestNewCommand: a command added to a document that no test checks and
// no marker names fails TestDocCommands; marking it, or writing one of a
// checked binary, does not.
func TestNewCommand(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{"```sh\ncurl http://localhost:8080/healthz\n```\n", unchecked},
		{"<!-- illustrative: curl -->\n```sh\ncurl http://localhost:8080/healthz\n```\n", skipped},
		{"<!-- illustrative -->\n```sh\ncurl http://localhost:8080/healthz\n```\n", skipped},
		{"<!-- illustrative: tshark -->\n```sh\ncurl http://localhost:8080/healthz\n```\n", unchecked},
		{"```sh\ntickwire-server -game swarm\n```\n", skipped},
		{"```sh\ngo install ./cmd/...\n```\n", goBuild},
	} {
		cmds, err := Parse("new.md", tc.doc)
		if err != nil || len(cmds) != 1 {
			t.Fatalf("%q: %v %v", tc.doc, cmds, err)
		}
		if got := kindOf(cmds[0]); got != tc.want {
			t.Errorf("%q: kind %d, want %d", tc.doc, got, tc.want)
		}
	}
}

// TestDocCommands: every command a user types in README.md and
// docs/*.md is checked, by a test of its binary (checkedElsewhere) or
// here (go build, go install and go test: built, and the test pattern
// listed), or marked illustrative. A new command that is neither fails.
func TestDocCommands(t *testing.T) {
	root := filepath.Join("..", "..")
	cmds, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatal("no commands found in the docs")
	}
	builds := 0
	for _, c := range cmds {
		switch kindOf(c) {
		case goBuild:
			builds++
			t.Run(c.File+":"+strings.Fields(c.Text)[0], func(t *testing.T) { goCommand(t, root, c, buildArgs(t, c)) })
		case goTest:
			t.Run(c.File+":go-test", func(t *testing.T) { goTestList(t, root, c) })
		case unchecked:
			t.Errorf("%v\n\tnot checked by a test: check it (internal/doccmd) or mark the block <!-- illustrative: %s -->", c, c.Program)
		}
	}
	if builds == 0 {
		t.Error("no go build or go install command in the docs: README.md should say how to install the binaries")
	}
}

// buildArgs are a go build or go install command's arguments for a
// build that writes into a temporary directory (install: build).
func buildArgs(t *testing.T, c Command) []string {
	args := []string{"build", "-o", t.TempDir() + string(filepath.Separator)}
	rest := c.Args[1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == "-o" {
			i++ // the document's output path
			continue
		}
		args = append(args, rest[i])
	}
	return args
}

func goCommand(t *testing.T, root string, c Command, args []string) {
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), c.Env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%v: go %s: %v\n%s", c, strings.Join(args, " "), err, out)
	}
}

// goTestList checks a go test command's -run pattern names tests that
// exist, without running them.
func goTestList(t *testing.T, root string, c Command) {
	run, pkgs := "", []string(nil)
	for i := 1; i < len(c.Args); i++ {
		switch a := c.Args[i]; {
		case a == "-run" && i+1 < len(c.Args):
			run = c.Args[i+1]
			i++
		case !strings.HasPrefix(a, "-"):
			pkgs = append(pkgs, a)
		}
	}
	if run == "" || len(pkgs) == 0 {
		t.Fatalf("%v: want go test -run PATTERN PACKAGES", c)
	}
	cmd := exec.Command("go", append([]string{"test", "-list", run}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nTest") && !strings.HasPrefix(string(out), "Test") {
		t.Errorf("%v: go test -list %s: %v\n%s", c, run, err, out)
	}
}

// TestDocsIndex: every document in docs/ is in the index docs/README.md
// and in the README's layout table.
func TestDocsIndex(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := Docs(root)
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		name := filepath.Base(d)
		if d == "README.md" {
			continue
		}
		if name != "README.md" && !strings.Contains(string(index), "("+name+")") {
			t.Errorf("docs/README.md does not list %s", name)
		}
		if !strings.Contains(string(readme), "| `docs/"+name+"` |") {
			t.Errorf("README.md's layout table has no row for docs/%s", name)
		}
	}
}

// history names the project's own history, which a reader cannot
// follow: the design notes it started from and its issue numbers.
var history = regexp.MustCompile(`(?i)seed 00|issue [0-9]`)

// TestNoHistory: the docs, the README and the Go source (its comments
// are the godoc) explain ideas instead of citing history.
func TestNoHistory(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		doc := rel == "README.md" || filepath.Dir(rel) == "docs" && strings.HasSuffix(rel, ".md")
		code := strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")
		if d.IsDir() || !doc && !code {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if history.MatchString(line) {
				t.Errorf("%s:%d: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
