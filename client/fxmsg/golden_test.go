package fxmsg_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/ from the current output")

// checkGolden compares got with testdata/name, or rewrites the file.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (review, then go test -rewrite):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func text(s string) *string { return &s }

func decimalText(s string) *fxmsg.Decimal { d := fxmsg.Decimal(s); return &d }

func root(messageType, local string) xml.Name {
	return xml.Name{Space: fxmsg.NamespacePrefix + messageType, Local: local}
}

const (
	txID   = "0b9e1c7a-3f43-4d61-9a8e-5f2c7d1e4b20"
	poolA  = "5c3f0a8e-2d1b-4c7e-9f60-1a2b3c4d5e6f"
	poolB  = "9d8e7f60-5a4b-4c3d-8e2f-1a0b9c8d7e6f"
	stamp  = "2026-11-21T10:00:00.123Z"
	ref    = "OJA-4F7Q9D2M7K"
	tron   = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"
	wallet = "3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7"
)

var (
	pair        = fxmsg.CurrencyPair{BaseCcy: "NGN", QtdCcy: "USDT"}
	usdt100     = fxmsg.Amount{Ccy: "USDT", Value: "100"}
	ngn160k     = fxmsg.Amount{Ccy: "NGN", Value: "160000"}
	rate        = fxmsg.Decimal("0.000625")
	ngn161k     = fxmsg.Amount{Ccy: "NGN", Value: "161250"}
	cryptoPayIn = &fxmsg.SettlementInstruction{CrptoPayInDtls: &fxmsg.CryptoPayInDetails{
		AdrId: "7f3e2d1c-0b9a-4876-9543-210fedcba987", Adr: tron, BlckChn: "TRON", Tkn: "USDT", AdrTp: "hd_deposit",
		XpctdAmt: usdt100, XtrnlRef: ref, Sts: "active", CreDtTm: stamp, XpryDtTm: "2026-11-21T10:30:00.123Z",
		VrtlAcctId: "VA-0123456789ABCDEF0123", DrvtnIdx: 7,
		WrngMsg: "Send only USDT on TRON to this address; any other token or network is lost. Send the expected amount before the address expires; it is for this quote only.",
	}}
	bankPayIn = &fxmsg.SettlementInstruction{BkPayInDtls: &fxmsg.BankPayInDetails{
		AcctNm: "Oja Marketplace Collections NGN", AcctNb: "0123456789", BkNm: "Oja Settlement Bank Nigeria", Ref: ref,
	}}
)

