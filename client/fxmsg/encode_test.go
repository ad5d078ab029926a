package fxmsg_test

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
)

// referenceAppend is what Append must write: encoding/xml's indented
// encoding after the XML declaration, and a newline.
func referenceAppend(m any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	e := xml.NewEncoder(&buf)
	e.Indent("", "  ")
	if err := e.Encode(m); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// responses builds one of each response message from a few values, each
// string field taking one of them.
func responses(s1, s2, s3 string, n int64, withOptional bool) []any {
	amount := fxmsg.Amount{Ccy: s2, Value: fxmsg.Decimal(s3)}
	var optional *fxmsg.Amount
	var instruction *fxmsg.SettlementInstruction
	var destination *fxmsg.SettlementDestination
	var account *string
	if withOptional {
		switch n % 3 {
		case 0:
			destination = &fxmsg.SettlementDestination{BkDstn: &fxmsg.BankDestination{AcctNm: &s1, AcctNb: &s2, BkCd: &s3}}
		case 1, -1:
			destination = &fxmsg.SettlementDestination{BlkChnDstn: &fxmsg.BlockchainDestination{Adr: &s2}}
		default:
			account = &s3
		}
		optional = &fxmsg.Amount{Ccy: s1, Value: fxmsg.Decimal(s2)}
		instruction = &fxmsg.SettlementInstruction{BkPayInDtls: &fxmsg.BankPayInDetails{AcctNm: s1, AcctNb: s2, BkNm: s3, Ref: s1 + s3}}
	}
	status := fxmsg.TradeStatus{Sts: s1, Rsn: s2}
	pair := fxmsg.CurrencyPair{BaseCcy: s2, QtdCcy: s3}
	listings := []fxmsg.Listing{{Id: s1, Nm: s2, CcyPair: s3, XchgRate: fxmsg.Decimal(s1), AvlblBal: amount, TradsCnt: uint64(n), CmpltnRate: fxmsg.Decimal(s2)}}
	if !withOptional {
		listings = append(listings, listings[0], listings[0])
		listings[1].Nm = s3
	} else if n%2 == 0 {
		listings = nil
	}
	return []any{
		&fxmsg.FXTradInstrRspn{UnqTxIdr: fxmsg.TransactionIdentifier{TxId: s1}, TradSts: status, CcyPair: pair, XchgRate: fxmsg.Decimal(s3),
			TradAmts:  fxmsg.TradeAmounts{TradgCcyAmt: amount, SttlmCcyAmt: optional, CntrValCcyAmt: amount},
			AllcnDtls: fxmsg.AllocationDetails{TtlSttlmAmt: amount, WtdAvrgRate: fxmsg.Decimal(s1)}, SttlmInstr: instruction, TTL: n, OprgMd: s2},
		&fxmsg.FXTradStsAndDtlsNtfctn{UnqTxIdr: fxmsg.TransactionIdentifier{TxId: s2}, TradSts: status, CcyPair: pair, XchgRate: fxmsg.Decimal(s1),
			TradAmts: fxmsg.TradeAmounts{TradgCcyAmt: amount, SttlmCcyAmt: optional, CntrValCcyAmt: amount}, SttlmInstr: instruction,
			SttlmDstn: destination, AcctId: account, TTL: -n, OprgMd: s3},
		&fxmsg.FXTradCxlRspn{UnqTxIdr: fxmsg.TransactionIdentifier{TxId: s3}, TradSts: status, CcyPair: pair, XchgRate: fxmsg.Decimal(s2), TTL: n, OprgMd: s1},
		&fxmsg.FXTradConfStsAdvc{UnqTxIdr: fxmsg.TransactionIdentifier{TxId: s1}, TradSts: status, CcyPair: pair, XchgRate: fxmsg.Decimal(s2),
			SttlmInstr: instruction, TTL: n, OprgMd: s1},
		&fxmsg.FndPrcgPsptRpt{Pgntn: fxmsg.Pagination{PageNumber: int(n), PageSize: int(-n), TotalElements: int(n / 3)}, Listgs: listings, OprgMd: s3},
		&fxmsg.FxTradStsAndDtls{SrcCcy: s1, TrgtCcy: s2, XchgRate: fxmsg.Decimal(s3), RateSrc: s1, TmStmp: s2, AgeSecs: n, PctChg24H: fxmsg.Decimal(s3), OprgMd: s1},
		&fxmsg.MsgRjct{RltdRef: fxmsg.RelatedReference{Ref: s1}, Rsn: fxmsg.RejectionReason{RjctgPtyRsn: s2, RjctnDtTm: s3, RsnDesc: s1 + s2 + s3}},
	}
}

func compareEncoders(t *testing.T, s1, s2, s3 string, n int64) {
	t.Helper()
	for _, optional := range []bool{false, true} {
		for _, m := range responses(s1, s2, s3, n, optional) {
			got, err := fxmsg.Append(nil, m)
			if err != nil {
				t.Fatalf("%T: %v", m, err)
			}
			want, err := referenceAppend(m)
			if err != nil {
				t.Fatalf("%T reference: %v", m, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%T for %q %q %q %d:\ngot:\n%s\nwant:\n%s", m, s1, s2, s3, n, got, want)
			}
		}
	}
}

var encodeSeeds = []struct {
	s1, s2, s3 string
	n          int64
}{
	{"NEWT", "NGN", "0.000625", 300},
	{"", "", "", 0},
	{`<&>"'`, "\t\n\r", "a\x00b\x1fc\x7f", -1},
	{"\xff\xfe", "\uFFFD\uFFFE\uFFFF", "\U0010FFFF\u00e9\u2028", 1 << 62},
	{"]]>", "&amp;", "<![CDATA[x]]>", -1 << 63},
	{"Kofi & Ama", "\xed\xa0\x80", "x\xc3", 7},
}

func TestEncodeMatchesEncodingXML(t *testing.T) {
	for _, s := range encodeSeeds {
		compareEncoders(t, s.s1, s.s2, s.s3, s.n)
	}
}

// FuzzEncode compares the hand-made writers with encoding/xml.
func FuzzEncode(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add(s.s1, s.s2, s.s3, s.n)
	}
	f.Fuzz(compareEncoders)
}

// The hand-made paths must stay cheap: this is why they exist.
func TestEncodeAllocations(t *testing.T) {
	m := responses("0b9e1c7a-3f43-4d61-9a8e-5f2c7d1e4b20", "NGN", "0.000625", 300, true)[0]
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := fxmsg.Append(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Errorf("Append of an FXTradInstrRspn allocates %v times, want 0", n)
	}
}

func BenchmarkAppendInstructionResponse(b *testing.B) {
	m := responses("0b9e1c7a-3f43-4d61-9a8e-5f2c7d1e4b20", "NGN", "0.000625", 300, true)[0]
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for range b.N {
		if _, err := fxmsg.Append(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeInstruction(b *testing.B) {
	body, err := fxmsg.Append(nil, documents[0].message)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := fxmsg.DecodeFXTradInstr(body); err != nil {
			b.Fatal(err)
		}
	}
}
