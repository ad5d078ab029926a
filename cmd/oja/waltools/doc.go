// Package waltools is the offline log tools (spec §12): `oja wal
// stats|dump|verify|replay|salvage` on a stopped server's data dir, one
// file per tool.
//
// Each one opens the store read-only. Pebble first replays its own WAL and
// drops a torn, unsynced tail (what a crash or kill -9 leaves); the tools
// cannot see those bytes as records, but they report them, from their own
// read of the WAL files (wal.TornTails). Damage that is not a torn tail is
// refused by the open (wal.DamagedError) and named. A running server holds
// the store's lock, so a tool on its data dir is refused (exit status 3)
// rather than reading a store that is being written.
package waltools
