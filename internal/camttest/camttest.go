// Package camttest builds ISO 20022 bank statements (camt.053.001.08) and
// credit notifications (camt.054.001.08) for tests: schema-valid
// documents (gateway/camt's tests check them against the ISO XSDs) with
// the entries a test needs.
package camttest

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// Entry is one entry of a built document.
type Entry struct {
	Amount      string // decimal, e.g. "100000.00"
	Currency    string // e.g. "NGN"
	Debit       bool   // DBIT instead of CRDT
	Pending     bool   // Sts PDNG instead of BOOK
	AcctSvcrRef string // the bank's reference ("" for none)
	NtryRef     string
	Remittance  []string // RmtInf/Ustrd, each at most 140 characters
	Debtor      string
}

// Statement is a camt.053.001.08 document of msgID reporting entries on
// account (Acct/Id/Othr/Id) in currency.
func Statement(msgID, account, currency string, entries ...Entry) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">
  <BkToCstmrStmt>
    <GrpHdr><MsgId>` + esc(msgID) + `</MsgId><CreDtTm>2026-11-28T18:00:00</CreDtTm></GrpHdr>
    <Stmt>
      <Id>` + esc(msgID) + `-1</Id>
      <CreDtTm>2026-11-28T18:00:00</CreDtTm>
      <Acct><Id><Othr><Id>` + esc(account) + `</Id></Othr></Id><Ccy>` + esc(currency) + `</Ccy></Acct>
      <Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="` + esc(currency) + `">0</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-11-28</Dt></Dt></Bal>
`)
	for _, e := range entries {
		writeEntry(&b, e)
	}
	b.WriteString(`    </Stmt>
  </BkToCstmrStmt>
</Document>
`)
	return []byte(b.String())
}

// Notification is a camt.054.001.08 document of msgID notifying entries
// on account.
func Notification(msgID, account, currency string, entries ...Entry) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.08">
  <BkToCstmrDbtCdtNtfctn>
    <GrpHdr><MsgId>` + esc(msgID) + `</MsgId><CreDtTm>2026-11-28T09:30:00</CreDtTm></GrpHdr>
    <Ntfctn>
      <Id>` + esc(msgID) + `-1</Id>
      <Acct><Id><Othr><Id>` + esc(account) + `</Id></Othr></Id><Ccy>` + esc(currency) + `</Ccy></Acct>
`)
	for _, e := range entries {
		writeEntry(&b, e)
	}
	b.WriteString(`    </Ntfctn>
  </BkToCstmrDbtCdtNtfctn>
</Document>
`)
	return []byte(b.String())
}

func writeEntry(b *strings.Builder, e Entry) {
	b.WriteString("      <Ntry>\n")
	if e.NtryRef != "" {
		fmt.Fprintf(b, "        <NtryRef>%s</NtryRef>\n", esc(e.NtryRef))
	}
	direction, status := "CRDT", "BOOK"
	if e.Debit {
		direction = "DBIT"
	}
	if e.Pending {
		status = "PDNG"
	}
	fmt.Fprintf(b, "        <Amt Ccy=\"%s\">%s</Amt>\n        <CdtDbtInd>%s</CdtDbtInd>\n        <Sts><Cd>%s</Cd></Sts>\n",
		esc(e.Currency), esc(e.Amount), direction, status)
	b.WriteString("        <BookgDt><Dt>2026-11-28</Dt></BookgDt>\n")
	if e.AcctSvcrRef != "" {
		fmt.Fprintf(b, "        <AcctSvcrRef>%s</AcctSvcrRef>\n", esc(e.AcctSvcrRef))
	}
	b.WriteString("        <BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>DMCT</SubFmlyCd></Fmly></Domn></BkTxCd>\n")
	if e.Debtor != "" || len(e.Remittance) > 0 {
		b.WriteString("        <NtryDtls><TxDtls>\n")
		if e.Debtor != "" {
			fmt.Fprintf(b, "          <RltdPties><Dbtr><Pty><Nm>%s</Nm></Pty></Dbtr></RltdPties>\n", esc(e.Debtor))
		}
		if len(e.Remittance) > 0 {
			b.WriteString("          <RmtInf>")
			for _, u := range e.Remittance {
				fmt.Fprintf(b, "<Ustrd>%s</Ustrd>", esc(u))
			}
			b.WriteString("</RmtInf>\n")
		}
		b.WriteString("        </TxDtls></NtryDtls>\n")
	}
	b.WriteString("      </Ntry>\n")
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
