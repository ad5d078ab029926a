// Package lincheck is the model of a quote's lifecycle that the cluster
// tests check their histories against for linearizability (porcupine, as
// etcd's robustness tests use it): operations on one Idempotency-Key's
// quote (create, get, cancel), through any node, with faults.
package lincheck

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Input is one operation on the quote of Key.
type Input struct {
	Key string
	Op  string // "create", "get", "cancel"
}

// Output is what the operation answered.
type Output struct {
	Unknown bool   // no answer, or 503: the write may or may not have happened
	Status  string // get: the quote's status ("not found" too); cancel: "ok" or "refused"
}

// Unanswered is an Operation's Return for a write that got no answer: it
// may take effect at any later time.
const Unanswered = math.MaxInt64

// Model is one quote: "" (not yet created), "pending", "cancelled". An
// unanswered write may or may not have taken effect.
var Model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(string), input.(Input), output.(Output)
		switch in.Op {
		case "create":
			if s == "" {
				if out.Unknown {
					return []any{"", "pending"}
				}
				return []any{"pending"}
			}
			return []any{s} // a replay returns the same quote
		case "get":
			if out.Status == s || s == "" && out.Status == "not found" {
				return []any{s}
			}
			return nil
		case "cancel":
			switch {
			case out.Unknown:
				if s == "pending" {
					return []any{"pending", "cancelled"}
				}
				return []any{s}
			case out.Status == "ok" && (s == "pending" || s == "cancelled"):
				return []any{"cancelled"} // cancelling a cancelled quote answers it again
			case out.Status == "refused" && s != "pending" && s != "cancelled" && s != "":
				return []any{s}
			}
			return nil
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		if out.Unknown {
			return fmt.Sprintf("%s(%s) -> ?", in.Op, in.Key)
		}
		return fmt.Sprintf("%s(%s) -> %s", in.Op, in.Key, out.Status)
	},
}

// Check checks history within timeout. It returns porcupine's verdict and,
// unless it is Ok, the operations of the first quote whose history is not
// linearizable (and writes porcupine's visualization to htmlPath, when
// set).
func Check(history []porcupine.Operation, timeout time.Duration, htmlPath string) (porcupine.CheckResult, string) {
	model := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	if res == porcupine.Ok {
		return res, ""
	}
	if htmlPath != "" {
		if f, err := os.Create(htmlPath); err == nil {
			_ = porcupine.Visualize(model, info, f)
			f.Close()
		}
	}
	var b strings.Builder
	for _, part := range Model.Partition(history) {
		if porcupine.CheckOperations(model, part) {
			continue
		}
		for _, op := range part {
			ret := "∞"
			if op.Return != Unanswered {
				ret = fmt.Sprint(op.Return - part[0].Call)
			}
			fmt.Fprintf(&b, "  worker %d [%d, %s] %s\n", op.ClientId, op.Call-part[0].Call, ret, Model.DescribeOperation(op.Input, op.Output))
		}
		break
	}
	return res, b.String()
}
