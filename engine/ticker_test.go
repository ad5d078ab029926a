package engine

import (
	"testing"

	"github.com/shopspring/decimal"
)

// Tests of the market view of a book: the liquidity-weighted median
// (spec §8), the rate history and the 24 h reference.

// tickerRate parses a rate literal of a table; a bad literal panics.
func tickerRate(text string) Rate {
	r, err := RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		panic(err)
	}
	return r
}

// tickerEntry is a pool entry: id, rate, available, active.
func tickerEntry(id byte, rate string, available Amount, active bool) BookEntry {
	return BookEntry{Pool: PoolID{id}, Rate: tickerRate(rate), Active: active, Available: available}
}

const (
	minuteMillis = int64(60 * 1000)
	hourMillis   = 60 * minuteMillis
	dayMillis    = 24 * hourMillis
)

func TestWeightedMedianRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []BookEntry // priority order: rate descending
		want    string      // "" = no consensus
	}{
		{"no pools", nil, ""},
		{"one pool", []BookEntry{tickerEntry(1, "0.000625", 100, true)}, "0.000625"},
		{"one pool without liquidity", []BookEntry{tickerEntry(1, "0.000625", 0, true)}, ""},
		{"one suspended pool", []BookEntry{tickerEntry(1, "0.000625", 100, false)}, ""},
		{"equal weights, odd count: the middle", []BookEntry{
			tickerEntry(1, "3", 10, true), tickerEntry(2, "2", 10, true), tickerEntry(3, "1", 10, true)}, "2"},
		{"exact half: the lower rate", []BookEntry{
			tickerEntry(1, "2", 50, true), tickerEntry(2, "1", 50, true)}, "1"},
		{"exact half at a middle rate", []BookEntry{
			tickerEntry(1, "3", 2, true), tickerEntry(2, "2", 1, true), tickerEntry(3, "1", 1, true)}, "2"},
		{"just over half on top", []BookEntry{
			tickerEntry(1, "2", 51, true), tickerEntry(2, "1", 49, true)}, "2"},
		{"heavy best pool", []BookEntry{
			tickerEntry(1, "3", 1000, true), tickerEntry(2, "2", 1, true), tickerEntry(3, "1", 1, true)}, "3"},
		{"heavy worst pool", []BookEntry{
			tickerEntry(1, "3", 1, true), tickerEntry(2, "2", 1, true), tickerEntry(3, "1", 1000, true)}, "1"},
		{"tied rates", []BookEntry{
			tickerEntry(1, "2", 1, true), tickerEntry(2, "2", 1, true), tickerEntry(3, "1", 1, true)}, "2"},
		{"tied rates weigh together", []BookEntry{ // one pool at 2 would leave 3
			tickerEntry(1, "3", 3, true), tickerEntry(2, "2", 1, true), tickerEntry(3, "2", 1, true), tickerEntry(4, "1", 1, true)}, "2"},
		{"a suspended pool does not weigh", []BookEntry{
			tickerEntry(1, "3", 1, true), tickerEntry(2, "2", 1000, false), tickerEntry(3, "1", 2, true)}, "1"},
		{"a pool without liquidity does not weigh", []BookEntry{
			tickerEntry(1, "3", 0, true), tickerEntry(2, "2", 5, true), tickerEntry(3, "1", 1, true)}, "2"},
		{"all suspended or empty", []BookEntry{
			tickerEntry(1, "3", 0, true), tickerEntry(2, "2", 5, false)}, ""},
		{"large weights", []BookEntry{
			tickerEntry(1, "0.0668", AmountMax, true), tickerEntry(2, "0.0667", AmountMax, true),
			tickerEntry(3, "0.0666", AmountMax-1, true)}, "0.0667"},
	} {
		got, ok := WeightedMedianRate(tc.entries)
		switch {
		case tc.want == "" && ok:
			t.Errorf("%s: %s; want no consensus", tc.name, got.Decimal())
		case tc.want != "" && (!ok || got != tickerRate(tc.want)):
			t.Errorf("%s: %s, %v; want %s", tc.name, got.Decimal(), ok, tc.want)
		}
	}
}

