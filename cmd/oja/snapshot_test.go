package main

import (
	"fmt"
	"github.com/oja-exchange/oja/internal/poll"
	"os"
	"strings"
	"testing"
	"time"
)

// --snapshot-every and --log-retention (and their OJA_ variables): the
// defaults the issue names, and bad values refused.
func TestSnapshotFlags(t *testing.T) {
	c, err := parseServe(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.snapshotEvery != 100000 || c.logRetention != 168*time.Hour {
		t.Errorf("defaults: --snapshot-every %d --log-retention %v", c.snapshotEvery, c.logRetention)
	}
	for _, bad := range [][]string{{"--snapshot-every", "-1"}, {"--snapshot-every", "many"}, {"--log-retention", "-1h"}, {"--log-retention", "week"}} {
		if _, err := parseServe(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	t.Setenv("OJA_SNAPSHOT_EVERY", "5000")
	t.Setenv("OJA_LOG_RETENTION", "24h")
	if c, err := parseServe(nil); err != nil || c.snapshotEvery != 5000 || c.logRetention != 24*time.Hour {
		t.Errorf("OJA_SNAPSHOT_EVERY=5000 OJA_LOG_RETENTION=24h: %+v %v", c, err)
	}
}

// A serving process saves snapshots every --snapshot-every events without
// a restart, reports them on /metrics, and the next start recovers from
// the newest and replays only what followed it.
func TestSnapshotsWhileServing(t *testing.T) {
	t.Parallel()
	srv, key := demoServer(t, "--snapshot-every", "50")
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	body := []byte(intentBodyDemo)
	for i := range 120 {
		mustDo(t, client, 200, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", key, body,
			"Idempotency-Key", fmt.Sprintf("snap-%d", i))
	}
	metric := func(name string) (v float64) {
		res := mustDo(t, client, 200, "GET", srv.adminURL()+"/metrics", crashAdminToken, nil)
		for _, line := range strings.Split(string(res.body), "\n") {
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				fmt.Sscan(rest, &v)
			}
		}
		return v
	}
	poll.Until(t, 10*time.Second, func() string {
		if metric("oja_snapshots_saved_total") < 2 {
			return fmt.Sprintf("no two snapshots after %v events with --snapshot-every 50", metric("oja_wal_durable_seq"))
		}
		return ""
	})
	last := metric("oja_snapshot_last_seq")
	if last < 100 || metric("oja_snapshot_last_bytes") <= 0 || metric("oja_follower_applied_seq") < last {
		t.Errorf("snapshot metrics: last seq %v, bytes %v, applied %v", last, metric("oja_snapshot_last_bytes"), metric("oja_follower_applied_seq"))
	}
	srv.stop()

	stats, errOut, code := runOja(t, srv.bin, childEnv(), "wal", "stats", "--data", srv.data)
	if code != 0 || strings.Contains(stats, "snapshots   0\n") {
		t.Fatalf("wal stats after serving: exit %d\n%s%s", code, stats, errOut)
	}
	if out, errOut, code := runOja(t, srv.bin, childEnv(), "wal", "verify", "--data", srv.data); code != 0 {
		t.Fatalf("wal verify: exit %d\n%s%s", code, out, errOut)
	}
	srv.start()
	logText, _ := os.ReadFile(srv.logPath)
	starts := strings.Split(string(logText), "==== start 2")
	recovered := starts[len(starts)-1]
	i := strings.Index(recovered, `"msg":"recovered"`)
	if i < 0 {
		t.Fatalf("no recovered line:\n%s", recovered)
	}
	var events int
	if j := strings.Index(recovered[i:], `"events":`); j < 0 {
		t.Fatalf("no events in %s", recovered[i:])
	} else {
		fmt.Sscan(recovered[i+j+len(`"events":`):], &events)
	}
	if events >= 50 {
		t.Errorf("the restart replayed %d events; a snapshot every 50 should leave fewer", events)
	}
}

// --log-retention over the real binary: with a short retention, the
// records older than it are deleted once a snapshot covers them, while
// serving; the store still verifies, and a restart serves every quote.
func TestLogRetentionWhileServing(t *testing.T) {
	t.Parallel()
	srv, key := demoServer(t, "--snapshot-every", "40", "--log-retention", "1s")
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	var ids []string
	deadline := time.Now().Add(15 * time.Second)
	for first := uint64(0); first < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("nothing deleted after 15 s with --log-retention 1s and %d quotes", len(ids))
		}
		for range 20 {
			var q map[string]any
			decodeJSON(t, mustDo(t, client, 200, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", key,
				[]byte(intentBodyDemo)).body, &q)
			ids = append(ids, str(q, "quoteId"))
		}
		time.Sleep(200 * time.Millisecond)
		res := mustDo(t, client, 200, "GET", srv.adminURL()+"/metrics", crashAdminToken, nil)
		for _, line := range strings.Split(string(res.body), "\n") {
			if rest, ok := strings.CutPrefix(line, "oja_wal_first_retained_seq "); ok {
				var v float64
				fmt.Sscan(rest, &v)
				first = uint64(v)
			}
		}
	}
	srv.stop()
	stats, errOut, code := runOja(t, srv.bin, childEnv(), "wal", "stats", "--data", srv.data)
	if code != 0 || !strings.Contains(stats, "deleted by log retention") {
		t.Fatalf("wal stats: exit %d\n%s%s", code, stats, errOut)
	}
	if out, errOut, code := runOja(t, srv.bin, childEnv(), "wal", "verify", "--data", srv.data); code != 0 {
		t.Fatalf("wal verify after retention: exit %d\n%s%s", code, out, errOut)
	}
	srv.start()
	for _, id := range ids {
		mustDo(t, client, 200, "GET", srv.publicURL()+quotePath+id, key, nil)
	}
	t.Logf("%d quotes served after a restart on a log whose first records were deleted:\n%s", len(ids), stats)
}
