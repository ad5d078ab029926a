package engine

import "fmt"

// assert panics when cond is false. It guards programmer bugs only; business
// refusals are Results and operating failures are errors.
//
// NB: its arguments are boxed before it is called, whatever cond: on a hot
// path write `if bad { assert(false, ...) }` (Pool.ApplyHold boxing its
// pool id and amounts was 7 % of a replay's State.Apply).
func assert(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("engine: assertion failed: "+format, args...))
	}
}
