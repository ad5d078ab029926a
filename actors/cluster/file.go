package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
)

// Member is one node of the cluster file.
type Member struct {
	ID     string `json:"id"`
	Raft   string `json:"raft"`   // Raft transport address, host:port
	Public string `json:"public"` // public API listen address
	Admin  string `json:"admin"`  // admin API listen address
}

// File is `oja serve --cluster FILE`: every member of the cluster. Every
// node starts with the same file; the first start on empty data dirs
// bootstraps the cluster from it.
type File struct {
	Nodes []Member `json:"nodes"`
}

// membersMax bounds a cluster file: Raft's cost grows with the members, and
// a payments cluster needs 3 or 5.
const membersMax = 9

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// LoadFile reads and validates a cluster file, naming every problem.
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	return ParseFile(b)
}

// ParseFile validates a cluster file's JSON.
func ParseFile(b []byte) (*File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("cluster file: trailing data after the JSON object")
	}
	var problems []error
	if len(f.Nodes) == 0 || len(f.Nodes) > membersMax {
		problems = append(problems, fmt.Errorf("nodes: must list 1 to %d members, not %d", membersMax, len(f.Nodes)))
	}
	ids, addrs := map[string]bool{}, map[string]string{}
	for i, m := range f.Nodes {
		at := fmt.Sprintf("nodes[%d]", i)
		if !idPattern.MatchString(m.ID) {
			problems = append(problems, fmt.Errorf("%s.id: %q must be 1 to 64 letters, digits, '-' or '_'", at, m.ID))
		} else if ids[m.ID] {
			problems = append(problems, fmt.Errorf("%s.id: %q appears twice", at, m.ID))
		}
		ids[m.ID] = true
		for _, a := range []struct{ name, addr string }{{"raft", m.Raft}, {"public", m.Public}, {"admin", m.Admin}} {
			if err := checkAddr(a.addr); err != nil {
				problems = append(problems, fmt.Errorf("%s.%s: %q %v", at, a.name, a.addr, err))
				continue
			}
			if other, dup := addrs[a.addr]; dup {
				problems = append(problems, fmt.Errorf("%s.%s: %q is also %s", at, a.name, a.addr, other))
			}
			addrs[a.addr] = at + "." + a.name
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("cluster file: %w", errors.Join(problems...))
	}
	return &f, nil
}

// checkAddr requires host:port with a host other nodes can reach (Raft
// advertises it; followers forward to it).
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("must be host:port")
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return errors.New("must name a host other nodes can reach, not a wildcard")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return errors.New("must have a port from 1 to 65535")
	}
	return nil
}

// Member returns the member with id.
func (f *File) Member(id string) (Member, bool) {
	for _, m := range f.Nodes {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}
