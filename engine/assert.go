package engine

import "fmt"

// assert panics when cond is false. It guards programmer bugs only; business
// refusals are Results and operating failures are errors.
func assert(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("engine: assertion failed: "+format, args...))
	}
}