// documents are one of each request and response document of spec §7.
// Requests must decode back to the same value through their Decode
// function; responses through encoding/xml. Request roots marshal without
// a namespace (which the API accepts, as it accepts their message type's;
// decode.txt has namespaced and prefixed requests).
var documents = []struct {
	file        string
	messageType string
	message     any
	decode      func([]byte) (any, error) // requests only
}{
	{"FXTradInstr_sell.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradInstr{
		XMLName:  xml.Name{Local: "FXTradInstr"},
		CcyPair:  &fxmsg.InstructedPair{BaseCcy: text("NGN"), QtdCcy: text("USDT")},
		TradAmts: &fxmsg.InstructedAmounts{TradgCcyAmt: &fxmsg.Amount{Ccy: "NGN", Value: "160000"}},
		AgrdRate: &fxmsg.AgreedRate{XchgRate: decimalText("0.000625")},
		AmtDrctn: text(fxmsg.DirectionSell),
	}, decodeInstruction},
	{"FXTradInstr_buy.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradInstr{
		XMLName:  xml.Name{Local: "FXTradInstr"},
		CcyPair:  &fxmsg.InstructedPair{BaseCcy: text("GHS"), QtdCcy: text("USDT")},
		TradAmts: &fxmsg.InstructedAmounts{TradgCcyAmt: &fxmsg.Amount{Value: "250.5"}},
		AgrdRate: &fxmsg.AgreedRate{XchgRate: decimalText("0.0625")},
		AmtDrctn: text(fxmsg.DirectionBuy),
	}, decodeInstruction},
	{"FXTradAccptReq_bank.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradAccptReq{
		XMLName: xml.Name{Local: "FXTradAccptReq"},
		SttlmDstn: &fxmsg.SettlementDestination{BkDstn: &fxmsg.BankDestination{
			AcctNm: text("Kofi & Ama Mensah"), AcctNb: text("0041234567"), BkCd: text("GCB-030100"),
		}},
	}, decodeAcceptance},
	{"FXTradAccptReq_internal.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradAccptReq{
		XMLName: xml.Name{Local: "FXTradAccptReq"},
		AcctId:  text(wallet),
	}, decodeAcceptance},
	{"FXTradAccptReq_chain.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradAccptReq{
		XMLName:   xml.Name{Local: "FXTradAccptReq"},
		SttlmDstn: &fxmsg.SettlementDestination{BlkChnDstn: &fxmsg.BlockchainDestination{Adr: text(tron)}},
	}, decodeAcceptance},

	{"FXTradInstrRspn_new.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradInstrRspn{
		XMLName:   root(fxmsg.TypeTradeInstruction, "FXTradInstrRspn"),
		UnqTxIdr:  fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:   fxmsg.TradeStatus{Sts: fxmsg.StatusNew},
		CcyPair:   pair,
		XchgRate:  rate,
		TradAmts:  fxmsg.TradeAmounts{TradgCcyAmt: ngn160k, SttlmCcyAmt: &usdt100, CntrValCcyAmt: ngn160k},
		AllcnDtls: fxmsg.AllocationDetails{TtlSttlmAmt: usdt100, WtdAvrgRate: rate},
		TTL:       300,
		OprgMd:    "sandbox",
	}, nil},
	{"FXTradInstrRspn_accepted.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradInstrRspn{
		XMLName:    root(fxmsg.TypeTradeInstruction, "FXTradInstrRspn"),
		UnqTxIdr:   fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:    fxmsg.TradeStatus{Sts: fxmsg.StatusSettling},
		CcyPair:    pair,
		XchgRate:   rate,
		TradAmts:   fxmsg.TradeAmounts{TradgCcyAmt: usdt100, SttlmCcyAmt: &usdt100, CntrValCcyAmt: ngn160k},
		AllcnDtls:  fxmsg.AllocationDetails{TtlSttlmAmt: usdt100, WtdAvrgRate: rate},
		SttlmInstr: bankPayIn,
		TTL:        1800,
		OprgMd:     "live",
	}, nil},
	// A token-source trade (USDT→NGN at 1612.5) accepted: its pay-in is a
	// deposit address.
	{"FXTradInstrRspn_accepted_crypto.xml", fxmsg.TypeTradeInstruction, &fxmsg.FXTradInstrRspn{
		XMLName:    root(fxmsg.TypeTradeInstruction, "FXTradInstrRspn"),
		UnqTxIdr:   fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:    fxmsg.TradeStatus{Sts: fxmsg.StatusSettling},
		CcyPair:    fxmsg.CurrencyPair{BaseCcy: "USDT", QtdCcy: "NGN"},
		XchgRate:   fxmsg.Decimal("1612.5"),
		TradAmts:   fxmsg.TradeAmounts{TradgCcyAmt: usdt100, SttlmCcyAmt: &ngn161k, CntrValCcyAmt: usdt100},
		AllcnDtls:  fxmsg.AllocationDetails{TtlSttlmAmt: ngn161k, WtdAvrgRate: fxmsg.Decimal("1612.5")},
		SttlmInstr: cryptoPayIn,
		TTL:        1800,
		OprgMd:     "live",
	}, nil},
	{"FXTradStsAndDtlsNtfctn.xml", fxmsg.TypeTradeStatus, &fxmsg.FXTradStsAndDtlsNtfctn{
		XMLName:  root(fxmsg.TypeTradeStatus, "FXTradStsAndDtlsNtfctn"),
		UnqTxIdr: fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:  fxmsg.TradeStatus{Sts: fxmsg.StatusNew},
		CcyPair:  pair,
		XchgRate: rate,
		TradAmts: fxmsg.TradeAmounts{TradgCcyAmt: ngn160k, CntrValCcyAmt: ngn160k},
		TTL:      287,
		OprgMd:   "sandbox",
	}, nil},
	{"FXTradStsAndDtlsNtfctn_expired.xml", fxmsg.TypeTradeStatus, &fxmsg.FXTradStsAndDtlsNtfctn{
		XMLName:    root(fxmsg.TypeTradeStatus, "FXTradStsAndDtlsNtfctn"),
		UnqTxIdr:   fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:    fxmsg.TradeStatus{Sts: fxmsg.StatusCancelled, Rsn: fxmsg.ReasonExpired},
		CcyPair:    pair,
		XchgRate:   rate,
		TradAmts:   fxmsg.TradeAmounts{TradgCcyAmt: usdt100, CntrValCcyAmt: ngn160k},
		SttlmInstr: bankPayIn,
		TTL:        0,
		OprgMd:     "sandbox",
	}, nil},
	{"FXTradCxlRspn.xml", fxmsg.TypeTradeCancellation, &fxmsg.FXTradCxlRspn{
		XMLName:  root(fxmsg.TypeTradeCancellation, "FXTradCxlRspn"),
		UnqTxIdr: fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:  fxmsg.TradeStatus{Sts: fxmsg.StatusCancelled},
		CcyPair:  pair,
		XchgRate: rate,
		TTL:      0,
		OprgMd:   "sandbox",
	}, nil},
	{"FXTradConfStsAdvc.xml", fxmsg.TypeTradeConfirmation, &fxmsg.FXTradConfStsAdvc{
		XMLName:    root(fxmsg.TypeTradeConfirmation, "FXTradConfStsAdvc"),
		UnqTxIdr:   fxmsg.TransactionIdentifier{TxId: txID},
		TradSts:    fxmsg.TradeStatus{Sts: fxmsg.StatusCompleted},
		CcyPair:    pair,
		XchgRate:   rate,
		SttlmInstr: bankPayIn,
		TTL:        0,
		OprgMd:     "sandbox",
	}, nil},
	{"FndPrcgPsptRpt.xml", fxmsg.TypeListings, &fxmsg.FndPrcgPsptRpt{
		XMLName: root(fxmsg.TypeListings, "FndPrcgPsptRpt"),
		Pgntn:   fxmsg.Pagination{PageNumber: 0, PageSize: 2, TotalElements: 5},
		Listgs: []fxmsg.Listing{
			{Id: poolA, Nm: "Lagos <Prime> Desk", CcyPair: "NGN/USDT", XchgRate: "0.00063",
				AvlblBal: fxmsg.Amount{Ccy: "USDT", Value: "25000.5"}, TradsCnt: 3, CmpltnRate: "75.00"},
			{Id: poolB, Nm: "Abuja Desk", CcyPair: "NGN/USDT", XchgRate: "0.000625",
				AvlblBal: fxmsg.Amount{Ccy: "USDT", Value: "0"}, TradsCnt: 0, CmpltnRate: "0.00"},
		},
		OprgMd: "sandbox",
	}, nil},
	{"FndPrcgPsptRpt_empty.xml", fxmsg.TypeListings, &fxmsg.FndPrcgPsptRpt{
		XMLName: root(fxmsg.TypeListings, "FndPrcgPsptRpt"),
		Pgntn:   fxmsg.Pagination{PageNumber: 3, PageSize: 20, TotalElements: 5},
		OprgMd:  "live",
	}, nil},
	{"FxTradStsAndDtls.xml", fxmsg.TypeTradeInstruction, &fxmsg.FxTradStsAndDtls{
		XMLName:   root(fxmsg.TypeTradeInstruction, "FxTradStsAndDtls"),
		SrcCcy:    "NGN",
		TrgtCcy:   "USDT",
		XchgRate:  "0.00065",
		RateSrc:   fxmsg.RateSourceMarketMaker,
		TmStmp:    stamp,
		AgeSecs:   42,
		PctChg24H: "-1.25",
		OprgMd:    "sandbox",
	}, nil},
	{"MsgRjct.xml", fxmsg.TypeMessageReject, &fxmsg.MsgRjct{
		XMLName: root(fxmsg.TypeMessageReject, "MsgRjct"),
		RltdRef: fxmsg.RelatedReference{Ref: txID},
		Rsn: fxmsg.RejectionReason{RjctgPtyRsn: "INVALID_STATE", RjctnDtTm: stamp,
			RsnDesc: "the quote's status does not allow this operation (allowedFrom: awaiting_payment; status: pending)"},
	}, nil},
}

