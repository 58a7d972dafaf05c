package netem

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAgainstKernelNetem runs scripts/netem-tc.sh, which measures one
// profile through the kernel's netem (two namespaces, a veth pair) and
// through tickwire-netem, and compares the two. It skips where the
// kernel has no sch_netem or namespaces cannot be made (the script says
// why); TICKWIRE_REQUIRE_TOOLS does not change that, as no package
// install provides a kernel module.
func TestAgainstKernelNetem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("network namespaces and tc are Linux only")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	script := filepath.Join("..", "..", "scripts", "netem-tc.sh")
	out, err := exec.Command("bash", script, "-spec", "delay 10ms 2ms loss 1%", "-n", "1000").CombinedOutput()
	text := string(out)
	if i := strings.Index(text, "SKIP: "); i >= 0 {
		t.Skip(strings.TrimSpace(text[i:]))
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, text)
	}
	probe := regexp.MustCompile(`(?m)^(kernel netem|tickwire-netem)\s*: sent=\d+ received=\d+ lost=([\d.]+)% .* rtt mean=(\S+)`)
	rows := probe.FindAllStringSubmatch(text, -1)
	if len(rows) != 2 {
		t.Fatalf("want one kernel and one tickwire-netem measurement:\n%s", text)
	}
	var loss [2]float64
	var rtt [2]time.Duration
	for i, r := range rows {
		loss[i], _ = strconv.ParseFloat(r[2], 64)
		rtt[i], _ = time.ParseDuration(r[3])
	}
	t.Logf("\n%s", text)
	// 1% each way: about 2% of round trips lost; 20ms mean round trip.
	if d := loss[0] - loss[1]; d > 2.5 || d < -2.5 {
		t.Errorf("round-trip loss: kernel %.2f%%, tickwire-netem %.2f%%", loss[0], loss[1])
	}
	if d := rtt[0] - rtt[1]; d > 3*time.Millisecond || d < -3*time.Millisecond {
		t.Errorf("mean round trip: kernel %v, tickwire-netem %v", rtt[0], rtt[1])
	}
}
