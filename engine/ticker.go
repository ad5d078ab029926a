package engine

// RateSample is one point of a rate history.
type RateSample struct {
	At   int64 // unix ms
	Rate Rate
}

// rateHistoryBucketMillis is the resolution of a rate history: the last
// value within each minute is kept.
const rateHistoryBucketMillis = 60 * 1000

// rateHistoryWindowMillis is how far back a history reaches (24 h plus one
// bucket, so a 24 h reference always exists once the pair is a day old).
const rateHistoryWindowMillis = 24*60*60*1000 + rateHistoryBucketMillis

// RateHistory is a bounded history: at most one sample per minute for the
// last 24 hours (≤ 1443 samples), oldest first.
type RateHistory struct {
	samples []RateSample
}

// Record notes rate at time at. Times must not go backwards; a sample in the
// same minute as the last one replaces it.
func (h *RateHistory) Record(at int64, r Rate) {
	if n := len(h.samples); n > 0 {
		last := &h.samples[n-1]
		if at < last.At {
			at = last.At
		}
		if at/rateHistoryBucketMillis == last.At/rateHistoryBucketMillis {
			last.At, last.Rate = at, r
			return
		}
	}
	h.samples = append(h.samples, RateSample{At: at, Rate: r})
	drop := 0
	for drop < len(h.samples)-1 && h.samples[drop+1].At <= at-rateHistoryWindowMillis {
		drop++
	}
	if drop > 0 {
		h.samples = append(h.samples[:0], h.samples[drop:]...)
	}
}

// Reference is the rate 24 hours before now: the last sample at or before
// now − 24 h, else the oldest sample. ok is false for an empty history.
func (h *RateHistory) Reference(now int64) (RateSample, bool) {
	if len(h.samples) == 0 {
		return RateSample{}, false
	}
	ref := h.samples[0]
	for _, s := range h.samples {
		if s.At > now-24*60*60*1000 {
			break
		}
		ref = s
	}
	return ref, true
}

// Samples returns the history, oldest first; the caller must not modify it.
func (h *RateHistory) Samples() []RateSample { return h.samples }

// Ticker is the market view of one book: the consensus rate (the
// liquidity-weighted median of its active pools' rates, spec §8) and the
// best maker rate (spec §7), with their histories.
type Ticker struct {
	Consensus     Rate
	ConsensusAt   int64 // when the consensus last changed
	HasConsensus  bool
	Best          Rate
	BestSetAt     int64 // when the best pool set that rate
	HasBest       bool
	ConsensusPast RateHistory
	BestPast      RateHistory
}

// Clone copies the ticker (histories included) for a reader.
func (t *Ticker) Clone() *Ticker {
	c := *t
	c.ConsensusPast.samples = append([]RateSample(nil), t.ConsensusPast.samples...)
	c.BestPast.samples = append([]RateSample(nil), t.BestPast.samples...)
	return &c
}

// Observe recomputes the ticker from the book at time at and reports
// whether the consensus rate changed (appeared, moved or vanished).
func (t *Ticker) Observe(b *Book, at int64) (consensusChanged bool) {
	consensus, ok := WeightedMedianRate(b.Entries())
	if ok != t.HasConsensus || consensus != t.Consensus {
		t.Consensus, t.HasConsensus, t.ConsensusAt = consensus, ok, at
		consensusChanged = true
		if ok {
			t.ConsensusPast.Record(at, consensus)
		}
	}
	best, setAt, _, ok := b.BestRate()
	if ok != t.HasBest || best != t.Best || setAt != t.BestSetAt {
		t.Best, t.BestSetAt, t.HasBest = best, setAt, ok
		if ok {
			t.BestPast.Record(at, best)
		}
	}
	return consensusChanged
}

// WeightedMedianRate is the liquidity-weighted median of the rates of the
// active pools with available liquidity: the lowest rate at which the pools
// at or below it hold at least half the liquidity. entries must be in
// priority order (rate descending), as Book.Entries returns them.
func WeightedMedianRate(entries []BookEntry) (Rate, bool) {
	// NB: Available ≤ AmountMax (1e15) and a book holds far fewer than
	// 9000 pools, so these sums cannot overflow; below ≥ total−below
	// avoids doubling anyway.
	var total uint64
	for i := range entries {
		if e := &entries[i]; e.Active && e.Available > 0 {
			total += uint64(e.Available)
		}
	}
	if total == 0 {
		return Rate{}, false
	}
	var below uint64
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if !e.Active || e.Available <= 0 {
			continue
		}
		below += uint64(e.Available)
		if below >= total-below {
			return e.Rate, true
		}
	}
	panic("engine: WeightedMedianRate: weights do not add up")
}
