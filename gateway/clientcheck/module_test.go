package clientcheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientModuleStandsAlone: a partner who imports the client builds
// the standard library, shopspring/decimal and the client's own packages,
// nothing of the server (Pebble, protoactor, fasthttp, Raft, Prometheus).
// It asks the go command for the client module's build graph, from the
// client's directory, as a partner's build would see it; and it reads the
// client's go.mod, which must require no module of this repository (a
// replace there would not reach a partner).
func TestClientModuleStandsAlone(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list in client/: %v\n%s", err, out)
	}
	allowed := func(path string) bool {
		return path == "github.com/shopspring/decimal" ||
			path == "github.com/oja-exchange/oja/client" ||
			strings.HasPrefix(path, "github.com/oja-exchange/oja/client/")
	}
	var seen int
	for _, path := range strings.Fields(string(out)) {
		seen++
		if !allowed(path) {
			t.Errorf("the client module builds %s; a partner's build should need only the standard library and shopspring/decimal", path)
		}
	}
	if seen < 3 { // client, client/fxmsg, decimal
		t.Fatalf("go list named %d packages, want at least 3:\n%s", seen, out)
	}

	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "module github.com/oja-exchange/oja/client" {
		t.Errorf("client/go.mod does not begin with the client's module line: %q", lines[0])
	}
	for i, line := range lines[1:] {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "github.com/oja-exchange/") {
			t.Errorf("client/go.mod line %d names %q: the client must build without the server's modules", i+2, line)
		}
		if strings.HasPrefix(line, "replace") {
			t.Errorf("client/go.mod line %d is a replace directive, which a partner's build ignores", i+2)
		}
	}
}
