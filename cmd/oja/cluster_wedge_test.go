package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/oja-exchange/oja/internal/poll"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterCannotBeWedged: over three real nodes with mutual TLS, what an
// adversarial probe found leaves the cluster serving:
//
//   - a second `oja serve` on a running node's data dir is refused, exit 3,
//     naming the lock, as on a single node;
//   - with a node stopped, adding a member nobody runs is 409 and the
//     configuration stays three voters, the partner API answering;
//   - a leader paused with SIGSTOP for 12 s, continued, then sent SIGTERM
//     exits within 15 s;
//   - removing the leader, asked of the leader, answers 200;
//   - every line of every node's log has one "node" key.
func TestClusterCannotBeWedged(t *testing.T) {
	t.Parallel()
	nodes := clusterNodes(t)
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	slow := &http.Client{Timeout: 90 * time.Second}
	byID := func(id string) *ojaServer {
		for i, s := range nodes {
			if fmt.Sprintf("n%d", i+1) == id {
				return s
			}
		}
		t.Fatalf("no node %s", id)
		return nil
	}
	_, _, key := leaderFollowerKey(t, client, nodes)
	create := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)
	voters := func(s *ojaServer) int {
		var v clusterView
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", s.adminURL()+"/admin/v1/cluster", crashAdminToken, nil).body, &v)
		return len(v.Nodes)
	}

	// One lock, one message, exit 3.
	_, stderr, code := runOja(t, nodes[0].bin, nodes[0].env, append([]string{"serve", "--data", nodes[0].data,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, nodes[0].extra...)...)
	if code != 3 || !strings.Contains(stderr, "is in use by another running oja") || !strings.Contains(stderr, "serve.lock") {
		t.Fatalf("a second serve on a cluster node's data dir: exit %d, %q", code, stderr)
	}

	// An unreachable member added while a node is down.
	leader := byID(leaderOf(t, client, nodes[0], 20*time.Second))
	var down *ojaServer
	for _, s := range nodes {
		if s != leader {
			down = s
			break
		}
	}
	down.crash()
	began := time.Now()
	res, err := do(slow, "POST", leader.adminURL()+"/admin/v1/cluster/nodes", crashAdminToken,
		fmt.Appendf(nil, `{"id":"n4","raft":%q}`, freeAddr(t)))
	if err != nil || res.status != http.StatusConflict || !strings.Contains(string(res.body), "not reachable") {
		t.Fatalf("adding an unreachable member with a node down: %v %d %s", err, res.status, res.body)
	}
	t.Logf("the unreachable add was refused in %v", time.Since(began).Round(time.Millisecond))
	if n := voters(leader); n != 3 {
		t.Fatalf("%d members after the refused add, want 3", n)
	}
	mustDo(t, client, http.StatusOK, "POST", leader.publicURL()+"/api/v1/partners/marketplace/intent", key, create)
	if err := down.startOnce(); err != nil {
		t.Fatal(err)
	}

	// A leader paused 12 s, continued, then terminated: out within 15 s.
	leader = byID(leaderOf(t, client, nodes[0], 20*time.Second))
	p := leader.proc.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(12 * time.Second)
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let it find out it was deposed
	stopped := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.proc.done:
		t.Logf("the paused leader exited %v after SIGTERM: %v", time.Since(stopped).Round(time.Millisecond), leader.proc.state)
	case <-time.After(15 * time.Second):
		_ = p.Signal(syscall.SIGQUIT) // its goroutines into the log, for the failure
		time.Sleep(time.Second)
		t.Fatalf("the paused leader still runs 15 s after SIGTERM")
	}
	if err := leader.startOnce(); err != nil {
		t.Fatal(err)
	}

	// Removing the leader, asked of the leader, answers.
	leaderID := leaderOf(t, client, nodes[0], 20*time.Second)
	leader = byID(leaderID)
	began = time.Now()
	res, err = do(slow, "DELETE", leader.adminURL()+"/admin/v1/cluster/nodes/"+leaderID, crashAdminToken, nil)
	if err != nil || res.status != http.StatusOK {
		t.Fatalf("removing the leader %s: %v %d %s", leaderID, err, res.status, res.body)
	}
	t.Logf("the leader's removal answered in %v", time.Since(began).Round(time.Millisecond))
	var left *ojaServer
	for _, s := range nodes {
		if s != leader {
			left = s
		}
	}
	clusterTerm(t, client, left, 20*time.Second, func(l string, _ uint64) bool { return l != leaderID })
	// The new leader serves once its term has started: a partner retries
	// a 503 (no acknowledged write is lost either way).
	poll.Until(t, 20*time.Second, func() string {
		res, err := do(client, "POST", left.publicURL()+"/api/v1/partners/marketplace/intent", key, create)
		if err != nil || res.status != http.StatusOK {
			return fmt.Sprintf("no write taken after the leader's removal: %v %d %s", err, res.status, res.body)
		}
		return ""
	})

	// One node key a line.
	for _, s := range nodes {
		requireOneNodeKey(t, s.logPath)
	}
}

// requireOneNodeKey fails if a JSON line of the log at path has no "node"
// key or more than one.
func requireOneNodeKey(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue // a start marker, a goroutine dump
		}
		d := json.NewDecoder(strings.NewReader(line))
		if _, err := d.Token(); err != nil {
			t.Fatalf("%s: %v in %s", path, err, line)
		}
		nodeKeys := 0
		for d.More() {
			k, err := d.Token()
			if err != nil {
				t.Fatalf("%s: %v in %s", path, err, line)
			}
			if k == "node" {
				nodeKeys++
			}
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				t.Fatalf("%s: %v in %s", path, err, line)
			}
		}
		if nodeKeys != 1 {
			t.Fatalf("%s: %d node keys in %s", path, nodeKeys, line)
		}
		lines++
	}
	if lines == 0 {
		t.Fatalf("%s: no JSON lines", path)
	}
}
