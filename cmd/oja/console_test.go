package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// consoleSession logs in to the console at admin (a base URL) with the
// admin token and returns a GET of path with that session: its status and
// page.
func consoleSession(t *testing.T, admin string) func(path string) (int, string) {
	t.Helper()
	c := newHTTPClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.Cleanup(c.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, admin+"/console/login", strings.NewReader(url.Values{"token": {crashAdminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("console login: %v", err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "oja_console" {
			cookie = ck
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("console login at %s: %d, cookie %v", admin, resp.StatusCode, cookie)
	}
	return func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		req.AddCookie(cookie)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// TestConsoleOverTheBinary: the console of `oja serve` shows the log's own
// figures (its collectors are the binary's wiring) and the demo market;
// on a cluster follower, the login and pages are forwarded to the leader
// (sessions live there), its files are served by the follower itself, and
// the cluster page names the leader and every member.
func TestConsoleOverTheBinary(t *testing.T) {
	s := newOjaServer(t, "--demo")
	s.start()
	get := consoleSession(t, s.adminURL())
	for path, want := range map[string][]string{
		"/console/cluster":            {"A single node", "oja_wal_last_seq", "oja_wal_durable_seq", "oja_data_filesystem_avail_bytes"},
		"/console/?mode=sandbox":      {"balanced", "consensus", "NGN/USDT"},
		"/console/pools?mode=sandbox": {"Set rate"},
	} {
		status, page := get(path)
		for _, w := range want {
			if status != http.StatusOK || !strings.Contains(page, w) {
				t.Fatalf("%s: %d, want %q in:\n%.3000s", path, status, w, page)
			}
		}
	}

	nodes := clusterNodes(t)
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	leader, follower, _ := leaderFollowerKey(t, client, nodes)
	leaderID := flagValue(leader.extra, "--node")
	get = consoleSession(t, follower.adminURL())
	status, page := get("/console/cluster")
	if status != http.StatusOK || !strings.Contains(page, `<dd id="leader">`+leaderID+`</dd>`) {
		t.Fatalf("the cluster page through a follower: %d, want leader %s:\n%.3000s", status, leaderID, page)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		if !strings.Contains(page, "<td>"+id+"</td>") {
			t.Fatalf("the cluster page lacks %s:\n%.3000s", id, page)
		}
	}
	if status, _ := get("/console/static/console.js"); status != http.StatusOK {
		t.Fatalf("the console's script on a follower: %d", status)
	}
	// The live rates are the leader's: a follower answers at once.
	start := time.Now()
	if status, _ := get("/console/rates?mode=sandbox"); status == http.StatusOK || time.Since(start) > 5*time.Second {
		t.Fatalf("live rates asked of a follower: %d after %v", status, time.Since(start))
	}
}
