package waltools

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
)

// ---- verify ----------------------------------------------------------------------------

// walFault is one fault verify found, at the sequence it concerns.
type walFault struct {
	seq  uint64
	text string
}

func (f *walFault) Error() string { return f.text }

// verifiedSnapshot is one snapshot, decoded, waiting for replay to reach
// its sequence.
type verifiedSnapshot struct {
	seq    uint64
	hash   [32]byte
	latest bool
	ok     bool // matched the replay
	// forgottenBefore is the state's ForgottenBefore: the follower forgot
	// the quotes that ended before it.
	forgottenBefore int64
}

// loadSnapshots reads every snapshot the log keeps. Unreadable ones become
// faults.
func loadSnapshots(log Source, faults *[]*walFault) map[uint64]*verifiedSnapshot {
	snaps := map[uint64]*verifiedSnapshot{}
	var newest uint64
	err := log.Snapshots(func(seq uint64, data []byte) error {
		newest = max(newest, seq)
		state, err := actors.DecodeState(data)
		if err != nil {
			*faults = append(*faults, &walFault{seq, fmt.Sprintf("corrupt snapshot at seq %d: %v", seq, err)})
			return nil
		}
		snaps[seq] = &verifiedSnapshot{seq: seq, hash: state.Hash(), forgottenBefore: state.ForgottenBefore}
		return nil
	})
	if err != nil {
		*faults = append(*faults, faultOf(err, 0))
		// The walk stopped short: ask which one a start would take.
		newest = 0
		if seq, _, ok, err := log.LatestSnapshot(); err == nil && ok {
			newest = seq
		}
	}
	if s := snaps[newest]; s != nil {
		s.latest = true
	}
	return snaps
}

// Verify is `oja wal verify`: it replays the whole log (verifyReplay),
// writes what it checked to out, then OK, or each fault and FAIL with the
// first one by sequence, and returns ExitFault on any fault. tails are
// the torn tails the open tolerated, reported as such.
func Verify(log Source, out io.Writer, tails []wal.TornTail) error {
	v, err := verifyReplay(log)
	if err != nil {
		fmt.Fprintf(out, "FAIL: %v\n", err)
		return ExitFault
	}
	v.report(out, tails)
	if len(v.faults) == 0 {
		fmt.Fprintln(out, "OK")
		return nil
	}
	slices.SortStableFunc(v.faults, func(a, b *walFault) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	for _, f := range v.faults[1:] {
		fmt.Fprintf(out, "also: %s\n", f.text)
	}
	fmt.Fprintf(out, "FAIL: %s\n", v.faults[0].text)
	return ExitFault
}

// verification is what verifyReplay found: the faults, and what its
// report says was checked.
type verification struct {
	faults     []*walFault
	stats      wal.Stats
	statsErr   error
	snaps      map[uint64]*verifiedSnapshot
	state      *engine.State
	from, last uint64 // the replay started after from and reached last
	stopped    bool   // a fault stopped the replay
}

// verifyReplay replays the log once, from seq 1 (or from the retained
// log's base snapshot), into a scratch engine: checksums and continuity
// (Replay), decoding, State.Apply's consistency checks, each snapshot's
// hash at its sequence, and the ledger every walLedgerCheckEvery records.
// An error means there was nothing to start a replay from.
func verifyReplay(log Source) (*verification, error) {
	v := &verification{}
	v.stats, v.statsErr = log.Stats()
	v.snaps = loadSnapshots(log, &v.faults)
	state, from, err := retainedStart(log)
	if err != nil {
		return nil, err
	}
	v.state, v.from = state, from
	if v.statsErr != nil {
		v.faults = append(v.faults, faultOf(v.statsErr, 0))
	}
	if s := v.snaps[from]; s != nil {
		if s.ok = s.hash == state.Hash(); !s.ok {
			v.faults = append(v.faults, &walFault{from, fmt.Sprintf("snapshot at seq %d is not the state the replay starts from", from)})
		}
	}
	last, ledgerGood := from, from
	// The replay applies as every replica does (actors.Replica); it
	// forgets ended quotes only where a snapshot says the follower did.
	replica := actors.NewReplica(state, from, 0)
	p := newProgress(v.stats.LastSeq)
	replayErr := log.Replay(from, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return &walFault{seq, fmt.Sprintf("corrupt record at seq %d: does not decode: %v", seq, err)}
		}
		if err := replica.ApplyRecord(seq, ev); err != nil {
			var refused *actors.RecordError
			if errors.As(err, &refused) {
				err = refused.Err
			}
			return &walFault{seq, fmt.Sprintf("record at seq %d does not apply: %v", seq, err)}
		}
		last = seq
		if s := v.snaps[seq]; s != nil {
			// The follower forgot the quotes that ended before the
			// snapshot's cutoff: the replay forgets the same first.
			state.ForgetEnded(s.forgottenBefore)
			if s.ok = s.hash == state.Hash(); !s.ok {
				// Not fatal to the replay: later records may still be checked.
				v.faults = append(v.faults, &walFault{seq, fmt.Sprintf(
					"snapshot at seq %d differs from the state replay reaches at seq %d (hash %x, replay %x)",
					seq, seq, s.hash[:8], hashPrefix(state))})
			}
		}
		if seq%walLedgerCheckEvery == 0 {
			if !ledgerOK(state) {
				return errLedger
			}
			ledgerGood = seq
		}
		return nil
	})
	p.done()
	v.last = last
	switch {
	case replayErr == nil:
		if !ledgerOK(state) {
			v.faults = append(v.faults, verifyLedgerFrom(log, ledgerGood, last))
		}
	case errors.Is(replayErr, errLedger):
		v.faults = append(v.faults, verifyLedgerFrom(log, ledgerGood, last))
	default:
		v.faults = append(v.faults, faultOf(replayErr, last+1))
	}
	v.stopped = replayErr != nil
	for _, s := range v.snaps {
		if s.seq > last && !s.ok {
			text := fmt.Sprintf("snapshot at seq %d is beyond the last record (seq %d)", s.seq, last)
			if v.stopped {
				text = fmt.Sprintf("snapshot at seq %d not compared: replay stopped before it", s.seq)
			}
			v.faults = append(v.faults, &walFault{s.seq, text})
		}
	}
	return v, nil
}

