package gateway

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// Table and fuzz tests of the XML FX API's pure parts. The HTTP tests are
// in fx_test.go (package gateway_test, real server).

func TestFXPercentChange(t *testing.T) {
	rate := func(s string) engine.Rate {
		r, err := engine.RateFromDecimal(decimal.RequireFromString(s))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct{ current, reference, want string }{
		{"0.00065", "0.000625", "4.00"},
		{"0.000625", "0.00065", "-3.85"},  // -3.846…
		{"0.00040002", "0.0004", "0.00"},  // 0.005: half to even, down
		{"0.00040006", "0.0004", "0.02"},  // 0.015: half to even, up
		{"0.00039998", "0.0004", "0.00"},  // -0.005
		{"0.00039994", "0.0004", "-0.02"}, // -0.015
		{"0.00040004", "0.0004", "0.01"},  // 0.01 exactly
		{"17.9", "0.000000000000000001", "1789999999999999999900.00"},
		{"0.000000000000000001", "17.9", "-100.00"},
		{"1", "1", "0.00"},
	} {
		got := percentChange(rate(c.current), rate(c.reference)).StringFixed(2)
		if got != c.want {
			t.Errorf("%s vs %s: got %s, want %s", c.current, c.reference, got, c.want)
		}
	}
	if got := percentChange(rate("1"), engine.RateFromUnits(0)).StringFixed(2); got != "0.00" {
		t.Errorf("no reference: got %s", got)
	}
}

func TestFXRequireXML(t *testing.T) {
	for _, c := range []struct {
		contentType string
		want        bool
	}{
		{"application/xml", true},
		{"text/xml", true},
		{"Application/XML", true},
		{"application/xml; charset=utf-8", true},
		{"application/xml;charset=UTF-8", true},
		{`text/xml; charset="utf-8"`, true},
		{"application/xml; charset=iso-8859-1", false},
		{"application/xml; charset=utf-16", false},
		{"application/json", false},
		{"application/xhtml+xml", false},
		{"text/plain", false},
		{"", false},
		{"application/xmlx", false},
	} {
		var ctx fasthttp.RequestCtx
		if c.contentType != "" {
			ctx.Request.Header.SetContentType(c.contentType)
		}
		if got := fxRequireXML(&ctx); got != c.want {
			t.Errorf("%q: got %v, want %v", c.contentType, got, c.want)
		}
	}
}

func TestFXNumberText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" = refused
	}{
		{"1500", "1500"}, {"0.000625", "0.000625"}, {"+1", "1"}, {"-2.5", "-2.5"}, {".5", "0.5"}, {"5.", "5"},
		{"007.50", "7.50"}, {"-0", "-0"}, {"000", "0"}, {"0.0", "0.0"}, {"-.5", "-0.5"}, {"+.5", "0.5"},
		{"1e3", ""}, {"1E3", ""}, {"0x10", ""}, {"1,5", ""}, {"1.2.3", ""}, {"", ""}, {"-", ""}, {".", ""},
		{"+", ""}, {"-.", ""}, {"NaN", ""}, {"Infinity", ""}, {" 1", ""}, {"١٢", ""},
		{strings.Repeat("9", numberBytesMax), strings.Repeat("9", numberBytesMax)},
		{strings.Repeat("9", numberBytesMax+1), ""},
	} {
		got, ok := fxNumberText(c.in)
		switch {
		case c.want == "" && ok:
			t.Errorf("%q: accepted as %q", c.in, got)
		case c.want != "" && (!ok || string(got) != c.want):
			t.Errorf("%q: got %q %v, want %q", c.in, got, ok, c.want)
		}
	}
	// What fxNumberText accepts, the engine parses to the value
	// shopspring/decimal gives the original text.
	for _, s := range []string{"+007.50", ".000625", "5.", "-0.5", "160000", "0.0000000000000000001"} {
		text, ok := fxNumberText(s)
		if !ok {
			t.Fatalf("%q refused", s)
		}
		got, gotErr := engine.ParseRateText(text)
		want, wantErr := engine.RateFromDecimal(decimal.RequireFromString(s))
		if (gotErr == nil) != (wantErr == nil && decimal.RequireFromString(s).IsPositive()) || gotErr == nil && got != want {
			t.Errorf("%q: engine %v %v, decimal %v %v", s, got, gotErr, want, wantErr)
		}
	}
}

