package wal

import (
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestTablesUseLargeBlocks: the tables the log writes hold data blocks of
// tableBlockBytes, not Pebble's default of 4 KiB, so a replay reads a
// block, and pays a block's fixed costs, once in eight.
func TestTablesUseLargeBlocks(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "db", false)
	defer closeLog(t, l)
	rng := rand.New(rand.NewPCG(1, 2))
	rec := make([]byte, 200) // about a QuoteCreated
	for range 40 {
		batch := make([][]byte, 0, 256)
		for range cap(batch) {
			for i := range rec {
				rec[i] = byte(rng.Uint32()) // incompressible
			}
			batch = append(batch, append([]byte(nil), rec...))
		}
		if _, err := l.AppendWait(batch...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := l.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var raw, blocks uint64
	for _, level := range levels {
		for _, table := range level {
			raw += table.Properties.RawKeySize + table.Properties.RawValueSize
			blocks += table.Properties.NumDataBlocks
		}
	}
	if blocks == 0 {
		t.Fatal("no data blocks after a flush")
	}
	// A block is cut once it reaches the target, so the mean block holds
	// at least most of it (the last block of a table is the exception).
	if mean := raw / blocks; mean < tableBlockBytes*3/4 {
		t.Fatalf("%d bytes in %d data blocks: %d a block, want about %d", raw, blocks, mean, tableBlockBytes)
	}
}
