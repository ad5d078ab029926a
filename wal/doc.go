// Package wal is Oja's durable log: an append-only sequence of opaque records
// (the engine's encoded outcome events) numbered 1, 2, 3, … with no gaps,
// plus snapshots of engine state, stored in Pebble. It owns the data
// directory: nothing else opens the Pebble store in it.
//
// It knows nothing of what a record means. The actors encode events, Append
// them, and answer their callers only from done; on restart the engine is
// rebuilt from the latest snapshot plus Replay of the records after it.
//
// # Using it
//
//  1. Open(dir, Options{Sync: true}). Open fails with "wal: data dir is in
//     use" if another process has the directory open, and with a
//     *DamagedError if synced data is damaged ("Torn tail or corruption"
//     below). Pebble has already recovered its own WAL, dropping any torn,
//     unsynced tail.
//  2. LatestSnapshot(). If ok, decode data into the engine state; it is the
//     state after record seq. Otherwise start from the empty state and seq 0.
//     A snapshot whose checksum fails is skipped for an older one (or none):
//     a longer replay, reported by CorruptSnapshots. ReadLatestSnapshot(fn)
//     lends the same bytes to fn instead, mapped from the file on Linux
//     (no copy; valid until fn returns), as actors.Recover uses it, and
//     verifies the checksum while fn runs: if it fails, fn's work is set
//     aside and fn is called again with an older snapshot.
//  3. Replay(seq, apply). Apply each record to the state. Any error is fatal
//     to start-up: a *CorruptError names the first bad sequence ("wal:
//     corrupt record at seq 42: checksum mismatch"); serve nothing.
//  4. Serve: Append(recs, done) from any goroutine. Reply to the request that
//     caused the records only from done, and only if err == nil: that is the
//     moment they are durable. If err wraps ErrFailed, stop serving writes;
//     the process must restart (and will replay) to recover.
//  5. Now and then, SaveSnapshot(seq, state) with the state after record seq,
//     to shorten the next start-up's replay. The state may include records
//     not yet acknowledged: SaveSnapshot waits until 1..seq are durable.
//     DeleteSnapshots and Truncate (records older than a snapshot) keep the
//     store bounded ("A bounded log").
//  6. Close() after the last Append: it waits for every accepted Append's
//     done, syncs and closes.
//
// At any time while open, Checkpoint(dir) makes an online backup that Open
// accepts. Open(…, Options{ReadOnly: true}) serves offline tools (`oja wal
// stats|dump|verify|replay`) on a stopped server's directory: Stats, Replay
// (verify = Replay with a no-op fn), Snapshots and LatestSnapshot;
// TornTails reports an incomplete last write, Salvage cuts a damaged store
// back to its intact prefix in a new directory.
//
// # On-disk layout
//
// One Pebble store (FormatMajorVersion pebble.FormatNewest), two key spaces:
//
//	record:   'r' + big-endian uint64 seq  →  crc32c(payload) (4 bytes, little-endian) + payload
//	snapshot: 's' + big-endian uint64 seq  →  crc32c(ref) + ref: 0xFF, big-endian uint64 size, uint32 crc32c(data)
//	retained: "mretained"                  →  crc32c + big-endian uint64 first retained seq (after a Truncate)
//
// A snapshot's data is the file snapshots/<seq, 20 digits>.snap inside the
// store directory, written and synced before its key (snapfile.go: at a
// million quotes, ~300 MB that as a Pebble value cost 1.2 s of WAL replay
// and 2.3 s of decompressing and copying at every start). A key whose
// value is crc32c + data (no 0xFF marker) is a snapshot from before
// snapshot files, still read. Beside the store directory, <store>.acked is
// the acknowledgement mark (ackmark.go); <store>.clean-stop, the mark of
// earlier versions (written only by a clean Close), is read if there is no
// other and replaced by the first writable Open.
//
// Big-endian keys sort in sequence order, so Replay is one forward scan and
// Open finds the last sequence with one seek. The tables hold data blocks
// of 32 KiB (tableBlockBytes, CockroachDB's size) rather than Pebble's
// default 4 KiB: the log is read in whole scans, where each block costs a
// read, a buffer, a checksum and a cache entry, and rarely a record at a
// time. The CRC-32C (Castagnoli)
// checksum is ours, on top of Pebble's block checksums, so that Replay
// vouches for every record it hands out, end to end.
//
// # Group commit, and why one committer
//
// An fsync costs far more than writing a record: on the development machine
// one synced writer reaches 2k–7k commits/s, while group commit reaches
// 170k–330k synced records/s (64–512 waiting appenders; BenchmarkAppendSync).
// So Append only enqueues: under one mutex
// it assigns the next sequences (in call order) and queues the records. A
// single committer goroutine takes everything queued, writes it as one
// pebble.Batch (at most BatchRecordsMax records / BatchBytesMax bytes, whole
// Appends only), commits it with pebble.Sync, and then calls the done
// callbacks in sequence order. While it waits for the fsync, the next Appends
// accumulate for the next batch, so the batch size adapts to the load.
//
// There is exactly one committer because the on-disk order must equal
// sequence order. Pebble's WAL holds batches in the order they were committed.
// With several committers, the batch holding seqs 11..20 could be written,
// synced and acknowledged before the batch holding 1..10 was written; a crash
// then leaves acknowledged records after a hole. With one committer, every
// crash leaves a prefix 1..N of the sequence space on disk, and that prefix
// contains every acknowledged record. Letting each Append call
// db.Apply(…, pebble.Sync) itself (Pebble groups concurrent syncs too) was
// rejected for the same reason, and because sequence assignment would need a
// lock held across the commit anyway.
//
// # Durability guarantees
//
//   - done(firstSeq, nil) means the records are durable (fsync'd, with
//     Options.Sync) at firstSeq, firstSeq+1, …, and so is every record before
//     them, and the acknowledgement mark says so. They survive kill -9 and
//     power loss; damage to them is refused, never dropped as a torn tail.
//   - An Append is atomic: after a crash all of its records are present, or
//     none.
//   - After a crash the log holds records 1..N, contiguous, for some N at
//     least the last acknowledged sequence. Records after the last
//     acknowledged one may or may not be present (they were never promised).
//   - The first commit error (a failed write or fsync, or any Pebble fatal
//     error) fails the log: that Append's done, and every later one, gets an
//     error wrapping ErrFailed, and nothing is ever written again. Whether the
//     failed batch reached the disk is unknown; restart and replay to learn.
//     The process never exits on Pebble's behalf (see guardLogger).
//   - With Options.Sync false (benchmarks only) done runs after the write
//     reaches the OS, not the disk; a crash may lose acknowledged records.
//     Close still syncs.
//
// # Torn tail or corruption
//
// A crash (kill -9, power loss) can leave an incomplete last write in
// Pebble's WAL: a torn tail, which holds nothing acknowledged and is
// dropped. Damage to bytes that were synced — a flipped bit, a zeroed or
// misdirected sector — is corruption: dropping it, and everything after
// it, loses acknowledged records silently (measured, before it was told apart: 98 of 300
// quotes served after 64 flipped bytes). The two are told apart from
// evidence written after the damaged place, as in TigerBeetle's "protocol
// aware recovery": Pebble (FormatWALSyncChunks, which FormatNewest
// includes) writes into every WAL chunk header the offset synced so far.
// When its reader meets an unreadable chunk it reads on; a later intact
// chunk whose synced offset lies beyond the damage proves the damaged bytes
// had been synced, and Open fails with a corruption error. Open turns it
// into a *DamagedError naming the WAL file, the byte offset of the first
// unreadable record and the last record sequence read intact before it
// (integrity.go); `oja serve` and `oja wal verify` exit non-zero with it.
// A damaged SSTable or MANIFEST fails Pebble's block checksums and is
// refused the same way, as a DamagedError with Pebble's cause.
//
// NB: the WAL Pebble writes while it creates a store predates the store's
// format and carries no synced offsets, so Open creates a new store and
// closes it once before using it: every WAL that ever holds a record
// carries them (TestDamagedWALRefused fails without that).
//
// Pebble's reader looks for that evidence only from the 32 KiB block after
// the damaged one, so damage in a WAL's last block — up to 32 KiB of
// synced, acknowledged records — read as a torn tail after a crash
// (TestCorruptionInjection found 17 records lost to 8 flipped bytes). Open
// therefore first reads every WAL file itself (vouchedDamage, integrity.go):
// where reading ends in what would be a torn tail at byte x, it searches
// every later byte position for an intact chunk of the same log whose
// synced offset lies beyond x. Such a chunk was written after the bytes at
// x were synced; a torn write can never be followed by one (every chunk
// written after it carries a synced offset at or before it), so a true
// torn tail is never refused.
//
// Damage to the last group commit written before a stop — a clean one or
// a crash — has no later chunk at all, and is what a torn tail looks like.
// The acknowledgement mark tells the two apart (ackmark.go): the last
// acknowledged sequence, kept beside the store in a file of its own (other
// sectors than the WAL's; two alternating checksummed slots, so a torn
// write of it leaves the other), written and fdatasync'd after a group
// commit's WAL sync and before any of its done callbacks run. Every
// acknowledged record is at or below it, so Open refuses a log that no
// longer reaches it; it never claims a record that is not durable, so a
// true torn tail (unacknowledged records only) is never refused. A mark
// with no valid slot is damage too. A store without a mark (from before
// marks) is judged by Pebble alone.
//
// The mark costs a second sync per group commit. The marker goroutine
// writes it for everything committed meanwhile while the committer syncs the
// next group, but the two flushes share the disk: on the development
// machine BenchmarkAppendSync went from 82 k to 59–69 k synced records/s
// and one writer's acknowledgement from 0.29 to 0.37–0.43 ms; HTTP
// create-quote (bench/http.sh) from 15.8 k to 12.1 k req/s. Money first:
// without it, damage to the last writes before a power loss loses
// acknowledged records silently (TestCorruptionInjection finds it within
// 40 stores). A replica's acknowledgement (cluster mode) could stand in for it.
//
// Rejected: parsing Pebble's "stopped reading at offset" log line (the
// tools did; it cannot tell the two cases apart); vouching for the last
// commit with the next one inside the same WAL (acknowledging batch k only
// once batch k+1 is synced): one damaged sector covers both small batches,
// so the damage would still read as a torn tail; RocksDB's
// absolute-consistency recovery mode (every torn tail after a crash would
// refuse to start).
//
// The way out of a refused log is a backup (`oja admin backup`), or
// Salvage (salvage.go, `oja wal salvage --to NEWDIR`): it copies the store
// to a new directory cut back to the intact prefix — the damaged WAL file
// ends at the damaged record, later WAL files are left out, records and
// snapshots after the first gap are deleted — and reports the last
// acknowledged sequence it can prove (the acknowledgement mark, or the highest
// record still readable past the damage, read block by block) and the
// records it could still read, so the operator knows exactly what was lost.
// The damaged store is only read.
//
// # A bounded log
//
// Truncate(through) deletes records 1..through and the snapshots before
// through in one synced batch, records through+1 as the first retained
// sequence (a key of its own, so a read before it is a *TruncatedError,
// not a hole), and compacts the range to give the disk back. It requires a
// verified snapshot at through: the state the retained records start from.
// Which snapshots to keep and how far to truncate is the caller's policy
// (actors.Follower: --snapshot-every, --log-retention); SaveSnapshot and
// DeleteSnapshots only store and delete.
//
// # Limits
//
// RecordBytesMax (1 MiB per record), AppendRecordsMax and AppendBytesMax (one
// Append), BatchRecordsMax (4096) and BatchBytesMax (8 MiB) per group commit,
// QueueRecordsMax (65536 records accepted but not yet acknowledged; Append
// blocks beyond it) and SnapshotBytesMax (1 GiB).
package wal
