//go:build race

package bench

// raceEnabled: the race detector slows every path several times over.
const raceEnabled = true
