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
	err := log.Snapshots(func(seq uint64, data []byte) error {
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
	}
	if seq, _, ok, err := log.LatestSnapshot(); err == nil && ok && snaps[seq] != nil {
		snaps[seq].latest = true
	}
	return snaps
}

func Verify(log Source, out io.Writer, tails []wal.TornTail) error {
	var faults []*walFault
	st, statsErr := log.Stats()
	snaps := loadSnapshots(log, &faults)

	// One replay from seq 1 (or from the retained log's base snapshot) into
	// a scratch engine: checksums and continuity (Replay), decoding,
	// State.Apply's consistency checks, each snapshot's hash at its
	// sequence, and the ledger every walLedgerCheckEvery records.
	state, from, err := retainedStart(log)
	if err != nil {
		fmt.Fprintf(out, "FAIL: %v\n", err)
		return ExitFault
	}
	if statsErr != nil {
		faults = append(faults, faultOf(statsErr, 0))
	}
	if s := snaps[from]; s != nil {
		if s.ok = s.hash == state.Hash(); !s.ok {
			faults = append(faults, &walFault{from, fmt.Sprintf("snapshot at seq %d is not the state the replay starts from", from)})
		}
	}
	last, ledgerGood := from, from
	// The replay applies as every replica does (actors.Replica); it
	// forgets ended quotes only where a snapshot says the follower did.
	replica := actors.NewReplica(state, from, 0)
	p := newProgress(st.LastSeq)
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
		if s := snaps[seq]; s != nil {
			// The follower forgot the quotes that ended before the
			// snapshot's cutoff: the replay forgets the same first.
			state.ForgetEnded(s.forgottenBefore)
			if s.ok = s.hash == state.Hash(); !s.ok {
				// Not fatal to the replay: later records may still be checked.
				faults = append(faults, &walFault{seq, fmt.Sprintf(
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
	switch {
	case replayErr == nil:
		if !ledgerOK(state) {
			faults = append(faults, verifyLedgerFrom(log, ledgerGood, last))
		}
	case errors.Is(replayErr, errLedger):
		faults = append(faults, verifyLedgerFrom(log, ledgerGood, last))
	default:
		faults = append(faults, faultOf(replayErr, last+1))
	}
	stopped := replayErr != nil
	for _, s := range snaps {
		if s.seq > last && !s.ok {
			text := fmt.Sprintf("snapshot at seq %d is beyond the last record (seq %d)", s.seq, last)
			if stopped {
				text = fmt.Sprintf("snapshot at seq %d not compared: replay stopped before it", s.seq)
			}
			faults = append(faults, &walFault{s.seq, text})
		}
	}

	// The report: what was checked, then the verdict.
	if statsErr == nil {
		fmt.Fprintf(out, "store: %d records (seq %d..%d), %d payload bytes, %d on disk\n",
			st.Records, st.FirstSeq, st.LastSeq, st.Bytes, st.DiskBytes)
	}
	for _, t := range tails {
		fmt.Fprintf(out, "torn tail (tolerated): %s\n", tornTail(t))
	}
	seqs := make([]uint64, 0, len(snaps))
	for seq := range snaps {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if s := snaps[seq]; s.ok {
			which := ""
			if s.latest {
				which = " (latest)"
			}
			fmt.Fprintf(out, "snapshot at seq %d%s matches the replayed state (hash %x)\n", seq, which, s.hash[:8])
		}
	}
	if from > 0 {
		fmt.Fprintf(out, "log retention: records 1..%d deleted; the snapshot at seq %d stands for them (checksum verified, "+
			"not re-derivable)\n", from, from)
	}
	if !stopped {
		for _, m := range engine.Modes {
			fmt.Fprintf(out, "ledger %-7s %s\n", m, gateway.AppendLedgerReport(nil, state.LedgerCheck(m)))
		}
		hash := state.Hash()
		if last == from {
			fmt.Fprintf(out, "no records; state hash %x\n", hash)
		} else {
			fmt.Fprintf(out, "records %d..%d verified; state hash %x\n", from+1, last, hash)
		}
	} else if last > from {
		fmt.Fprintf(out, "records %d..%d verified before the fault\n", from+1, last)
	}
	if len(faults) == 0 {
		fmt.Fprintln(out, "OK")
		return nil
	}
	slices.SortStableFunc(faults, func(a, b *walFault) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	for _, f := range faults[1:] {
		fmt.Fprintf(out, "also: %s\n", f.text)
	}
	fmt.Fprintf(out, "FAIL: %s\n", faults[0].text)
	return ExitFault
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