func decodeInstruction(b []byte) (any, error) { return fxmsg.DecodeFXTradInstr(b) }
func decodeAcceptance(b []byte) (any, error)  { return fxmsg.DecodeFXTradAccptReq(b) }

// TestDocuments renders every document against its golden file, checks
// the root's namespace, and decodes the golden file back to the value.
func TestDocuments(t *testing.T) {
	for _, d := range documents {
		t.Run(d.file, func(t *testing.T) {
			got, err := fxmsg.Append(nil, d.message)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			checkGolden(t, d.file, got)

			dec := xml.NewDecoder(bytes.NewReader(got))
			for {
				tok, err := dec.Token()
				if err != nil {
					t.Fatalf("no root: %v", err)
				}
				if start, ok := tok.(xml.StartElement); ok {
					want := fxmsg.NamespacePrefix + d.messageType
					if d.decode != nil {
						want = ""
					}
					if start.Name.Space != want {
						t.Errorf("root namespace: got %q, want %q", start.Name.Space, want)
					}
					break
				}
			}

			var back any
			if d.decode != nil {
				back, err = d.decode(got)
			} else {
				v := reflect.New(reflect.TypeOf(d.message).Elem())
				err = xml.Unmarshal(got, v.Interface())
				back = v.Interface()
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(back, d.message) {
				t.Errorf("decoded value differs:\ngot  %+v\nwant %+v", back, d.message)
			}
		})
	}
}

// TestResponseNamespaces checks that every response root carries the
// namespace of its message type, whatever its content.
func TestResponseNamespaces(t *testing.T) {
	for _, c := range []struct {
		message any
		want    string
	}{
		{&fxmsg.FXTradInstrRspn{}, fxmsg.TypeTradeInstruction},
		{&fxmsg.FXTradStsAndDtlsNtfctn{}, fxmsg.TypeTradeStatus},
		{&fxmsg.FXTradCxlRspn{}, fxmsg.TypeTradeCancellation},
		{&fxmsg.FXTradConfStsAdvc{}, fxmsg.TypeTradeConfirmation},
		{&fxmsg.FndPrcgPsptRpt{}, fxmsg.TypeListings},
		{&fxmsg.FxTradStsAndDtls{}, fxmsg.TypeTradeInstruction},
		{&fxmsg.MsgRjct{}, fxmsg.TypeMessageReject},
	} {
		b, err := xml.Marshal(c.message)
		if err != nil {
			t.Fatal(err)
		}
		want := `xmlns="` + fxmsg.NamespacePrefix + c.want + `"`
		if i := bytes.IndexByte(b, '>'); i < 0 || !bytes.Contains(b[:i], []byte(want)) {
			t.Errorf("%T: root start tag %s lacks %s", c.message, b, want)
		}
	}
}
