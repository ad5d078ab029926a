package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// corruptionRounds is how many stores TestCorruptionInjection damages.
const corruptionRounds = 40

// TestCorruptionInjection builds logs with records, snapshots, retention
// and restarts (so that records live in the WAL, in SSTables and in the
// MANIFEST's history), stops each cleanly or by a crash (synced data
// only), then damages one file of any kind — WAL, SSTable, MANIFEST,
// OPTIONS, a snapshot file, the acknowledgement mark — by flipping bytes or zeroing a 512-byte
// sector anywhere in it, and reopens. Every damage must be either detected
// (Open, Replay or LatestSnapshot fails, or a corrupt snapshot is skipped
// and reported) or provably harmless (every acknowledged record is there,
// byte for byte, and the latest snapshot is one that was saved).
//
// That includes damage to the last group commit before a crash, which
// reads as a torn tail to Pebble: the acknowledgement mark refuses it (a
// quarter of the WAL damage lands in the newest WAL's last 600 bytes). The
// first run of this test, before vouchedDamage and the mark, found 17
// records lost to 8 bytes flipped in a WAL's last 32 KiB block after a
// crash.
func TestCorruptionInjection(t *testing.T) {
	var detected, harmless int
	kinds := map[string]int{}
	for round := range corruptionRounds {
		rng := rand.New(rand.NewPCG(uint64(round), 0xc0de))
		fs := vfs.NewCrashableMem()
		l := openLog(t, fs, "db", true)
		acked := map[uint64][]byte{}
		snapshots := map[uint64][]byte{}
		appends := 20 + rng.IntN(200)
		for i := range appends {
			recs := make([][]byte, 1+rng.IntN(6))
			for j := range recs {
				recs[j] = fmt.Appendf(nil, "r%d-a%d-%d-%s", round, i, j, bytes.Repeat([]byte{byte('a' + j)}, rng.IntN(1500)))
			}
			first, err := l.AppendWait(recs...)
			if err != nil {
				t.Fatal(err)
			}
			for j, rec := range recs {
				acked[first+uint64(j)] = rec
			}
			switch rng.IntN(40) {
			case 0, 1:
				seq := l.LastSeq()
				data := fmt.Appendf(nil, "snapshot@%d-%s", seq, bytes.Repeat([]byte{'s'}, rng.IntN(3000)))
				snapshots[seq] = slices.Clone(data) // NB: Pebble's test FS scribbles over written buffers
				if err := l.SaveSnapshot(seq, data); err != nil {
					t.Fatal(err)
				}
			case 2:
				if seqs := sortedKeys(snapshots); len(seqs) > 1 {
					through := seqs[len(seqs)-2]
					if err := l.Truncate(through); err != nil {
						t.Fatal(err)
					}
					for seq := range acked {
						if seq <= through {
							delete(acked, seq)
						}
					}
					for seq := range snapshots {
						if seq < through {
							delete(snapshots, seq)
						}
					}
				}
			case 3: // a restart moves the WAL's records into an SSTable
				closeLog(t, l)
				l = openLog(t, fs, "db", true)
			}
		}
		crash := rng.IntN(2) == 0
		stopped := fs
		if crash {
			stopped = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		}
		closeLog(t, l)

		kind, what := damageOneFile(t, stopped, rng)
		kinds[kind]++
		verdict, loss := reopenAfterDamage(stopped, acked, snapshots)
		switch {
		case verdict != "":
			detected++
		case len(loss) == 0:
			harmless++
		default:
			t.Fatalf("round %d: %s (%s, after a %s): silent loss of acknowledged records %v",
				round, what, kind, map[bool]string{true: "crash", false: "clean stop"}[crash], loss)
		}
	}
	t.Logf("%d damaged stores: %d detected, %d harmless; files damaged: %v", corruptionRounds, detected, harmless, kinds)
	if detected == 0 || harmless == 0 {
		t.Errorf("the injection proves little: %d detected, %d harmless", detected, harmless)
	}
}

