// Package camt reads what Oja needs of a bank's ISO 20022 cash management
// messages: camt.053.001.08 (Bank to Customer Statement) and
// camt.054.001.08 (Bank to Customer Debit/Credit Notification) — for each
// account reported, its identification and its entries' amount, currency,
// direction, status, bank references, remittance text and payer. Parsing
// is encoding/xml over types for those elements; the message is told by
// the document's namespace. A document that is not well formed, not one
// of the two messages, too deep or too large, or that declares a DTD, is
// refused with the reason. testdata holds schema-valid samples (checked
// against the ISO 20022 XSDs in testdata/xsd by the tests).
package camt

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The messages Oja reads, by namespace.
const (
	Statement    = "camt.053.001.08"
	Notification = "camt.054.001.08"
	nsPrefix     = "urn:iso:std:iso:20022:tech:xsd:"
)

// Bounds of a document.
const (
	// BytesMax is the largest document read (spec §16.3: 10 MiB).
	BytesMax = 10 << 20
	// DepthMax bounds element nesting: a camt entry's deepest element
	// Oja could meet is some 20 levels down.
	DepthMax = 48
	// EntriesMax bounds the entries of one document.
	EntriesMax = 100_000
)

// Document is a parsed camt.053 or camt.054 message.
type Document struct {
	Message  string // Statement or Notification
	ID       string // GrpHdr/MsgId
	Accounts []Account
}

// Account is one Stmt (camt.053) or Ntfctn (camt.054): the account it
// reports and its entries, in document order.
type Account struct {
	ID       string // Acct/Id/IBAN, else Acct/Id/Othr/Id
	Currency string // Acct/Ccy, when given
	Entries  []Entry
}

// Entry is one Ntry.
type Entry struct {
	// Number is the entry's position in the document, from 1: how a
	// report names it.
	Number int
	// Ref is the entry's bank reference: AcctSvcrRef, else NtryRef, else
	// its only transaction's AcctSvcrRef; "" when it has none.
	Ref      string
	Amount   string // Amt, as written (a decimal)
	Currency string // Amt/@Ccy
	Credit   bool   // CdtDbtInd CRDT
	Booked   bool   // Sts/Cd BOOK
	// Remittance is every RmtInf/Ustrd of its transactions, then its
	// AddtlNtryInf, joined by spaces.
	Remittance string
	// Debtor is the first transaction's debtor's name (RltdPties/Dbtr).
	Debtor string
}

// ErrDocument wraps every refusal.
var ErrDocument = errors.New("camt")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDocument, fmt.Sprintf(format, args...))
}

// Parse reads a camt.053.001.08 or camt.054.001.08 document.
func Parse(b []byte) (*Document, error) {
	if len(b) > BytesMax {
		return nil, refuse("the document is %d bytes, over the %d bytes allowed", len(b), BytesMax)
	}
	ns, err := inspect(b)
	if err != nil {
		return nil, err
	}
	message, ok := strings.CutPrefix(ns, nsPrefix)
	if !ok || (message != Statement && message != Notification) {
		return nil, refuse("the document's namespace is %q: only %s%s and %s%s are read", ns, nsPrefix, Statement, nsPrefix, Notification)
	}
	var raw xmlDocument
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&raw); err != nil {
		return nil, refuse("not a well-formed %s document: %v", message, err)
	}
	doc := &Document{Message: message}
	var reports []xmlReport
	switch message {
	case Statement:
		if raw.Stmt == nil {
			return nil, refuse("a %s document without BkToCstmrStmt", message)
		}
		doc.ID, reports = strings.TrimSpace(raw.Stmt.GrpHdr.MsgID), raw.Stmt.Stmts
	case Notification:
		if raw.Ntfctn == nil {
			return nil, refuse("a %s document without BkToCstmrDbtCdtNtfctn", message)
		}
		doc.ID, reports = strings.TrimSpace(raw.Ntfctn.GrpHdr.MsgID), raw.Ntfctn.Ntfctns
	}
	if len(reports) == 0 {
		return nil, refuse("the document reports no account")
	}
	n := 0
	for i, r := range reports {
		a := Account{ID: strings.TrimSpace(r.Acct.ID.IBAN), Currency: strings.TrimSpace(r.Acct.Ccy)}
		if a.ID == "" {
			a.ID = strings.TrimSpace(r.Acct.ID.Othr.ID)
		}
		if a.ID == "" {
			return nil, refuse("account report %d names no account (Acct/Id/IBAN or Acct/Id/Othr/Id)", i+1)
		}
		for _, e := range r.Entries {
			n++
			if n > EntriesMax {
				return nil, refuse("more than %d entries", EntriesMax)
			}
			a.Entries = append(a.Entries, e.entry(n))
		}
		doc.Accounts = append(doc.Accounts, a)
	}
	return doc, nil
}