func TestRateHistoryRecord(t *testing.T) {
	r1, r2, r3 := tickerRate("1"), tickerRate("2"), tickerRate("3")
	for _, tc := range []struct {
		name   string
		record []RateSample
		want   []RateSample
	}{
		{"one sample", []RateSample{{1000, r1}}, []RateSample{{1000, r1}}},
		{"same minute: the last value wins", []RateSample{{0, r1}, {30_000, r2}, {59_999, r3}},
			[]RateSample{{59_999, r3}}},
		{"next minute: a new sample", []RateSample{{59_999, r1}, {60_000, r2}},
			[]RateSample{{59_999, r1}, {60_000, r2}}},
		{"a gap of hours", []RateSample{{0, r1}, {5 * hourMillis, r2}},
			[]RateSample{{0, r1}, {5 * hourMillis, r2}}},
		{"time going back is taken as the last time", []RateSample{{2 * minuteMillis, r1}, {minuteMillis, r2}},
			[]RateSample{{2 * minuteMillis, r2}}},
		{"older than the window: dropped, but one reference stays",
			[]RateSample{{0, r1}, {hourMillis, r2}, {hourMillis + dayMillis + 2*minuteMillis, r3}},
			[]RateSample{{hourMillis, r2}, {hourMillis + dayMillis + 2*minuteMillis, r3}}},
		{"exactly the window: the older sample goes",
			[]RateSample{{0, r1}, {minuteMillis, r2}, {minuteMillis + rateHistoryWindowMillis, r3}},
			[]RateSample{{minuteMillis, r2}, {minuteMillis + rateHistoryWindowMillis, r3}}},
	} {
		var h RateHistory
		for _, s := range tc.record {
			h.Record(s.At, s.Rate)
		}
		got := h.Samples()
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

func TestRateHistoryBounded(t *testing.T) {
	var h RateHistory
	// A sample every 20 s for three days.
	end := 3 * dayMillis
	for at := int64(0); at <= end; at += 20_000 {
		h.Record(at, RateFromUnits(uint64(at/1000+1)))
	}
	s := h.Samples()
	// One per minute bucket after the oldest (samples[1] is within the
	// window of 24 h + 1 minute: at most 1442 buckets), plus the reference.
	// NB: the RateHistory doc says ≤ 1442; it is 1443 when samples are not
	// on minute boundaries.
	if len(s) > 1443 {
		t.Fatalf("%d samples; at most 1443 (one a minute for 24 h + 1 min, plus the reference)", len(s))
	}
	if len(s) < 1440 {
		t.Fatalf("%d samples; want a full day of minutes", len(s))
	}
	for i := 1; i < len(s); i++ {
		if s[i].At/minuteMillis == s[i-1].At/minuteMillis || s[i].At < s[i-1].At {
			t.Fatalf("samples %d and %d at %d and %d: not one per minute, in order", i-1, i, s[i-1].At, s[i].At)
		}
	}
	if s[0].At > end-dayMillis || s[1].At <= end-rateHistoryWindowMillis {
		t.Fatalf("oldest samples at %d, %d; the window of %d ending %d must keep one reference before a day ago",
			s[0].At, s[1].At, rateHistoryWindowMillis, end)
	}
	if ref, ok := h.Reference(end); !ok || ref.At > end-dayMillis || ref.At <= end-dayMillis-minuteMillis {
		t.Fatalf("reference %v, %v; want the last sample at or before %d", ref, ok, end-dayMillis)
	}
}

func TestRateHistoryReference(t *testing.T) {
	r1, r2, r3 := tickerRate("1"), tickerRate("2"), tickerRate("3")
	var empty RateHistory
	if _, ok := empty.Reference(dayMillis); ok {
		t.Fatal("an empty history has a reference")
	}
	var h RateHistory
	h.Record(0, r1)
	h.Record(10*hourMillis, r2)
	h.Record(30*hourMillis, r3)
	for _, tc := range []struct {
		name string
		now  int64
		want RateSample
	}{
		{"younger than a day: the oldest", 5 * hourMillis, RateSample{0, r1}},
		{"exactly a day after a sample: that sample", 34 * hourMillis, RateSample{10 * hourMillis, r2}},
		{"between samples: the one before", 33 * hourMillis, RateSample{0, r1}},
		{"a millisecond before a day after", 34*hourMillis - 1, RateSample{0, r1}},
		{"long after: the latest before a day ago", 60 * hourMillis, RateSample{30 * hourMillis, r3}},
	} {
		got, ok := h.Reference(tc.now)
		if !ok || got != tc.want {
			t.Errorf("%s: Reference(%d) = %v, %v; want %v", tc.name, tc.now, got, ok, tc.want)
		}
	}
}

// change24h is the spec's percentChange24h of t at now: (consensus −
// reference) ÷ reference × 100, 2 places; 0 without a reference.
func change24h(t *Ticker, now int64) decimal.Decimal {
	ref, ok := t.ConsensusPast.Reference(now)
	if !ok {
		return decimal.Zero
	}
	r := ref.Rate.Decimal()
	return t.Consensus.Decimal().Sub(r).Mul(decimal.NewFromInt(100)).DivRound(r, 2)
}

func TestTickerObserve24hChange(t *testing.T) {
	pair := Pair{Source: CurrencyNGN, Destination: CurrencyUSDT}
	b := NewBook(pair)
	b.Upsert(BookEntry{Pool: PoolID{1}, Rate: tickerRate("0.000625"), RateSetAt: 0, Active: true, Available: 1000})
	b.Upsert(BookEntry{Pool: PoolID{2}, Rate: tickerRate("0.00062"), RateSetAt: 0, Active: true, Available: 500})
	var tk Ticker
	t0 := int64(1_795_000_000_000) // some day in 2026, unix ms

	steps := []struct {
		name        string
		at          int64
		change      func()
		changed     bool
		consensus   string // "" = none
		consensusAt int64
		change24h   string
	}{
		{"first observation", t0, func() {}, true, "0.000625", t0, "0"},
		{"nothing moved", t0 + minuteMillis, func() {}, false, "0.000625", t0, "0"},
		{"the other pool moves: the median stays", t0 + hourMillis,
			func() { b.SetRate(PoolID{2}, tickerRate("0.000621"), t0+hourMillis) }, false, "0.000625", t0, "0"},
		{"the median pool moves: +0.8 % on the oldest known", t0 + 2*hourMillis,
			func() { b.SetRate(PoolID{1}, tickerRate("0.00063"), t0+2*hourMillis) }, true, "0.00063", t0 + 2*hourMillis, "0.8"},
		{"a day after the first: against the rate of a day ago", t0 + 25*hourMillis,
			func() { b.SetRate(PoolID{1}, tickerRate("0.000635"), t0+25*hourMillis) }, true, "0.000635", t0 + 25*hourMillis, "1.6"},
		{"liquidity shifts the median to the other pool", t0 + 27*hourMillis,
			func() { b.AddAvailable(PoolID{2}, 1000) }, true, "0.000621", t0 + 27*hourMillis, "-1.43"},
		{"every pool suspended: no consensus", t0 + 28*hourMillis,
			func() { b.SetActive(PoolID{1}, false); b.SetActive(PoolID{2}, false) }, true, "", t0 + 28*hourMillis, ""},
		{"back: the history goes on", t0 + 29*hourMillis,
			func() { b.SetActive(PoolID{1}, true) }, true, "0.000635", t0 + 29*hourMillis, "0.79"},
	}
	for _, st := range steps {
		st.change()
		if got := tk.Observe(b, st.at); got != st.changed {
			t.Fatalf("%s: Observe reported changed=%v; want %v", st.name, got, st.changed)
		}
		if st.consensus == "" {
			if tk.HasConsensus {
				t.Fatalf("%s: consensus %s; want none", st.name, tk.Consensus.Decimal())
			}
			continue
		}
		if !tk.HasConsensus || tk.Consensus != tickerRate(st.consensus) || tk.ConsensusAt != st.consensusAt {
			t.Fatalf("%s: consensus %s at %d (%v); want %s at %d", st.name, tk.Consensus.Decimal(), tk.ConsensusAt,
				tk.HasConsensus, st.consensus, st.consensusAt)
		}
		if got := change24h(&tk, st.at); !got.Equal(decimal.RequireFromString(st.change24h)) {
			t.Fatalf("%s: 24 h change %s%%; want %s%%", st.name, got, st.change24h)
		}
	}
	// The view a reader gets is a copy: later observations do not touch it.
	view := tk.Clone()
	before := len(view.ConsensusPast.Samples())
	b.SetRate(PoolID{1}, tickerRate("0.00064"), t0+30*hourMillis)
	tk.Observe(b, t0+30*hourMillis)
	if len(view.ConsensusPast.Samples()) != before || view.Consensus != tickerRate("0.000635") {
		t.Fatal("Clone shares state with the ticker")
	}
}
