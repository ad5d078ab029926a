// Package eventlog keeps the partners' event history: every event the
// webhooks carry (quote.created … quote.expired, payin.received), with the
// same ids and the same bodies, for every client and mode whether or not it
// has an endpoint, kept for Config.Retention (30 days by default) and read
// newest first by GET /api/v1/partners/events.
//
// The history is derived data. The log's applier (the single-node log
// follower, or a cluster node's replica) feeds it the events engine.State
// makes as it applies records (engine.Effects.Events); a writer goroutine
// stores them in a Pebble store of its own, beside the log, so
// the request path never waits for it and the log's own store (its
// integrity checks, salvage and backups) is not touched. It stores each
// event's compact form (engine.AppendEventRecord: the quote as the event
// left it, a few hundred bytes); the reader renders the body, so feeding
// the history costs the applier no JSON. The store records
// how far it has written (its watermark, a log sequence): an applier that
// restarts feeds it again from there, and Sync makes it durable before the
// applier saves a snapshot past it, so a crash loses no event that the log
// has (a lost or deleted store is rebuilt from the retained log).
//
// Keys (all integers big-endian, so that byte order is time order):
//
//	'e' client mode at seq id  → the event (engine.AppendEventRecord)
//	'i' id → client mode at seq kind (startingAfter's lookup)
//	'm' → the watermark
//
// Two keys an event: a per-type index and a time index for retention
// cost a quarter of durable create throughput more on two cores
// (measured); a type filter reads each record's kind byte instead, and
// retention walks the clients' ranges.
package eventlog

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/oja-exchange/oja/engine"
)

// Defaults of Config.
const (
	// RetentionDefault is how long an event is kept: the 30 days partners
	// reconcile over.
	RetentionDefault = 30 * 24 * time.Hour
	// FlushEveryDefault is how often the writer stores what was added: an
	// event is listed within about this long of its record being applied.
	FlushEveryDefault = 20 * time.Millisecond
)

// expireEvery is how often the writer deletes events past the retention.
const expireEvery = time.Hour

// expireBatchMax bounds the events one retention batch deletes.
const expireBatchMax = 4096

// PageSizeMax bounds one List page.
const PageSizeMax = 100

// Config configures a Store.
type Config struct {
	// Retention is how long an event is kept, judged by its time against
	// Clock; 0 means RetentionDefault.
	Retention  time.Duration
	FlushEvery time.Duration    // 0: FlushEveryDefault
	Clock      func() time.Time // nil: time.Now
	Logger     *slog.Logger     // nil: slog.Default()
}

// ErrUnknownEvent is List's answer when Query.After names no event of the
// client and mode (unknown, past the retention, or another client's).
var ErrUnknownEvent = errors.New("eventlog: no such event")

// ErrClosed is returned by a Store's methods after Close.
var ErrClosed = errors.New("eventlog: closed")

// Store is the partners' event history. Add and Applied are for the one
// applier goroutine; List, Sync and Close for any.
type Store struct {
	db     *pebble.DB
	cfg    Config
	logger *slog.Logger
	// mark is the watermark the store opened with: Add skips events of
	// records up to it (an applier re-applying them after a restart).
	mark uint64

	mu      sync.Mutex
	changed *sync.Cond // written or failed moved
	pending []pendingEvent
	applied uint64 // the highest sequence told (Applied)
	written uint64 // the watermark committed
	failed  error
	closed  bool

	wake chan struct{} // cap 1
	quit chan struct{}
	done chan struct{}
}

// pendingEvent is an added event's two keys and their values, encoded by
// Add so the queue holds a few hundred bytes an event, not the event.
type pendingEvent struct {
	key, value     []byte // 'e' client mode at seq id → the stored form
	idKey, idValue []byte // 'i' id → client mode at seq kind
}

