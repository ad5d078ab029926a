//go:build !invariants

package engine

// InvariantsEnabled reports whether this build checks the expensive
// invariants after every applied event (invariants.go): not without
// `-tags invariants`.
const InvariantsEnabled = false
