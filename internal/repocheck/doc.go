// Package repocheck holds the tests that keep the repository's documents
// and its code saying the same thing: the engine free of goroutines,
// channels, locks, clocks and randomness, as engine/doc.go and
// ARCHITECTURE.md say it is; the gateway over its narrow services, not
// the actors' System; every "spec §N" the code and the documents
// cite a section of docs/spec.md; every link and every path a document
// names present in the repository; no citation of anything outside it.
// It has no code of its own.
package repocheck
