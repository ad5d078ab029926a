package cluster

import (
	"strings"
	"testing"
)

func TestParseFile(t *testing.T) {
	good := `{"nodes":[{"id":"n1","raft":"127.0.0.1:7001","public":"127.0.0.1:8080","admin":"127.0.0.1:8081"},
		{"id":"n2","raft":"127.0.0.1:7002","public":"127.0.0.1:8082","admin":"127.0.0.1:8083"}]}`
	f, err := ParseFile([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := f.Member("n2"); !ok || m.Admin != "127.0.0.1:8083" {
		t.Fatalf("member n2: %+v %v", m, ok)
	}
	for name, tc := range map[string]struct{ file, want string }{
		"empty":         {`{"nodes":[]}`, "must list 1 to 9 members"},
		"unknown field": {`{"nodes":[],"leader":"n1"}`, `unknown field "leader"`},
		"bad id":        {`{"nodes":[{"id":"n 1","raft":"h:1","public":"h:2","admin":"h:3"}]}`, `nodes[0].id: "n 1"`},
		"twice": {`{"nodes":[{"id":"n1","raft":"h:1","public":"h:2","admin":"h:3"},{"id":"n1","raft":"h:4","public":"h:5","admin":"h:6"}]}`,
			`nodes[1].id: "n1" appears twice`},
		"wildcard": {`{"nodes":[{"id":"n1","raft":"0.0.0.0:1","public":"h:2","admin":"h:3"}]}`, "nodes[0].raft: \"0.0.0.0:1\" must name a host"},
		"no port":  {`{"nodes":[{"id":"n1","raft":"h","public":"h:2","admin":"h:3"}]}`, "nodes[0].raft: \"h\" must be host:port"},
		"shared address": {`{"nodes":[{"id":"n1","raft":"h:1","public":"h:2","admin":"h:3"},{"id":"n2","raft":"h:2","public":"h:5","admin":"h:6"}]}`,
			`nodes[1].raft: "h:2" is also nodes[0].public`},
		"trailing": {good + `{}`, "trailing data"},
	} {
		_, err := ParseFile([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	// Every problem is named, not only the first.
	_, err = ParseFile([]byte(`{"nodes":[{"id":"","raft":"x","public":"h:2","admin":"h:0"}]}`))
	for _, want := range []string{"nodes[0].id", "nodes[0].raft", "nodes[0].admin"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestRecordBatch(t *testing.T) {
	recs := [][]byte{[]byte("a"), {}, []byte(strings.Repeat("x", 300))}
	var got [][]byte
	if err := forEachRecord(encodeRecords(recs), func(r []byte) error { got = append(got, append([]byte(nil), r...)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0]) != "a" || len(got[1]) != 0 || len(got[2]) != 300 {
		t.Fatalf("round trip: %q", got)
	}
	for _, bad := range [][]byte{nil, {2, 1, 'a'}, append(encodeRecords(recs), 0)} {
		if err := forEachRecord(bad, func([]byte) error { return nil }); err == nil {
			t.Errorf("batch %x accepted", bad)
		}
	}
}