// pendingOf encodes the event e of record seq.
func pendingOf(seq uint64, e *engine.OwedEvent) pendingEvent {
	owner := append(e.Quote.Client[:], byte(e.Quote.Mode)) // client mode
	where := binary.BigEndian.AppendUint64(bytes.Clone(owner), uint64(e.At))
	where = binary.BigEndian.AppendUint64(where, seq)
	return pendingEvent{
		key:     pos(key('e', owner), e.At, seq, e.ID),
		value:   engine.AppendEventRecord(make([]byte, 0, 512), e),
		idKey:   key('i', e.ID[:]),
		idValue: append(where, byte(e.Kind)),
	}
}

// Open opens (creating it if need be) the store in dir and starts its
// writer.
func Open(dir string, cfg Config) (*Store, error) {
	if cfg.Retention <= 0 {
		cfg.Retention = RetentionDefault
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = FlushEveryDefault
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	logger := cmp.Or(cfg.Logger, slog.Default())
	s := &Store{cfg: cfg, logger: logger, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	s.changed = sync.NewCond(&s.mu)
	db, err := pebble.Open(dir, &pebble.Options{
		// NB: an explicit FS skips Pebble's disk-health wrapper, whose
		// goroutine a failed Open leaves running.
		FS:                 vfs.Default,
		Logger:             &failLogger{s: s},
		FormatMajorVersion: pebble.FormatNewest,
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: open %s: %w", dir, err)
	}
	s.db = db
	v, closer, err := db.Get(metaKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			s.mark = binary.BigEndian.Uint64(v)
		}
		_ = closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		_ = db.Close()
		return nil, fmt.Errorf("eventlog: read watermark: %w", err)
	}
	s.applied, s.written = s.mark, s.mark
	go s.run()
	return s, nil
}

// Watermark is the last log sequence whose events the store holds (0:
// none): an applier starting from a state older than it re-feeds nothing
// up to it; one starting from a newer state leaves a gap (see
// actors.EventSink).
func (s *Store) Watermark() uint64 { return s.mark }

// Add queues the event e that the record seq made; events of records up to
// the opening watermark are skipped. It never waits for the disk.
func (s *Store) Add(seq uint64, e *engine.OwedEvent) {
	if seq <= s.mark {
		return
	}
	p := pendingOf(seq, e)
	s.mu.Lock()
	s.pending = append(s.pending, p)
	s.mu.Unlock()
}

// Applied tells the store that every record up to seq has been applied
// (its events added): the watermark may move there.
func (s *Store) Applied(seq uint64) {
	s.mu.Lock()
	if seq > s.applied {
		s.applied = seq
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Sync returns once every event of records up to through is stored and
// synced to disk (the applier calls it before a snapshot makes those
// records' replay unnecessary).
func (s *Store) Sync(through uint64) error {
	s.Applied(through)
	s.mu.Lock()
	for s.written < through && s.failed == nil && !s.closed {
		s.changed.Wait()
	}
	err := s.failed
	if err == nil && s.closed && s.written < through {
		err = ErrClosed
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// NB: syncing Pebble's WAL makes every batch committed before durable.
	if err := s.db.LogData(syncMark, pebble.Sync); err != nil {
		return s.fail(fmt.Errorf("eventlog: sync: %w", err))
	}
	return nil
}

// Close stores what was added, stops the writer and closes the store (a
// nil store: nothing).
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	<-s.done
	s.changed.Broadcast()
	return s.db.Close()
}

// fail records the store's first failure: writes stop, List answers it.
func (s *Store) fail(err error) error {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
		s.logger.Error("partner event history failed: events are no longer stored; GET /partners/events answers 503 until restart", "err", err)
	}
	err = s.failed
	s.mu.Unlock()
	s.changed.Broadcast()
	return err
}

// Failed is the store's failure, if any.
func (s *Store) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *Store) run() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.FlushEvery)
	defer t.Stop()
	var lastExpire time.Time
	for {
		select {
		case <-s.quit:
			_ = s.flush()
			return
		case <-t.C:
		case <-s.wake:
		}
		if s.flush() != nil {
			continue
		}
		if now := s.cfg.Clock(); now.Sub(lastExpire) >= expireEvery {
			lastExpire = now
			if err := s.expire(now.Add(-s.cfg.Retention).UnixMilli()); err != nil {
				_ = s.fail(err)
			}
		}
	}
}

