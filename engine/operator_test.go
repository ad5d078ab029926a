package engine_test

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestOperatorsAndAudit: operators are created and revoked by records, bad
// ones refused before anything changes; the audit trail pages newest first
// from any entry it keeps, keeps only the newest AuditKeptMax, and both
// survive a snapshot (version 7) and change the state's hash.
func TestOperatorsAndAudit(t *testing.T) {
	w := newWorld(t)
	ngozi := engine.OperatorID(w.newID())
	w.apply(&engine.OperatorCreated{At: w.now, Operator: ngozi, Name: "Ngozi", Role: engine.RoleOperator, Hash: sha256.Sum256([]byte("t"))})
	for _, bad := range []engine.Event{
		&engine.OperatorCreated{At: w.now, Operator: ngozi, Name: "again", Role: engine.RoleViewer},
		&engine.OperatorCreated{At: w.now, Operator: engine.OperatorID(w.newID()), Name: engine.RootOperator, Role: engine.RoleViewer},
		&engine.OperatorCreated{At: w.now, Operator: engine.OperatorID(w.newID()), Name: "", Role: engine.RoleViewer},
		&engine.OperatorCreated{At: w.now, Operator: engine.OperatorID(w.newID()), Name: "x", Role: 9},
		&engine.OperatorRevoked{At: w.now, Operator: engine.OperatorID(w.newID())},
		&engine.OperatorActed{At: w.now, Operator: "Ngozi", Action: "POST /x"}, // no id
	} {
		before := w.state.Hash()
		if err := w.state.Apply(bad); err == nil {
			t.Fatalf("%T %+v applied", bad, bad)
		}
		if w.state.Hash() != before {
			t.Fatalf("a refused %T changed the state", bad)
		}
	}
	var ids []engine.AuditID
	for i := range 5 {
		id := engine.AuditID(w.newID())
		ids = append(ids, id)
		w.apply(&engine.OperatorActed{At: w.now + int64(i), Audit: id, Operator: "Ngozi", OperatorID: ngozi,
			Action: "POST /admin/v1/clients", Target: fmt.Sprintf("/admin/v1/clients#%d", i), Status: 201})
	}
	before := w.state.Hash()
	w.apply(&engine.OperatorRevoked{At: w.now + 9, Operator: ngozi})
	if w.state.Operators[ngozi].RevokedAt != w.now+9 || w.state.Hash() == before {
		t.Fatal("the revocation did not show")
	}
	page, more, found := w.state.AuditPage(engine.AuditID{}, 2)
	if !found || !more || len(page) != 2 || page[0].ID != ids[4] || page[1].ID != ids[3] {
		t.Fatalf("first page: %+v more %v", page, more)
	}
	page, more, found = w.state.AuditPage(ids[1], 10)
	if !found || more || len(page) != 1 || page[0].ID != ids[0] {
		t.Fatalf("after the second: %+v more %v", page, more)
	}
	if _, _, found := w.state.AuditPage(engine.AuditID(w.newID()), 10); found {
		t.Fatal("a page after an unknown entry")
	}
	restored, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != w.state.Hash() || len(restored.Audit) != 5 || restored.Operators[ngozi].Name != "Ngozi" {
		t.Fatalf("the snapshot lost operators or the audit trail: %d entries", len(restored.Audit))
	}
	// Only the newest AuditKeptMax are kept.
	for i := range engine.AuditKeptMax + engine.AuditKeptMax/8 {
		w.apply(&engine.OperatorActed{At: w.now + 10, Audit: engine.AuditID(w.newID()), Operator: engine.RootOperator, Action: "POST /x", Status: 200})
		if n := len(w.state.Audit); n > engine.AuditKeptMax+engine.AuditKeptMax/8 {
			t.Fatalf("after %d more entries the state keeps %d", i+1, n)
		}
	}
	if n := len(w.state.Audit); n < engine.AuditKeptMax {
		t.Fatalf("the state keeps %d entries, want at least %d", n, engine.AuditKeptMax)
	}
	if _, _, found := w.state.AuditPage(ids[4], 1); found {
		t.Fatal("the oldest entries are still kept")
	}
}
