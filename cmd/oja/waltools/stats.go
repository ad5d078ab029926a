package waltools

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// ---- stats --------------------------------------------------------------------------

// walStats prints what the log holds; dir is the single node's store (for
// its acknowledgement mark), "" for a cluster node's Raft log.
func walStats(log Source, dir string, out io.Writer, tails []wal.TornTail) error {
	st, err := log.Stats()
	if err != nil {
		return err
	}
	counts := map[engine.EventType]uint64{}
	var firstAt, lastAt int64
	p := newProgress(st.LastSeq)
	err = log.Replay(st.FirstRetained-1, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: record %d: %w", seq, err)
		}
		counts[ev.Type()]++
		if firstAt == 0 {
			firstAt = ev.Time()
		}
		lastAt = ev.Time()
		return nil
	})
	p.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "records     %d\nbytes       %d\ndisk bytes  %d\nfirst seq   %d  %s\nlast seq    %d  %s\nsnapshots   %d\n",
		st.Records, st.Bytes, st.DiskBytes, st.FirstSeq, fmtMillis(firstAt), st.LastSeq, fmtMillis(lastAt), st.Snapshots)
	retained := "every record since seq 1"
	if st.FirstRetained > 1 {
		retained = fmt.Sprintf("records 1..%d deleted by log retention (the snapshot at seq %d stands for them)",
			st.FirstRetained-1, st.FirstRetained-1)
	}
	fmt.Fprintf(out, "retained    from seq %d: %s\n", st.FirstRetained, retained)
	switch acked, ok, err := wal.AcknowledgedSeq(nil, dir); {
	case dir == "":
		fmt.Fprintln(out, "acknowledged by the cluster (a Raft log: a record is acknowledged once a majority of nodes holds it)")
	case err != nil:
		fmt.Fprintf(out, "acknowledged %v\n", err)
	case ok:
		fmt.Fprintf(out, "acknowledged through seq %d (the acknowledgement mark)\n", acked)
	default:
		fmt.Fprintln(out, "acknowledged no mark (a store from before acknowledgement marks)")
	}
	for _, t := range tails {
		fmt.Fprintf(out, "torn tail   %s\n", tornTail(t))
	}
	types := make([]engine.EventType, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(out, "  %-24s %d\n", t, counts[t])
	}
	return nil
}

func fmtMillis(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
