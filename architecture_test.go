package tickwire_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this module's path; "(root)" names it in docs/ARCHITECTURE.md.
const module = "github.com/tickwire/tickwire"

// archRule is one row of docs/ARCHITECTURE.md's package table: the
// module packages pkg may import directly ("*": any) and those it must
// never reach, directly or through another ("*": none of the module's).
type archRule struct {
	pkg   string
	may   []string
	never []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readArchitecture parses the package table of docs/ARCHITECTURE.md.
func readArchitecture(t *testing.T) []archRule {
	f, err := os.Open("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rules []archRule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
		if len(cols) != 4 {
			t.Fatalf("docs/ARCHITECTURE.md: a table row with %d columns, want 4: %s", len(cols), line)
		}
		names := func(col string) []string {
			var out []string
			for _, m := range backticked.FindAllStringSubmatch(col, -1) {
				out = append(out, m[1])
			}
			return out
		}
		pkg := names(cols[0])
		if len(pkg) != 1 {
			t.Fatalf("docs/ARCHITECTURE.md: row names %d packages: %s", len(pkg), line)
		}
		rules = append(rules, archRule{pkg: pkg[0], may: names(cols[2]), never: names(cols[3])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rules
}

// short is a module package's name in the table.
func short(path string) string {
	if path == module {
		return "(root)"
	}
	return strings.TrimPrefix(path, module+"/")
}

// goList runs go list with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestArchitecture: every package of the module has a row in
// docs/ARCHITECTURE.md's table, imports only the module packages its row
// allows, and reaches none of those its row forbids, directly or not.
func TestArchitecture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	rules := readArchitecture(t)
	byPkg := map[string]archRule{}
	for _, r := range rules {
		byPkg[r.pkg] = r
	}
	for _, path := range goList(t, "-f", "{{.ImportPath}}", "./...") {
		name := short(path)
		r, ok := byPkg[name]
		if !ok {
			if strings.HasPrefix(name, "cmd/") || strings.HasPrefix(name, "scripts/") || strings.HasPrefix(name, "bench/cmd/") {
				continue // a command: it wires packages, and may import any
			}
			t.Errorf("%s has no row in docs/ARCHITECTURE.md", name)
			continue
		}
		delete(byPkg, name)
		if !slices.Contains(r.may, "*") {
			for _, imp := range goList(t, "-f", `{{join .Imports "\n"}}`, path) {
				if (imp == module || strings.HasPrefix(imp, module+"/")) && !slices.Contains(r.may, short(imp)) {
					t.Errorf("%s imports %s, which its row in docs/ARCHITECTURE.md does not allow", name, short(imp))
				}
			}
		}
		for _, dep := range goList(t, "-deps", "-f", "{{.ImportPath}}", path) {
			if dep == path || (dep != module && !strings.HasPrefix(dep, module+"/")) {
				continue
			}
			if slices.Contains(r.never, "*") || slices.Contains(r.never, short(dep)) {
				t.Errorf("%s reaches %s, which docs/ARCHITECTURE.md says it must never import", name, short(dep))
			}
		}
	}
	for name := range byPkg {
		t.Errorf("docs/ARCHITECTURE.md has a row for %s, which is not a package of the module", name)
	}
}
