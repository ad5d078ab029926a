package main

import (
	"os"

	"github.com/oja-exchange/oja/cmd/oja/waltools"
)

// walCommand runs `oja wal …` (package waltools).
func walCommand(args []string) error {
	return waltools.Run(args, os.Stdout, os.Stderr)
}