// report writes what was checked: the store, the torn tails tolerated,
// the snapshots that matched, the retention, the ledgers and the records.
// The verdict is Verify's.
func (v *verification) report(out io.Writer, tails []wal.TornTail) {
	if v.statsErr == nil {
		st := v.stats
		fmt.Fprintf(out, "store: %d records (seq %d..%d), %d payload bytes, %d on disk\n",
			st.Records, st.FirstSeq, st.LastSeq, st.Bytes, st.DiskBytes)
	}
	for _, t := range tails {
		fmt.Fprintf(out, "torn tail (tolerated): %s\n", tornTail(t))
	}
	seqs := make([]uint64, 0, len(v.snaps))
	for seq := range v.snaps {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if s := v.snaps[seq]; s.ok {
			which := ""
			if s.latest {
				which = " (latest)"
			}
			fmt.Fprintf(out, "snapshot at seq %d%s matches the replayed state (hash %x)\n", seq, which, s.hash[:8])
		}
	}
	from, last := v.from, v.last
	if from > 0 {
		fmt.Fprintf(out, "log retention: records 1..%d deleted; the snapshot at seq %d stands for them (checksum verified, "+
			"not re-derivable)\n", from, from)
	}
	if !v.stopped {
		for _, m := range engine.Modes {
			fmt.Fprintf(out, "ledger %-7s %s\n", m, gateway.AppendLedgerReport(nil, v.state.LedgerCheck(m)))
		}
		// A snapshot at the last record that matched already hashed
		// this state: a million quotes' hash is seconds.
		var hash [32]byte
		if s := v.snaps[last]; s != nil && s.ok {
			hash = s.hash
		} else {
			hash = v.state.Hash()
		}
		if last == from {
			fmt.Fprintf(out, "no records; state hash %x\n", hash)
		} else {
			fmt.Fprintf(out, "records %d..%d verified; state hash %x\n", from+1, last, hash)
		}
	} else if last > from {
		fmt.Fprintf(out, "records %d..%d verified before the fault\n", from+1, last)
	}
}

// faultOf turns a read error into a fault: at its own sequence when it is
// a *walFault or a *wal.CorruptError, else at seq.
func faultOf(err error, seq uint64) *walFault {
	var fault *walFault
	var corrupt *wal.CorruptError
	switch {
	case errors.As(err, &fault):
		return fault
	case errors.As(err, &corrupt) && corrupt.Snapshot:
		return &walFault{corrupt.Seq, fmt.Sprintf("corrupt snapshot at seq %d: %s", corrupt.Seq, corrupt.Reason)}
	case errors.As(err, &corrupt):
		return &walFault{corrupt.Seq, fmt.Sprintf("corrupt record at seq %d: %s", corrupt.Seq, corrupt.Reason)}
	}
	return &walFault{seq, fmt.Sprintf("reading the store at seq %d: %v", seq, err)}
}

// errLedger stops verify's replay at a failed periodic ledger check.
var errLedger = errors.New("ledger check failed")

func ledgerOK(s *engine.State) bool {
	for _, m := range engine.Modes {
		if !s.LedgerCheck(m).OK {
			return false
		}
	}
	return true
}

func hashPrefix(s *engine.State) []byte {
	h := s.Hash()
	return h[:8]
}

// verifyLedgerFrom finds the first record after good (where the ledger
// was known to hold) and at most bad after which the ledger check fails,
// by replaying again and checking after every record of that interval.
func verifyLedgerFrom(log Source, good, bad uint64) *walFault {
	state, from, err := retainedStart(log)
	if err != nil {
		return &walFault{bad, fmt.Sprintf("ledger check fails by seq %d (not located: %v)", bad, err)}
	}
	var found *walFault
	errFound := errors.New("found")
	replica := actors.NewReplica(state, from, 0)
	err = log.Replay(from, func(seq uint64, rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return err
		}
		if err := replica.ApplyRecord(seq, ev); err != nil {
			return err
		}
		if seq <= good {
			return nil
		}
		for _, m := range engine.Modes {
			if r := state.LedgerCheck(m); !r.OK {
				found = &walFault{seq, fmt.Sprintf("ledger check fails after the record at seq %d (%s): %s",
					seq, m, strings.Join(r.Problems, "; "))}
				return errFound
			}
		}
		if seq >= bad {
			return errFound
		}
		return nil
	})
	if found != nil {
		return found
	}
	return &walFault{bad, fmt.Sprintf("ledger check fails by seq %d (not located: %v)", bad, err)}
}
