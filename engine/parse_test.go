package engine

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
)

// isJSONNumber reports whether text is a JSON number: the parsers' domain.
func isJSONNumber(text string) bool {
	return text != "" && (text[0] == '-' || text[0] >= '0' && text[0] <= '9') && json.Valid([]byte(text))
}

// decimalAmount is the reference: parse with shopspring/decimal, then the
// edge conversion AmountFromDecimal.
func decimalAmount(text string, c Currency) (Amount, error) {
	d, err := decimal.NewFromString(text)
	if err != nil {
		return 0, errNumberSyntax
	}
	if !d.IsPositive() {
		return 0, ErrNotPositive
	}
	return AmountFromDecimal(d, c)
}

func decimalRate(text string) (Rate, error) {
	d, err := decimal.NewFromString(text)
	if err != nil {
		return RateFromUnits(0), errNumberSyntax
	}
	if !d.IsPositive() {
		return RateFromUnits(0), ErrNotPositive
	}
	return RateFromDecimal(d)
}

var parseCases = []string{
	"1", "1500", "0.25", "0.01", "0.001", "12.50", "12.500000", "1e3", "1.5E3", "15e-1", "1e-2", "1e-3",
	"0", "-1", "-0.5", "0.0", "00012", "1000000000000", "10000000000000", "99999999999999.99",
	"1e13", "1e14", "1e20", "1e40", "1" + string(make([]byte, 0)) + "2345678901234567890123456789012345678901234",
	"0.000625", "0.000000000000000001", "0.0000000000000000001", "18", "18.000000000000000001", "17.999999999999999999",
	"1.000000000000000000000000000000000000000000000000", "1.0000000000000000000000000000000000000000000000001",
	"0.1e1", "123.456e-3", "5e+2", "1e", "e5", ".5", "5.", "--1", "+1", "1.2.3", "0x10", "", "-",
	"000000000000000000000000000000000000000000000000001", "1e1000", "1e-1000",
}

func TestParseAmountTextMatchesDecimal(t *testing.T) {
	for _, c := range DefaultMarkets().CurrencyList() {
		for _, text := range parseCases {
			got, gotErr := ParseAmountText([]byte(text), c)
			if !isJSONNumber(text) {
				if gotErr == nil {
					t.Errorf("ParseAmountText(%q) accepted a non-JSON number", text)
				}
				continue
			}
			want, wantErr := decimalAmount(text, c)
			if !sameOutcome(got, gotErr, want, wantErr) {
				t.Errorf("ParseAmountText(%q, %s) = %d, %v; decimal says %d, %v", text, c, got, gotErr, want, wantErr)
			}
		}
	}
}

func TestParseRateTextMatchesDecimal(t *testing.T) {
	for _, text := range parseCases {
		got, gotErr := ParseRateText([]byte(text))
		if !isJSONNumber(text) {
			if gotErr == nil {
				t.Errorf("ParseRateText(%q) accepted a non-JSON number", text)
			}
			continue
		}
		want, wantErr := decimalRate(text)
		if !sameOutcome(got, gotErr, want, wantErr) {
			t.Errorf("ParseRateText(%q) = %d, %v; decimal says %d, %v", text, got, gotErr, want, wantErr)
		}
	}
}

// sameOutcome compares results: equal values, or both refused. Which of
// "too precise" and "out of range" a number that is both gets is not part
// of the spec (either is a 400 naming the field).
func sameOutcome[T comparable](got T, gotErr error, want T, wantErr error) bool {
	if gotErr == nil || wantErr == nil {
		return gotErr == nil && wantErr == nil && got == want
	}
	if errors.Is(wantErr, errNumberSyntax) {
		return true // a JSON number decimal cannot hold (huge exponent): refused either way
	}
	return errors.Is(gotErr, ErrNotPositive) == errors.Is(wantErr, ErrNotPositive)
}

func FuzzParseAmountText(f *testing.F) {
	for _, text := range parseCases {
		f.Add(text, uint8(1))
	}
	f.Fuzz(func(t *testing.T, text string, currency uint8) {
		currencies := DefaultMarkets().CurrencyList()
		c := currencies[int(currency)%len(currencies)]
		got, gotErr := ParseAmountText([]byte(text), c)
		if !isJSONNumber(text) {
			if gotErr == nil {
				t.Fatalf("ParseAmountText(%q) accepted a non-JSON number", text)
			}
			return
		}
		want, wantErr := decimalAmount(text, c)
		if !sameOutcome(got, gotErr, want, wantErr) {
			t.Fatalf("ParseAmountText(%q, %s) = %d, %v; decimal says %d, %v", text, c, got, gotErr, want, wantErr)
		}
		gotRate, gotErr := ParseRateText([]byte(text))
		wantRate, wantErr := decimalRate(text)
		if !sameOutcome(gotRate, gotErr, wantRate, wantErr) {
			t.Fatalf("ParseRateText(%q) = %d, %v; decimal says %d, %v", text, gotRate, gotErr, wantRate, wantErr)
		}
	})
}

func TestParseTextAllocationFree(t *testing.T) {
	text := []byte("1234.56")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseAmountText(text, CurrencyNGN) }); n != 0 {
		t.Fatalf("ParseAmountText allocates %v times", n)
	}
}