// inspect checks the document's shape before it is decoded — one root
// element, no DTD or other directive, nesting within DepthMax — and
// returns the root's namespace.
func inspect(b []byte) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	depth, root := 0, ""
	for {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", refuse("not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return "", refuse("a DTD or other directive (<!%s…>) is not allowed", firstWord(t))
		case xml.ProcInst:
			if t.Target != "xml" {
				return "", refuse("a processing instruction <?%s?> is not allowed", t.Target)
			}
		case xml.StartElement:
			if depth == 0 {
				if root != "" {
					return "", refuse("more than one root element")
				}
				if t.Name.Local != "Document" {
					return "", refuse("the root element is <%s>, not <Document>", t.Name.Local)
				}
				for _, a := range t.Attr {
					if a.Name.Space == "" && a.Name.Local == "xmlns" {
						root = a.Value
					}
				}
				if root == "" {
					return "", refuse("the root element has no namespace")
				}
			}
			if depth++; depth > DepthMax {
				return "", refuse("elements nested more than %d deep", DepthMax)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return "", refuse("text outside the root element")
			}
		}
	}
	switch {
	case root == "":
		return "", refuse("no root element")
	case depth != 0:
		return "", refuse("not well-formed XML: %d elements left open", depth)
	}
	return root, nil
}

func firstWord(d xml.Directive) string {
	w, _, _ := strings.Cut(strings.TrimSpace(string(d)), " ")
	if len(w) > 16 {
		w = w[:16]
	}
	return w
}

// The elements read, by local name (the namespace is checked once, at
// the root).
type (
	xmlDocument struct {
		Stmt   *xmlMessage `xml:"BkToCstmrStmt"`
		Ntfctn *xmlMessage `xml:"BkToCstmrDbtCdtNtfctn"`
	}
	xmlMessage struct {
		GrpHdr struct {
			MsgID string `xml:"MsgId"`
		} `xml:"GrpHdr"`
		// A camt.053's Stmt or a camt.054's Ntfctn: the same shape for
		// what is read here.
		Stmts   []xmlReport `xml:"Stmt"`
		Ntfctns []xmlReport `xml:"Ntfctn"`
	}
	xmlReport struct {
		Acct struct {
			ID struct {
				IBAN string `xml:"IBAN"`
				Othr struct {
					ID string `xml:"Id"`
				} `xml:"Othr"`
			} `xml:"Id"`
			Ccy string `xml:"Ccy"`
		} `xml:"Acct"`
		Entries []xmlEntry `xml:"Ntry"`
	}
	xmlEntry struct {
		NtryRef string `xml:"NtryRef"`
		Amt     struct {
			Value string `xml:",chardata"`
			Ccy   string `xml:"Ccy,attr"`
		} `xml:"Amt"`
		CdtDbtInd string `xml:"CdtDbtInd"`
		Sts       struct {
			Cd string `xml:"Cd"`
		} `xml:"Sts"`
		AcctSvcrRef string `xml:"AcctSvcrRef"`
		NtryDtls    []struct {
			TxDtls []struct {
				Refs struct {
					AcctSvcrRef string `xml:"AcctSvcrRef"`
				} `xml:"Refs"`
				RltdPties struct {
					Dbtr struct {
						Pty struct {
							Nm string `xml:"Nm"`
						} `xml:"Pty"`
					} `xml:"Dbtr"`
				} `xml:"RltdPties"`
				RmtInf struct {
					Ustrd []string `xml:"Ustrd"`
				} `xml:"RmtInf"`
			} `xml:"TxDtls"`
		} `xml:"NtryDtls"`
		AddtlNtryInf string `xml:"AddtlNtryInf"`
	}
)

func (e *xmlEntry) entry(n int) Entry {
	out := Entry{Number: n, Amount: strings.TrimSpace(e.Amt.Value), Currency: strings.TrimSpace(e.Amt.Ccy),
		Credit: strings.TrimSpace(e.CdtDbtInd) == "CRDT", Booked: strings.TrimSpace(e.Sts.Cd) == "BOOK"}
	var texts []string
	var txRefs []string
	for _, d := range e.NtryDtls {
		for _, tx := range d.TxDtls {
			for _, u := range tx.RmtInf.Ustrd {
				if u = strings.TrimSpace(u); u != "" {
					texts = append(texts, u)
				}
			}
			if out.Debtor == "" {
				out.Debtor = strings.TrimSpace(tx.RltdPties.Dbtr.Pty.Nm)
			}
			if r := strings.TrimSpace(tx.Refs.AcctSvcrRef); r != "" {
				txRefs = append(txRefs, r)
			}
		}
	}
	if s := strings.TrimSpace(e.AddtlNtryInf); s != "" {
		texts = append(texts, s)
	}
	out.Remittance = strings.Join(texts, " ")
	switch {
	case strings.TrimSpace(e.AcctSvcrRef) != "":
		out.Ref = strings.TrimSpace(e.AcctSvcrRef)
	case strings.TrimSpace(e.NtryRef) != "":
		out.Ref = strings.TrimSpace(e.NtryRef)
	case len(txRefs) == 1:
		out.Ref = txRefs[0]
	}
	return out
}