func TestFXListingParameters(t *testing.T) {
	for _, c := range []struct {
		query    string
		wantCode string // "" = accepted
	}{
		{"", ""},
		{"source=NGN", ""},
		{"destination=USDT", ""},
		{"source=GHS&destination=USDT", ""},
		{"source=NGN&destination=GHS&page=3&pageSize=100", ""},
		{"source=&destination=", ""},
		{"source=USDT", "INVALID_CURRENCY_PAIR"},
		{"source=XYZ", "INVALID_CURRENCY_PAIR"},
		{"source=ngn", "INVALID_CURRENCY_PAIR"},
		{"destination=NGN", "INVALID_CURRENCY_PAIR"},
		{"source=GHS&destination=GHS", "INVALID_CURRENCY_PAIR"},
		{"page=-1", "VALIDATION_ERROR"},
		{"page=1.5", "VALIDATION_ERROR"},
		{"page=+1", "VALIDATION_ERROR"},
		{"page=99999999999", "VALIDATION_ERROR"},
		{"page=1000000000", "VALIDATION_ERROR"},
		{"page=999999999", ""},
		{"page=0000000001", "VALIDATION_ERROR"},
		{"pageSize=0", "VALIDATION_ERROR"},
		{"pageSize=101", "VALIDATION_ERROR"},
		{"pageSize=abc", "VALIDATION_ERROR"},
		{"page=1&page=2", "VALIDATION_ERROR"},
		{"limit=5", "VALIDATION_ERROR"},
	} {
		code := fxListingParameterCode(c.query)
		if code != c.wantCode {
			t.Errorf("%q: got %q, want %q", c.query, code, c.wantCode)
		}
	}
}

// fxListingParameterCode runs GET /listings' parameter checks on query and
// returns the error code, "" when accepted.
func fxListingParameterCode(query string) string {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/api/v1/partners/fx/listings?" + query)
	q, e := queryParams(&ctx, "source", "destination", "page", "pageSize")
	if e != nil {
		return e.code
	}
	if _, _, e := fxListingFilter(engine.DefaultMarkets(), q["source"], q["destination"]); e != nil {
		return e.code
	}
	f := fxFields{}
	page := fxPageParameter(f, "page", q["page"], 0, 0, listingsPageMax)
	size := fxPageParameter(f, "pageSize", q["pageSize"], listingsPageSizeDefault, 1, listingsPageSizeMax)
	if e := f.err(); e != nil {
		return e.code
	}
	if page < 0 || size < 1 || size > listingsPageSizeMax {
		return "BUG"
	}
	return ""
}

// fxSeeds are request documents for the fuzz tests.
var fxSeeds = []string{
	`<FXTradInstr><CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair><TradAmts><TradgCcyAmt>160000</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0.000625</XchgRate></AgrdRate><AmtDrctn>SELL</AmtDrctn></FXTradInstr>`,
	`<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05"><CcyPair><BaseCcy>GHS</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair><TradAmts><TradgCcyAmt Ccy="USDT">10.5</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0.0625</XchgRate></AgrdRate><AmtDrctn>BUY</AmtDrctn></FXTradInstr>`,
	`<FXTradInstr><CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>GHS</QtdCcy></CcyPair><TradAmts><TradgCcyAmt>1.001</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0</XchgRate></AgrdRate><AmtDrctn>HOLD</AmtDrctn><X/></FXTradInstr>`,
	`<FXTradInstr><CcyPair><BaseCcy>USDT</BaseCcy><QtdCcy>NGN</QtdCcy></CcyPair></FXTradInstr>`,
	`<!DOCTYPE x [<!ENTITY a "b">]><FXTradInstr>&a;</FXTradInstr>`,
	`<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>Ada</AcctNm><AcctNb>0123456789</AcctNb><BkCd>058</BkCd></BkDstn></SttlmDstn></FXTradAccptReq>`,
	`<FXTradAccptReq><AcctId>3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7</AcctId></FXTradAccptReq>`,
	`<FXTradAccptReq><SttlmDstn><BlkChnDstn><Adr>TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW</Adr></BlkChnDstn></SttlmDstn></FXTradAccptReq>`,
	`<FXTradAccptReq><SttlmDstn/><AcctId>x</AcctId></FXTradAccptReq>`,
	``, `<`, `{"a":1}`,
}

