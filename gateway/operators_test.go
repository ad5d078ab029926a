package gateway_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestOperatorsAndAudit: root makes a viewer and an operator (tokens shown
// once); a viewer reads but its writes are 403 and change nothing; an
// operator acts but cannot manage operators; every write that was made
// (not the refused ones, which change nothing) is in the audit trail
// newest first with who made it, paged by startingAfter; a revoked token is 401; operators and the trail survive a
// restart.
func TestOperatorsAndAudit(t *testing.T) {
	dir := t.TempDir()
	s := gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	tok := gatewaytest.AdminToken
	made := func(name, role string) (id, token string) {
		t.Helper()
		r := do(t, "POST", s.Admin+"/admin/v1/operators", tok, map[string]any{"name": name, "role": role})
		wantStatus(t, r, http.StatusCreated)
		o := object(t, r)
		wantKeys(t, "operator", o, "operatorId", "name", "role", "createdAt", "token")
		return getString(t, o, "operatorId"), getString(t, o, "token")
	}
	viewerID, viewer := made("Ada Viewer", "viewer")
	_, op := made("Bayo Operator", "operator")
	wantError(t, do(t, "POST", s.Admin+"/admin/v1/operators", tok, map[string]any{"name": "Bayo Operator", "role": "viewer"}), 409, "CONFLICT")
	// Names are unique as people read them (engine.CanonicalOperatorName).
	for _, name := range []string{"root", "ROOT ", "bayo  operator", "BAYO OPERATOR"} {
		wantError(t, do(t, "POST", s.Admin+"/admin/v1/operators", tok, map[string]any{"name": name, "role": "viewer"}), 409, "CONFLICT")
	}
	for _, name := range []string{"r\u043e\u043et", "ro\u200bot", "", "  "} {
		details := wantError(t, do(t, "POST", s.Admin+"/admin/v1/operators", tok, map[string]any{"name": name, "role": "viewer"}), 400, "VALIDATION_ERROR")
		wantDetailsNames(t, details, "name")
	}
	wantError(t, do(t, "POST", s.Admin+"/admin/v1/operators", tok, map[string]any{"name": "x", "role": "admin"}), 400, "VALIDATION_ERROR")

	wantStatus(t, do(t, "GET", s.Admin+"/admin/v1/pools", viewer, nil), http.StatusOK)
	before := len(s.Sys.Clients())
	wantError(t, do(t, "POST", s.Admin+"/admin/v1/clients", viewer, map[string]any{"name": "by a viewer"}), 403, "FORBIDDEN")
	if len(s.Sys.Clients()) != before {
		t.Fatal("a viewer's write created a client")
	}
	wantStatus(t, do(t, "POST", s.Admin+"/admin/v1/clients", op, map[string]any{"name": "by an operator"}), http.StatusCreated)
	wantError(t, do(t, "POST", s.Admin+"/admin/v1/operators", op, map[string]any{"name": "z", "role": "viewer"}), 403, "FORBIDDEN")
	wantError(t, do(t, "POST", s.Admin+"/admin/v1/clients", "oja_op_nonsense", map[string]any{"name": "x"}), 401, "UNAUTHORIZED")

	type line struct{ operator, action string }
	want := []line{
		{"Bayo Operator", "POST /admin/v1/clients"},
		{"root", "POST /admin/v1/operators"},
		{"root", "POST /admin/v1/operators"},
	}
	statuses := []string{"201", "201", "201"}
	check := func(base string) {
		t.Helper()
		var got []map[string]any
		after := ""
		for len(got) < len(want)+1 {
			url := base + "/admin/v1/audit?limit=2"
			if after != "" {
				url += "&startingAfter=" + after
			}
			page := wantOK(t, do(t, "GET", url, viewer, nil))
			for _, e := range getArray(t, page, "data") {
				got = append(got, e.(map[string]any))
			}
			if page["hasMore"] != true {
				break
			}
			after = getString(t, got[len(got)-1], "id")
		}
		if len(got) != len(want) {
			t.Fatalf("%d audit lines, want %d: %v", len(got), len(want), got)
		}
		for i, e := range got {
			// Each line is written with its write: it has details.
			wantKeys(t, "audit line", e, "id", "operator", "operatorId", "action", "target", "status", "details", "createdAt")
			if e["operator"] != want[i].operator || e["action"] != want[i].action || fmt.Sprint(e["status"]) != statuses[i] {
				t.Errorf("audit line %d: %v, want %v %v", i, e, want[i], statuses[i])
			}
		}
	}
	check(s.Admin)

	wantOK(t, do(t, "DELETE", s.Admin+"/admin/v1/operators/"+viewerID, tok, nil))
	wantError(t, do(t, "GET", s.Admin+"/admin/v1/pools", viewer, nil), 401, "UNAUTHORIZED")
	wantError(t, do(t, "GET", s.Admin+"/admin/v1/audit?startingAfter=00000000-0000-0000-0000-000000000009", tok, nil), 400, "VALIDATION_ERROR")
	list := getArray(t, wantOK(t, do(t, "GET", s.Admin+"/admin/v1/operators", op, nil)), "data")
	// Oldest first, ties (one millisecond) by id: find the viewer by name.
	revoked := map[string]bool{}
	for _, o := range list {
		revoked[getString(t, o, "name")] = o.(map[string]any)["revokedAt"] != nil
	}
	if len(list) != 2 || !revoked["Ada Viewer"] || revoked["Bayo Operator"] {
		t.Fatalf("operators: %v", list)
	}

	// A restart: the operator's token still works, the trail is the same
	// (plus the revocation).
	s.Stop()
	s = gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	want = append([]line{{"root", "DELETE /admin/v1/operators/{operatorId}"}}, want...)
	statuses = append([]string{"200"}, statuses...)
	viewer = op // reads with the operator's token now
	check(s.Admin)
}
