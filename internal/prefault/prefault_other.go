//go:build !linux

package prefault

func populate(addr, n uintptr) error { return nil }
