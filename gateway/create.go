package gateway

import (
	"strconv"
	"strings"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// The meaning of a create request, shared by the two dialects that state
// one: a JSON create (parseCreateQuote, public.go) and an XML trade
// initiation (parseFXTradInstr, fxtrade.go). Each dialect reads its own
// syntax into createTerms, recording its own problems with field names of
// its own; createTerms.meaning then applies the rules they share, once, in
// one precedence.

// fieldSink is where a dialect's reader records a problem with one of its
// fields (a JSON member, an XML element path).
type fieldSink interface {
	problem(field, text string)
	// notANumber is the dialect's wording for a malformed number.
	notANumber() string
}

func (o *object) notANumber() string { return "must be a number" }

func (f fxFields) notANumber() string { return "must be a decimal number such as 1500 or 0.000625" }

// amountIn converts a positive amount of currency c (exact, in minor units),
// recording a problem on field otherwise.
func amountIn(sink fieldSink, field string, text []byte, c engine.Currency) (engine.Amount, bool) {
	a, err := engine.ParseAmountText(text, c)
	switch err {
	case nil:
		return a, true
	case engine.ErrNotPositive:
		sink.problem(field, "must be greater than 0")
	case engine.ErrAmountPrecision:
		sink.problem(field, "has more than "+strconv.Itoa(int(c.MinorUnits()))+" decimal places for "+c.String())
	case engine.ErrAmountRange:
		sink.problem(field, "is too large")
	default:
		sink.problem(field, sink.notANumber())
	}
	return 0, false
}

// rateIn converts a positive rate, recording a problem on field otherwise.
func rateIn(sink fieldSink, field string, text []byte) (engine.Rate, bool) {
	r, err := engine.ParseRateText(text)
	switch err {
	case nil:
		return r, true
	case engine.ErrNotPositive:
		sink.problem(field, "must be greater than 0")
	case engine.ErrRatePrecision:
		sink.problem(field, "has more than 18 decimal places")
	case engine.ErrRateRange:
		sink.problem(field, "is too large (at most 1000000000000)")
	default:
		sink.problem(field, sink.notANumber())
	}
	return engine.Rate{}, false
}

// createTerms are a create's currencies, direction and amount as a dialect
// read them, before their meaning is checked.
type createTerms struct {
	markets                 *engine.Markets
	source, destination     string
	sourceOK, destinationOK bool
	// direction is DirectionNone when absent or refused (the reader has
	// recorded the problem).
	direction   engine.Direction
	amount      []byte
	amountOK    bool
	amountField string
	// amountCurrency, when set, is told the currency the direction puts the
	// amount in (XML states it on the element too, and checks it agrees).
	amountCurrency func(c engine.Currency)
	// anyNumberSyntax: the reader has not checked the amount's syntax, so
	// an amount of unknown currency is still refused when it is no number.
	anyNumberSyntax bool
}

// meaning sets cmd's pair, direction and amount from t with the rules both
// dialects share, in their precedence (spec §5, §6): a currency problem
// is answered with its own result code before any field problem that
// depends on the currency; the amount is judged in the currency the
// direction names; without a currency only its sign (and, for a reader that
// did not check it, its syntax) can be judged.
func (t *createTerms) meaning(cmd *actors.CreateQuote, sink fieldSink) *apiError {
	cmd.Direction = t.direction
	if t.sourceOK {
		c, ok := engine.ParseCurrency(t.source)
		if !ok || !t.markets.IsSource(c) {
			return invalidCurrency(t.markets)
		}
		cmd.Pair.Source = c
	}
	// pairOK: both currencies named, and the pair is in force.
	pairOK := t.destinationOK && t.sourceOK
	if pairOK {
		c, _ := engine.ParseCurrency(t.destination)
		cmd.Pair.Destination = c
		if !t.markets.Supported(cmd.Pair) {
			return invalidCurrencyPair(t.markets)
		}
	}
	switch {
	case t.amountOK && cmd.Direction != engine.DirectionNone && pairOK:
		c := cmd.Pair.Source
		if cmd.Direction == engine.DirectionDestination {
			c = cmd.Pair.Destination
		}
		if t.amountCurrency != nil {
			t.amountCurrency(c)
		}
		cmd.Amount, _ = amountIn(sink, t.amountField, t.amount, c)
	case t.amountOK:
		if _, err := engine.ParseRateText(t.amount); err == engine.ErrNotPositive {
			sink.problem(t.amountField, "must be greater than 0")
		} else if t.anyNumberSyntax && err != nil && err != engine.ErrRatePrecision && err != engine.ErrRateRange {
			sink.problem(t.amountField, sink.notANumber())
		}
	}
	return nil
}

// defaultChain is the chain a create settles on when it names none: the
// token side's default.
func defaultChain(m *engine.Markets, p engine.Pair) engine.Chain {
	return m.DefaultChain(tokenSide(p))
}

// tokenSide is p's token currency (the destination when both are), or
// CurrencyNone when both sides are fiat.
func tokenSide(p engine.Pair) engine.Currency {
	switch {
	case p.Destination.IsToken():
		return p.Destination
	case p.Source.IsToken():
		return p.Source
	}
	return engine.CurrencyNone
}

// chainsText is the problem of a chain token c does not settle on.
func chainsText(m *engine.Markets, c engine.Currency) string {
	spec, _ := m.Currency(c)
	names := make([]string, len(spec.Chains))
	for i, ch := range spec.Chains {
		names[i] = ch.String()
	}
	return c.String() + " settles on " + strings.Join(names, ", ")
}

// invalidCurrency is INVALID_CURRENCY naming the source currencies in
// force (the default's text: "supported source currencies are NGN and GHS").
func invalidCurrency(m *engine.Markets) *apiError {
	e := resultError(engine.ResultInvalidCurrency)
	e.message = "supported source currencies are " + m.SourceCurrenciesText()
	return e
}

// invalidCurrencyPair is INVALID_CURRENCY_PAIR naming the pairs in force.
func invalidCurrencyPair(m *engine.Markets) *apiError {
	e := resultError(engine.ResultInvalidCurrencyPair)
	e.message = "supported pairs are " + m.PairsText()
	return e
}