// flush stores the pending events and moves the watermark to the highest
// sequence applied (one batch, not synced: Sync syncs).
func (s *Store) flush() error {
	s.mu.Lock()
	if s.failed != nil {
		err := s.failed
		s.mu.Unlock()
		return err
	}
	batch, through := s.pending, s.applied
	s.pending = nil
	written := s.written
	s.mu.Unlock()
	if through == written && len(batch) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for i := range batch {
		p := &batch[i]
		b.Set(p.key, p.value, nil)
		b.Set(p.idKey, p.idValue, nil)
	}
	b.Set(metaKey, binary.BigEndian.AppendUint64(nil, through), nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return s.fail(fmt.Errorf("eventlog: write: %w", err))
	}
	s.mu.Lock()
	s.written = through
	s.mu.Unlock()
	s.changed.Broadcast()
	return nil
}

// pos is an event's place in time order: its time, its record's sequence
// and its id.
func pos(b []byte, at int64, seq uint64, id engine.EventID) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint64(b, seq)
	return append(b, id[:]...)
}

// key is prefix followed by parts, in a new slice.
func key(prefix byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 1, n+32)
	k[0] = prefix
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

var (
	metaKey  = []byte{'m'}
	syncMark = []byte("sync")
)

// expire deletes the events older than cutoff (Unix ms): for each client
// and mode, the range of its events before cutoff and their id entries.
func (s *Store) expire(cutoff int64) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{'e'}, UpperBound: []byte{'e' + 1}})
	if err != nil {
		return fmt.Errorf("eventlog: retention: %w", err)
	}
	var owners [][]byte
	for ok := it.First(); ok; {
		owner := bytes.Clone(it.Key()[:ownerBytes])
		owners = append(owners, owner)
		next := bytes.Clone(owner)
		next[len(next)-1]++ // NB: a mode byte, never 0xff
		ok = it.SeekGE(next)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("eventlog: retention: %w", err)
	}
	for _, owner := range owners {
		if err := s.expireOwner(owner, binary.BigEndian.AppendUint64(bytes.Clone(owner), uint64(max(cutoff, 0)))); err != nil {
			return err
		}
	}
	return nil
}

// ownerBytes is the length of 'e' client mode.
const ownerBytes = 1 + 16 + 1

// expireOwner deletes one owner's events before upper, in batches.
func (s *Store) expireOwner(lower, upper []byte) error {
	for {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return fmt.Errorf("eventlog: retention: %w", err)
		}
		b := s.db.NewBatch()
		n := 0
		var last []byte
		for ok := it.First(); ok && n < expireBatchMax; ok = it.Next() {
			k := it.Key()
			b.Delete(key('i', k[len(k)-16:]), nil) // the id ends the key
			last = append(last[:0], k...)
			n++
		}
		err = it.Close()
		if err == nil && n > 0 {
			b.DeleteRange(lower, append(last, 0), nil)
			err = b.Commit(pebble.NoSync)
		}
		_ = b.Close()
		if err != nil {
			return fmt.Errorf("eventlog: retention: %w", err)
		}
		if n > 0 {
			s.logger.Debug("partner events past the retention deleted", "events", n)
		}
		if n < expireBatchMax {
			return nil
		}
	}
}

// Query selects a page of one client's events of one mode.
type Query struct {
	Client engine.ClientID
	Mode   engine.Mode
	Kind   engine.WebhookEvents // one kind; 0: every kind
	Limit  int                  // 1 to PageSizeMax
	// After, when set, is the event the page starts after (older than).
	After engine.EventID
}