// damageOneFile flips a few bytes, or zeroes a 512-byte sector, at a random
// place of a random file of the stopped store (or its acknowledgement mark).
func damageOneFile(t *testing.T, fs vfs.FS, rng *rand.Rand) (kind, what string) {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range names {
		if name != "LOCK" {
			files = append(files, fs.PathJoin("db", name))
		}
	}
	if snaps, err := fs.List(fs.PathJoin("db", snapshotDir)); err == nil {
		for _, name := range snaps {
			files = append(files, fs.PathJoin("db", snapshotDir, name))
		}
	}
	if _, err := fs.Stat(ackMarkPath("db")); err == nil {
		files = append(files, ackMarkPath("db"))
	}
	slices.Sort(files)
	var wals []string
	for _, f := range files {
		if strings.HasSuffix(f, ".log") {
			wals = append(wals, f)
		}
	}
	for {
		path := files[rng.IntN(len(files))]
		if len(wals) > 0 && rng.IntN(2) == 0 { // half of the damage goes to a WAL, where records are newest
			path = wals[rng.IntN(len(wals))]
		}
		info, err := fs.Stat(path)
		if err != nil || info.IsDir() || info.Size() == 0 {
			continue
		}
		f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		size := info.Size()
		kind = kindOf(path)
		tailOnly := kind == "WAL .log" && path == wals[len(wals)-1] && size > 600 && rng.IntN(2) == 0
		if tailOnly || rng.IntN(2) == 0 {
			off := rng.Int64N(size)
			if tailOnly { // the last group commits
				off = size - 1 - rng.Int64N(600)
			}
			n := min(int64(1+rng.IntN(8)), size-off)
			b := make([]byte, n)
			if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for i := range b {
				b[i] ^= byte(1 + rng.IntN(255))
			}
			if _, err := f.WriteAt(b, off); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("%d bytes flipped at %d of %s (%d bytes)", n, off, path, size)
		} else {
			off := rng.Int64N((size+511)/512) * 512
			n := min(512, size-off)
			if _, err := f.WriteAt(make([]byte, n), off); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("sector at %d of %s (%d bytes) zeroed", off, path, size)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return kind, what
	}
}

func kindOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".acked"):
		return "acknowledgement mark"
	case strings.HasSuffix(path, snapshotFileExt):
		return "snapshot file"
	case strings.HasSuffix(path, ".log"):
		return "WAL .log"
	case strings.HasSuffix(path, ".sst"):
		return "SSTable"
	case strings.Contains(path, "MANIFEST"):
		return "MANIFEST"
	case strings.Contains(path, "OPTIONS"):
		return "OPTIONS"
	}
	return "other"
}

// reopenAfterDamage opens the damaged store and reads everything. It
// returns why the damage was detected, or — when nothing noticed it — the
// acknowledged records that are missing or different.
func reopenAfterDamage(fs vfs.FS, acked, snapshots map[uint64][]byte) (detected string, loss []uint64) {
	l, err := Open("db", Options{FS: fs, Sync: true, Logger: quietLogger{}})
	if err != nil {
		return "open: " + err.Error(), nil
	}
	defer l.Close()
	seq, data, ok, err := l.LatestSnapshot()
	if err != nil {
		return "snapshot: " + err.Error(), nil
	}
	if len(l.CorruptSnapshots()) > 0 {
		detected = fmt.Sprintf("corrupt snapshots skipped and reported: %v", l.CorruptSnapshots())
	}
	if ok && !bytes.Equal(data, snapshots[seq]) {
		return "", []uint64{seq} // a snapshot nobody saved: wrong state served
	}
	first, err := l.FirstRetained()
	if err != nil {
		return "retention mark: " + err.Error(), nil
	}
	got := map[uint64][]byte{}
	if err := l.Replay(first-1, func(seq uint64, rec []byte) error {
		got[seq] = slices.Clone(rec)
		return nil
	}); err != nil {
		return "replay: " + err.Error(), nil
	}
	for _, seq := range sortedKeys(acked) {
		if !bytes.Equal(got[seq], acked[seq]) {
			loss = append(loss, seq)
		}
	}
	if len(loss) > 0 {
		return "", loss
	}
	return detected, nil
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// quietLogger drops Pebble's messages (damage makes it talkative).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble fatal (test): "+format+"\n", args...)
}
