package partnerapi_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oja-exchange/oja/client/oapigen/partnerapi"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestXMLRoundTrip drives the XML FX API through the generated client: a
// trade, its status, the listings, the makers rate and a rejection are
// read into the generated types, and every element's text (amounts and
// rates to the last digit) is what the service wrote.
func TestXMLRoundTrip(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "generated-xml")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "400")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk B", "0.000620123456789012", "1000")
	c := partnerClient(t, s, p.SandboxKey)
	ctx := context.Background()
	const instr = `<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05"><CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair>` +
		`<TradAmts><TradgCcyAmt Ccy="NGN">1000000.55</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0.00062</XchgRate></AgrdRate><AmtDrctn>SELL</AmtDrctn></FXTradInstr>`
	trade, err := c.FxInitiateTradeWithBodyWithResponse(ctx, nil, "application/xml", strings.NewReader(instr))
	if err != nil || trade.XML200 == nil {
		t.Fatalf("initiate: %v %d %s", err, trade.StatusCode(), trade.Body)
	}
	if got := trade.XML200.TradAmts.TradgCcyAmt; got != "1000000.55" {
		t.Fatalf("TradgCcyAmt %s, sent 1000000.55", got)
	}
	sameXML(t, "initiate", trade.Body, trade.XML200)

	id, err := uuid.Parse(trade.XML200.UnqTxIdr.TxId)
	if err != nil {
		t.Fatal(err)
	}
	status, err := c.FxTradeStatusWithResponse(ctx, id)
	if err != nil || status.XML200 == nil {
		t.Fatalf("status: %v %d %s", err, status.StatusCode(), status.Body)
	}
	sameXML(t, "status", status.Body, status.XML200)

	listings, err := c.FxListingsWithResponse(ctx, &partnerapi.FxListingsParams{})
	if err != nil || listings.XML200 == nil {
		t.Fatalf("listings: %v %d %s", err, listings.StatusCode(), listings.Body)
	}
	sameXML(t, "listings", listings.Body, listings.XML200)

	rate, err := c.FxMakersRateWithResponse(ctx, &partnerapi.FxMakersRateParams{From: "NGN", To: "USDT"})
	if err != nil || rate.XML200 == nil {
		t.Fatalf("makers rate: %v %d %s", err, rate.StatusCode(), rate.Body)
	}
	sameXML(t, "makers rate", rate.Body, rate.XML200)

	refused, err := c.FxInitiateTradeWithBodyWithResponse(ctx, nil, "application/xml", strings.NewReader(strings.Replace(instr, "SELL", "HOLD", 1)))
	if err != nil || refused.XML400 == nil || refused.XML400.Rsn.RjctgPtyRsn != "VALIDATION_ERROR" {
		t.Fatalf("refusal: %v %d %s", err, refused.StatusCode(), refused.Body)
	}
	sameXML(t, "refusal", refused.Body, refused.XML400)
}

// sameXML compares the text of every element of raw (the service's
// answer) with the text at the same path once decoded is written back
// out; element order and the root's name aside, nothing may be lost or
// changed.
func sameXML(t *testing.T, what string, raw []byte, decoded any) {
	t.Helper()
	again, err := xml.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	want, have := xmlLeaves(t, raw), xmlLeaves(t, again)
	if len(want) < 3 {
		t.Fatalf("%s: only %d elements in %s", what, len(want), raw)
	}
	if !slices.Equal(want, have) {
		t.Errorf("%s: the generated types read\n%s\nthe service wrote\n%s", what, strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// xmlLeaves lists "path=text" for each element without children, below
// the root, sorted.
func xmlLeaves(t *testing.T, doc []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var path []string
	var text strings.Builder
	children := []int{0}
	var out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%v: %s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			children[len(children)-1]++
			path = append(path, tok.Name.Local)
			children = append(children, 0)
			text.Reset()
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			if children[len(children)-1] == 0 && len(path) > 1 {
				out = append(out, strings.Join(path[1:], "/")+"="+text.String())
			}
			path, children = path[:len(path)-1], children[:len(children)-1]
			text.Reset()
		}
	}
	slices.Sort(out)
	return out
}