// List returns the newest Limit events of q (newest first; Markets unset:
// the reader renders with the markets in force) and whether older ones
// remain.
func (s *Store) List(q Query) (events []engine.OwedEvent, more bool, err error) {
	if err := s.Failed(); err != nil {
		return nil, false, err
	}
	if q.Limit < 1 || q.Limit > PageSizeMax {
		return nil, false, fmt.Errorf("eventlog: limit %d not in 1..%d", q.Limit, PageSizeMax)
	}
	prefix, upper := ownerRange(q.Client, q.Mode)
	if q.After != (engine.EventID{}) {
		v, closer, err := s.db.Get(key('i', q.After[:]))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, ErrUnknownEvent
		}
		if err != nil {
			return nil, false, fmt.Errorf("eventlog: read: %w", err)
		}
		ok := len(v) == 34 && bytes.Equal(v[:16], q.Client[:]) && v[16] == byte(q.Mode)
		if ok {
			upper = key(prefix[0], prefix[1:], v[17:33], q.After[:])
		}
		_ = closer.Close()
		if !ok {
			return nil, false, ErrUnknownEvent
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("eventlog: read: %w", err)
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		if len(events) == q.Limit {
			return events, true, nil
		}
		raw := it.Value()
		if q.Kind != 0 && engine.EventRecordKind(raw) != q.Kind {
			continue
		}
		e, err := engine.DecodeEventRecord(raw)
		if err != nil {
			return nil, false, fmt.Errorf("eventlog: %w", err)
		}
		events = append(events, e)
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("eventlog: read: %w", err)
	}
	return events, false, nil
}

// ownerRange is the key range of client's events in mode: their prefix,
// and the first key past them.
func ownerRange(client engine.ClientID, mode engine.Mode) (prefix, upper []byte) {
	prefix = key('e', client[:], []byte{byte(mode)})
	// NB: the prefix ends in a mode byte, never 0xff.
	upper = bytes.Clone(prefix)
	upper[len(upper)-1]++
	return prefix, upper
}

// QuoteEvents returns the events of one quote of client and mode, oldest
// first: it reads the client's events from the quote's creation (since,
// Unix ms) on, at most scanMax of them, and reports whether it stopped
// there before the newest (the quote's later events may be past it).
func (s *Store) QuoteEvents(client engine.ClientID, mode engine.Mode, quote engine.QuoteID, since int64, scanMax int) (events []engine.OwedEvent, truncated bool, err error) {
	if err := s.Failed(); err != nil {
		return nil, false, err
	}
	prefix, upper := ownerRange(client, mode)
	lower := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(max(since, 0)))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("eventlog: read: %w", err)
	}
	defer it.Close()
	scanned := 0
	for ok := it.First(); ok; ok = it.Next() {
		if scanned == scanMax {
			return events, true, nil
		}
		scanned++
		e, err := engine.DecodeEventRecord(it.Value())
		if err != nil {
			return nil, false, fmt.Errorf("eventlog: %w", err)
		}
		if e.Quote.ID == quote {
			events = append(events, e)
		}
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("eventlog: read: %w", err)
	}
	return events, false, nil
}

// failLogger is the store's pebble.Logger: Pebble's Fatalf (a failed WAL
// or MANIFEST write) fails the store instead of exiting the process — the
// history is derived data, the service keeps serving without it.
type failLogger struct{ s *Store }

func (l *failLogger) Infof(format string, args ...any) {
	l.s.logger.Debug(fmt.Sprintf(format, args...), "component", "eventlog")
}

func (l *failLogger) Errorf(format string, args ...any) {
	l.s.logger.Error(fmt.Sprintf(format, args...), "component", "eventlog")
}

func (l *failLogger) Fatalf(format string, args ...any) {
	_ = l.s.fail(fmt.Errorf("eventlog: pebble: "+format, args...))
}
