// Package doccmd finds the commands a user types in the project's
// documentation (README.md and docs/*.md), so that tests can run or
// check each of them: the shell blocks (```sh) hold one command a line
// (a trailing backslash continues it, # starts a comment, && and ;
// separate commands, a trailing & runs one in the background).
//
// A line that starts with for, while, until, if or case is one command
// whose program is that keyword.
//
// A block's commands are illustrative — shown, not checked — when an
// HTML comment on the line before the block says so:
//
//	<!-- illustrative -->                 every command of the block
//	<!-- illustrative: tshark pkill -->   the commands of those programs
//
// Use it for what needs a network, a capture privilege, another
// machine or a tool the tests do not run.
package doccmd

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Command is one command of a shell block.
type Command struct {
	File string // the document, relative to the root given to Find
	Line int    // where the command starts, 1-based
	Text string // as written, continuation lines joined
	// Env are the VAR=value words before the program.
	Env []string
	// Program is the program: for "go run ./cmd/NAME ..." NAME (what
	// "go install ./cmd/..." puts on PATH), else the first word.
	Program string
	// Args are the words after the program (after the package path for
	// go run), quotes removed.
	Args []string
	// Illustrative is set by a marker before the block.
	Illustrative bool
}

func (c Command) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// Docs are the documents Find reads, relative to the module root.
func Docs(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	for i, d := range docs {
		docs[i], _ = filepath.Rel(root, d)
	}
	return docs, nil
}

// Find returns the commands of every shell block of README.md and
// docs/*.md under root (the module root).
func Find(root string) ([]Command, error) {
	docs, err := Docs(root)
	if err != nil {
		return nil, err
	}
	var all []Command
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			return nil, err
		}
		cmds, err := Parse(d, string(b))
		if err != nil {
			return nil, err
		}
		all = append(all, cmds...)
	}
	return all, nil
}

// shellFences open the blocks whose lines are commands.
var shellFences = []string{"```sh", "```bash", "```shell", "```console"}

// shellKeywords start a compound command, kept whole.
var shellKeywords = []string{"for", "while", "until", "if", "case"}

// Parse returns the commands of the shell blocks of one document.
func Parse(file, text string) ([]Command, error) {
	var cmds []Command
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	n := 0
	prev := ""           // the last non-empty line outside a block
	in := false          // inside a shell block
	other := false       // inside another fenced block
	var marker *[]string // the block's illustrative programs; empty: all
	pending, start := "", 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case other:
			if strings.HasPrefix(trim, "```") {
				other = false
			}
			continue
		case !in && slices.Contains(shellFences, trim):
			in, marker = true, illustrative(prev)
			continue
		case !in && strings.HasPrefix(trim, "```"):
			other = true
			continue
		case !in:
			if trim != "" {
				prev = trim
			}
			continue
		case trim == "```":
			if pending != "" {
				return nil, fmt.Errorf("%s:%d: the block ends in a continued line", file, start)
			}
			in = false
			continue
		}
		if pending == "" {
			start = n
		}
		if s, ok := strings.CutSuffix(stripComment(line), `\`); ok {
			pending += s + " "
			continue
		}
		whole := strings.TrimSpace(pending + stripComment(line))
		pending = ""
		if whole == "" {
			continue
		}
		parts := splitCommands(whole)
		if f := strings.Fields(whole); slices.Contains(shellKeywords, f[0]) {
			parts = []string{whole} // a loop or a test is one command, its program the keyword
		}
		for _, part := range parts {
			c, err := parseCommand(file, start, part)
			if err != nil {
				return nil, err
			}
			if marker != nil && (len(*marker) == 0 || slices.Contains(*marker, c.Program)) {
				c.Illustrative = true
			}
			cmds = append(cmds, c)
		}
	}
	if in {
		return nil, fmt.Errorf("%s: a shell block is not closed", file)
	}
	return cmds, sc.Err()
}

// illustrative reads a marker line: nil when it is none.
func illustrative(line string) *[]string {
	s, ok := strings.CutPrefix(line, "<!--")
	if !ok {
		return nil
	}
	s, ok = strings.CutSuffix(s, "-->")
	if !ok {
		return nil
	}
	s, ok = strings.CutPrefix(strings.TrimSpace(s), "illustrative")
	if !ok {
		return nil
	}
	progs := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s), ":"))
	return &progs
}

// unquoted calls f with the index of each of line's bytes outside '...'
// and "..." (the quotes themselves excluded); f returns how many of the
// following bytes to skip, or stop.
func unquoted(line string, f func(i int) (skip int, stop bool)) {
	var q byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		default:
			skip, stop := f(i)
			if stop {
				return
			}
			i += skip
		}
	}
}

// stripComment drops a # comment that starts a word outside quotes.
func stripComment(line string) string {
	out := line
	unquoted(line, func(i int) (int, bool) {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			out = line[:i]
			return 0, true
		}
		return 0, false
	})
	return out
}

// splitCommands splits a line at &&, ; and a trailing & outside quotes.
func splitCommands(line string) []string {
	var out []string
	last := 0
	unquoted(line, func(i int) (int, bool) {
		if line[i] != ';' && line[i] != '&' {
			return 0, false
		}
		out = append(out, line[last:i])
		skip := 0
		if line[i] == '&' && i+1 < len(line) && line[i+1] == '&' {
			skip = 1
		}
		last = i + 1 + skip
		return skip, false
	})
	out = append(out, line[last:])
	kept := out[:0]
	for _, s := range out {
		if s = strings.TrimSpace(s); s != "" {
			kept = append(kept, s)
		}
	}
	return kept
}

// parseCommand splits one command into words.
func parseCommand(file string, line int, text string) (Command, error) {
	c := Command{File: file, Line: line, Text: text}
	words, err := Words(text)
	if err != nil {
		return c, fmt.Errorf("%s:%d: %v", file, line, err)
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		c.Env = append(c.Env, words[0])
		words = words[1:]
	}
	if len(words) == 0 {
		return c, fmt.Errorf("%s:%d: no program in %q", file, line, text)
	}
	c.Program, c.Args = words[0], words[1:]
	if c.Program == "go" && len(c.Args) >= 2 && c.Args[0] == "run" {
		if name, ok := strings.CutPrefix(c.Args[1], "./cmd/"); ok {
			c.Program, c.Args = name, c.Args[2:]
		}
	}
	return c, nil
}

// Words splits a command into words as a shell would for the quoting a
// document uses: '...' and "..." group and are removed; $(...) is kept
// as written.
func Words(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, word := rune(0), false
	for _, r := range s {
		switch {
		case in != 0 && r == in:
			in = 0
		case in != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			in, word = r, true
		case r == ' ' || r == '\t':
			if word {
				words = append(words, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	if in != 0 {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	if word {
		words = append(words, cur.String())
	}
	return words, nil
}