// fxCleanRefusal fails unless e is a refusal a partner can act on: 400 (or
// 413) with one of the codes of a bad request and a message, and details
// naming at least one element for VALIDATION_ERROR.
func fxCleanRefusal(t *testing.T, e *apiError) {
	t.Helper()
	switch {
	case e.status == fasthttp.StatusRequestEntityTooLarge && e.code == codePayloadTooLarge:
	case e.status != fasthttp.StatusBadRequest:
		t.Fatalf("refusal with status %d (%s)", e.status, e.code)
	case e.code == codeValidation:
		if len(e.details) == 0 {
			t.Fatalf("VALIDATION_ERROR without details")
		}
	case e.code == resultError(engine.ResultInvalidCurrency).code, e.code == resultError(engine.ResultInvalidCurrencyPair).code:
	default:
		t.Fatalf("refusal with code %s", e.code)
	}
	if e.message == "" {
		t.Fatalf("refusal without a message")
	}
}

// FuzzFXTradInstr: the trade initiation parser never panics, and either
// returns a create command the engine can take or a clean refusal.
func FuzzFXTradInstr(f *testing.F) {
	for _, s := range fxSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cmd, e := parseFXTradInstr(body, engine.DefaultMarkets())
		if e != nil {
			if cmd != nil {
				t.Fatalf("both a command and a refusal")
			}
			fxCleanRefusal(t, e)
			return
		}
		switch {
		case !engine.DefaultMarkets().Supported(cmd.Pair):
			t.Fatalf("unsupported pair %s accepted", cmd.Pair)
		case cmd.Amount <= 0 || cmd.Amount > engine.AmountMax:
			t.Fatalf("amount %d accepted", cmd.Amount)
		case cmd.Rate.IsZero() || engine.RateMax.Less(cmd.Rate):
			t.Fatalf("rate %v accepted", cmd.Rate)
		case cmd.Direction != engine.DirectionSource && cmd.Direction != engine.DirectionDestination:
			t.Fatalf("direction %d accepted", cmd.Direction)
		case (cmd.Pair.Source.IsToken() || cmd.Pair.Destination.IsToken()) != (cmd.Chain != engine.ChainNone):
			t.Fatalf("chain %s for pair %s", cmd.Chain, cmd.Pair)
		}
	})
}

// FuzzFXTradAccptReq: the acceptance parser never panics, and either
// returns exactly one complete settlement or a clean refusal.
func FuzzFXTradAccptReq(f *testing.F) {
	for _, s := range fxSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, e := parseFXTradAccptReq(body)
		if e != nil {
			fxCleanRefusal(t, e)
			return
		}
		switch st.Kind {
		case engine.SettlementBank:
			if st.AccountName == "" || st.AccountNumber == "" || st.BankCode == "" || st.Address != "" || !st.Account.IsZero() {
				t.Fatalf("bank settlement %+v", st)
			}
		case engine.SettlementWallet:
			if st.Account.IsZero() && st.AccountName+st.AccountNumber+st.BankCode+st.Address != "" {
				t.Fatalf("wallet settlement %+v", st)
			}
		case engine.SettlementChain:
			if st.Address == "" || len(st.Address) > chainAddressBytesMax || st.AccountName != "" || !st.Account.IsZero() {
				t.Fatalf("chain settlement %+v", st)
			}
		default:
			t.Fatalf("settlement kind %d accepted", st.Kind)
		}
	})
}

// FuzzFXListingQuery: the listing and makers-rate query parsers never
// panic and answer only 400s.
func FuzzFXListingQuery(f *testing.F) {
	for _, q := range []string{"", "source=NGN&destination=USDT&page=1&pageSize=5", "page=-1", "pageSize=101",
		"from=NGN&to=USDT", "a=%ff&&=&page=1&page=2", "source=%00"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		code := fxListingParameterCode(query)
		if code != "" && code != codeValidation && code != resultError(engine.ResultInvalidCurrencyPair).code {
			t.Fatalf("%q: code %s", query, code)
		}
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/x?" + query)
		if _, e := queryParams(&ctx, "from", "to"); e != nil && e.status != fasthttp.StatusBadRequest {
			t.Fatalf("%q: status %d", query, e.status)
		}
	})
}
