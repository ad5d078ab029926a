package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReceivedByMatchesReceive keeps addresses.go's list true: every
// message declared received by an actor type is a case of that type's
// Receive, and every message type a Receive handles (other than
// protoactor's own) is declared received by it, so send and ask refuse
// exactly the messages Receive would drop.
func TestReceivedByMatchesReceive(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]map[string]bool{} // actor type → message types declared
	handled := map[string]map[string]bool{}  // actor type → message types in Receive's cases
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			recv := starName(fn.Recv.List[0].Type)
			switch fn.Name.Name {
			case "receivedBy":
				actorType := starName(fn.Type.Params.List[0].Type)
				add(declared, actorType, recv)
			case "Receive":
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if c, ok := n.(*ast.CaseClause); ok {
						for _, x := range c.List {
							if name := starName(x); name != "" {
								add(handled, recv, name)
							}
						}
					}
					return true
				})
			}
		}
	}
	if len(declared) != 5 || len(handled) != 5 {
		t.Fatalf("found receivedBy lists for %v and Receive methods of %v; want the five actor types",
			slices.Sorted(maps.Keys(declared)), slices.Sorted(maps.Keys(handled)))
	}
	for actorType, msgs := range declared {
		for msg := range msgs {
			if !handled[actorType][msg] {
				t.Errorf("*%s is declared received by *%s, whose Receive has no case for it", msg, actorType)
			}
		}
	}
	for actorType, msgs := range handled {
		for msg := range msgs {
			if !declared[actorType][msg] && !strings.HasPrefix(msg, "actor.") {
				t.Errorf("*%s's Receive handles *%s, which does not declare receivedBy(*%s)", actorType, msg, actorType)
			}
		}
	}
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// starName is the name of a pointer type *T or *pkg.T, "" for anything
// else.
func starName(x ast.Expr) string {
	star, ok := x.(*ast.StarExpr)
	if !ok {
		return ""
	}
	switch t := star.X.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		if pkg, ok := t.X.(*ast.Ident); ok {
			return pkg.Name + "." + t.Sel.Name
		}
	}
	return ""
}
