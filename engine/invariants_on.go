//go:build invariants

package engine

// InvariantsEnabled reports whether this build checks the expensive
// invariants after every applied event (invariants.go): built with
// `-tags invariants`.
const InvariantsEnabled = true
