package gateway

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/camt"
)

// Bank statements (spec §16.3): POST /admin/v1/payins/bank/statements
// takes a bank's camt.053.001.08 statement or camt.054.001.08 credit
// notification (application/xml, at most camt.BytesMax). Each booked
// credit entry on a collection account (its Acct/Id/IBAN or Othr/Id is a
// collection accountNumber: a live one, or a sandbox one for sandbox) is
// one payment, its identity the entry's AcctSvcrRef (else NtryRef) as a
// bankTransactionId. One whose remittance text names an open quote of
// that mode and currency by its reference (any case, with or without the
// hyphen) credits that quote's client as POST /admin/v1/payins/bank does;
// any other is held in suspense, an unapplied receipt (GET
// /admin/v1/payins/unapplied), which an operator applies to a quote or a
// client's wallet or returns. Debits and entries not booked are ignored;
// an entry whose identity was recorded before is a duplicate and changes
// nothing, so the same file, or an overlapping one, imports once.
//
// Every entry is checked before anything is recorded: a document that is
// not one of the two messages, or an entry without a reference, with an
// unknown currency or an amount the currency cannot hold, is refused (400,
// naming it) and nothing of it is applied. The entries are then recorded
// one by one, each durable before the next; an import cut short (a crash,
// a storage fault: 503) is finished by sending the file again.
//
// The answer: {entries, applied, unapplied, duplicates, ignored,
// unappliedReceipts: [the receipts this import held in suspense],
// conflicts: [entries whose bank id was recorded before as another
// payment]}.

const (
	statementsPath = adminBase + "/payins/bank/statements"
	unappliedPath  = adminBase + "/payins/unapplied"
)

// largeBody reports whether the request may carry a body over
// bodyBytesMax: a bank statement (its route, and the console's form).
func largeBody(ctx *fasthttp.RequestCtx) bool {
	p := ctx.Path()
	return ctx.IsPost() && (bytes.Equal(p, []byte(statementsPath)) || bytes.Equal(p, []byte(consoleStatementsPath)))
}

// requireXML refuses request bodies that are not application/xml (or
// text/xml, its synonym).
func requireXML(ctx *fasthttp.RequestCtx) bool {
	ct := ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	return bytes.EqualFold(ct, []byte("application/xml")) || bytes.EqualFold(ct, []byte("text/xml"))
}

var errMediaXMLStatement = &apiError{status: fasthttp.StatusUnsupportedMediaType, code: codeUnsupportedMedia,
	message: "Content-Type must be application/xml: an ISO 20022 camt.053.001.08 or camt.054.001.08 document"}

func (s *Server) importStatement(ctx *fasthttp.RequestCtx) {
	if !requireXML(ctx) {
		s.writeError(ctx, errMediaXMLStatement)
		return
	}
	svc, ok := s.system(ctx)
	if !ok {
		return
	}
	report, e := s.importDocument(svc, ctx.PostBody(), func() *engine.OperatorActed { return s.auditLine(ctx, fasthttp.StatusOK) },
		func(err error) *apiError { return s.operatingRefusal(ctx, err) })
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, report.appendJSON(nil))
}

// importReport is what an import did.
type importReport struct {
	entries, applied, unapplied, duplicates, ignored int
	held                                             []engine.UnappliedReceipt
	conflicts                                        []importConflict
}

// importConflict is an entry whose bank id names another payment.
type importConflict struct {
	entry   int
	payment engine.Payment
}

// plannedEntry is a checked credit entry, ready to record.
type plannedEntry struct {
	camt.Entry
	mode     engine.Mode
	currency engine.Currency
	amount   engine.Amount
	identity engine.Identity
}

// importDocument checks every entry of doc, then records them in order
// (audit makes each write's audit line); it answers a refusal, with
// nothing recorded, or what it did.
func (s *Server) importDocument(svc services, body []byte, audit func() *engine.OperatorActed, refusal func(error) *apiError) (*importReport, *apiError) {
	doc, err := camt.Parse(body)
	if err != nil {
		return nil, statementError("document", strings.TrimPrefix(err.Error(), "camt: "))
	}
	plan, report, e := planImport(svc.market.Markets(), doc)
	if e != nil {
		return nil, e
	}
	for _, p := range plan {
		if prior, ok := svc.money.Payment(p.identity); ok {
			report.duplicate(p, prior)
			continue
		}
		var o outcome
		if q := openQuoteOf(svc.quotes, p); q != nil {
			reply := svc.money.RecordBankReceipt(p.mode, q.Reference.String(), p.amount, p.identity, audit())
			o = outcome{err: reply.Err, result: reply.Result, prior: reply.Receipt, repeated: reply.Repeated}
			if o.counts(report, p, refusal) {
				report.applied++
			}
		} else {
			reply := svc.money.RecordUnapplied(p.mode, engine.UnappliedReceipt{Currency: p.currency, Amount: p.amount, Identity: p.identity,
				Remittance: cutUTF8(p.Remittance, engine.RemittanceBytesMax), Debtor: cutUTF8(p.Debtor, engine.DebtorBytesMax)}, audit())
			o = outcome{err: reply.Err, result: reply.Result, prior: reply.Payment, repeated: reply.Repeated}
			if o.counts(report, p, refusal) {
				report.unapplied++
				report.held = append(report.held, *reply.Unapplied)
			}
		}
		if o.refused != nil {
			return nil, o.refused
		}
	}
	return report, nil
}

// outcome is what recording an entry answered.
type outcome struct {
	err      error
	result   engine.Result
	prior    *engine.Payment // on a conflict or a repeat: the payment recorded first
	repeated bool
	refused  *apiError
}

// counts tallies a repeat or a conflict as a duplicate, keeps a failure
// (which stops the import) in refused, and reports whether the entry was
// recorded now.
func (o *outcome) counts(r *importReport, p plannedEntry, refusal func(error) *apiError) bool {
	switch {
	case o.err != nil:
		o.refused = refusal(o.err)
	case o.result == engine.ResultReceiptConflict && o.prior != nil:
		r.duplicate(p, *o.prior)
	case o.result != engine.ResultOK:
		o.refused = resultError(o.result)
	case o.repeated:
		r.duplicates++
	default:
		return true
	}
	return false
}

// duplicate counts an entry whose bank id was recorded before: the same
// money (a repeat), or another payment (a conflict, listed).
func (r *importReport) duplicate(p plannedEntry, prior engine.Payment) {
	r.duplicates++
	if prior.Amount != p.amount || prior.Mode != p.mode || prior.Currency != p.currency {
		r.conflicts = append(r.conflicts, importConflict{entry: p.Number, payment: prior})
	}
}

// planImport checks every entry of doc against the markets: the accounts
// it reports must include a collection account; each booked credit entry
// on one needs a bank reference, a fiat currency of the markets and an
// amount that currency holds exactly.
func planImport(m *engine.Markets, doc *camt.Document) ([]plannedEntry, *importReport, *apiError) {
	report := &importReport{}
	var plan []plannedEntry
	var seen []string
	matched := false
	for _, a := range doc.Accounts {
		seen = append(seen, a.ID)
		mode, ok := collectionMode(m, a.ID)
		report.entries += len(a.Entries)
		if !ok {
			report.ignored += len(a.Entries)
			continue
		}
		matched = true
		for _, e := range a.Entries {
			if !e.Credit || !e.Booked {
				report.ignored++
				continue
			}
			where := "entry " + strconv.Itoa(e.Number)
			if e.Ref == "" {
				return nil, nil, statementError(where, "has no AcctSvcrRef or NtryRef: it cannot be imported once only")
			}
			c, ok := m.CurrencyByCode(e.Currency)
			if !ok || c.IsToken() {
				return nil, nil, statementError(where, fmt.Sprintf("currency %q is not a fiat currency of the markets", e.Currency))
			}
			d, err := decimal.NewFromString(e.Amount)
			if err != nil {
				return nil, nil, statementError(where, fmt.Sprintf("amount %q is not a decimal number", e.Amount))
			}
			amount, err := engine.AmountFromDecimal(d, c)
			if err != nil || amount <= 0 {
				return nil, nil, statementError(where, fmt.Sprintf("amount %s %s is not a positive amount in %d decimal places", e.Amount, e.Currency, c.MinorUnits()))
			}
			id, err := engine.InboundIdentity(c, e.Ref)
			if err != nil {
				return nil, nil, statementError(where, fmt.Sprintf("bank reference %q: %v", e.Ref, err))
			}
			plan = append(plan, plannedEntry{Entry: e, mode: mode, currency: c, amount: amount, identity: id})
		}
	}
	if !matched {
		return nil, nil, statementError("document", "reports no collection account of the markets (it reports "+strings.Join(seen, ", ")+")")
	}
	return plan, report, nil
}

// collectionMode is the mode whose collection account id is: a live
// collection account's number, or a sandbox one's.
func collectionMode(m *engine.Markets, id string) (engine.Mode, bool) {
	id = strings.Join(strings.Fields(id), "")
	for _, mode := range engine.Modes {
		for _, c := range m.CurrencyList() {
			if a, ok := m.CollectionAccount(mode, c); ok && strings.Join(strings.Fields(a.AccountNumber), "") == id && id != "" {
				if mode == engine.ModeSandbox && a == engine.SandboxCollectionDefault {
					continue // the placeholder every sandbox quote shows: no real account
				}
				return mode, true
			}
		}
	}
	return 0, false
}

// quoteReference finds quote references in remittance text, in any case,
// with or without the hyphen: OJA- and ten characters of the references'
// alphabet.
var quoteReference = regexp.MustCompile(`(?i)\bOJA[-_ ]?([0-9A-HJKMNP-TV-Z]{10})\b`)

// openQuoteOf is the open quote (pending or awaiting payment) of p's mode
// and source currency that p's remittance text names, nil if none does.
func openQuoteOf(quotes quoteService, p plannedEntry) *engine.Quote {
	for _, m := range quoteReference.FindAllStringSubmatch(p.Remittance, -1) {
		q, ok := quotes.QuoteByReference(p.mode, "OJA-"+strings.ToUpper(m[1]))
		if ok && q.Pair.Source == p.currency && (q.Status == engine.StatusPending || q.Status == engine.StatusAwaitingPayment) {
			return q
		}
	}
	return nil
}

// statementError is a refused document: 400 naming what.
func statementError(where, problem string) *apiError {
	return &apiError{status: fasthttp.StatusBadRequest, code: codeValidation, message: "statement refused (" + where + "): " + problem,
		details: map[string]any{where: problem}}
}

func (r *importReport) appendJSON(b []byte) []byte {
	w := jsonWriter{b: b}
	w.open("")
	w.integer("entries", int64(r.entries))
	w.integer("applied", int64(r.applied))
	w.integer("unapplied", int64(r.unapplied))
	w.integer("duplicates", int64(r.duplicates))
	w.integer("ignored", int64(r.ignored))
	w.openArray("unappliedReceipts")
	for i := range r.held {
		appendUnapplied(&w, "", &r.held[i])
	}
	w.closeArray()
	w.openArray("conflicts")
	for _, c := range r.conflicts {
		w.open("")
		w.integer("entry", int64(c.entry))
		w.str("bankTransactionId", c.payment.Identity.Text())
		w.str("recordedAs", c.payment.Kind.String())
		w.str("mode", c.payment.Mode.String())
		w.amount("amount", c.payment.Amount, c.payment.Currency)
		w.str("currency", c.payment.Currency.String())
		w.close()
	}
	w.closeArray()
	w.close()
	return w.b
}

// appendUnapplied writes an unapplied receipt as an object.
func appendUnapplied(w *jsonWriter, k string, u *engine.UnappliedReceipt) {
	w.open(k)
	w.id("unappliedId", u.ID)
	w.str("mode", u.Mode.String())
	w.str("currency", u.Currency.String())
	w.amount("amount", u.Amount, u.Currency)
	w.str("bankTransactionId", u.Identity.Text())
	w.str("remittance", u.Remittance)
	if u.Debtor != "" {
		w.str("debtorName", u.Debtor)
	}
	w.time("createdAt", u.At)
	w.close()
}

// Bounds of GET /admin/v1/payins/unapplied.
const (
	unappliedLimitDefault = 50
	unappliedLimitMax     = 500
)

// listUnapplied is GET /admin/v1/payins/unapplied?mode=&limit=&startingAfter=:
// the receipts held in suspense, newest first (both modes unless mode).
func (s *Server) listUnapplied(ctx *fasthttp.RequestCtx, svc services) {
	args := ctx.QueryArgs()
	modes := engine.Modes[:]
	if raw := args.Peek("mode"); raw != nil {
		m, ok := engine.ParseMode(string(raw))
		if !ok {
			s.writeError(ctx, fieldError("mode", `must be "live" or "sandbox"`))
			return
		}
		modes = []engine.Mode{m}
	}
	limit, e := queryLimit(ctx, unappliedLimitDefault, unappliedLimitMax)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	var all []engine.UnappliedReceipt
	for _, m := range modes {
		all = append(all, svc.money.UnappliedList(m)...)
	}
	sortUnapplied(all)
	if raw := args.Peek("startingAfter"); raw != nil {
		id, ok := engine.ParseUUID(string(raw))
		i := -1
		if ok {
			for j := range all {
				if all[j].ID == engine.UnappliedID(id) {
					i = j
				}
			}
		}
		if i < 0 {
			s.writeError(ctx, fieldError("startingAfter", "must be the unappliedId of a receipt held"))
			return
		}
		all = all[i+1:]
	}
	more := len(all) > limit
	all = all[:min(len(all), limit)]
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for i := range all {
			appendUnapplied(w, "", &all[i])
		}
		w.closeArray()
		w.boolean("hasMore", more)
	})
}

// optionalID reads an optional member holding a UUID.
func optionalID(o *object, member string) ([16]byte, bool) {
	raw, ok := o.str(member, false, idBytesMax)
	if !ok {
		return [16]byte{}, false
	}
	id, valid := engine.ParseUUID(raw)
	if !valid {
		o.problem(member, "must be a UUID")
	}
	return id, true
}

// walletOf is client's wallet of mode m in currency c.
func walletOf(directory directoryService, client engine.ClientID, m engine.Mode, c engine.Currency) (engine.AccountID, bool) {
	cl, ok := directory.Client(client)
	if !ok {
		return engine.AccountID{}, false
	}
	return cl.Wallet(m, c)
}

// queryLimit reads a listing's limit query parameter: 1 to max, def when
// absent.
func queryLimit(ctx *fasthttp.RequestCtx, def, max int) (int, *apiError) {
	raw := ctx.QueryArgs().Peek("limit")
	if raw == nil {
		return def, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 1 || n > max {
		return 0, fieldError("limit", fmt.Sprintf("must be an integer from 1 to %d", max))
	}
	return n, nil
}

// sortUnapplied orders receipts held newest first (then by id).
func sortUnapplied(list []engine.UnappliedReceipt) {
	slices.SortFunc(list, func(a, b engine.UnappliedReceipt) int {
		if a.At != b.At {
			if a.At > b.At {
				return -1
			}
			return 1
		}
		return bytes.Compare(b.ID[:], a.ID[:])
	})
}

// applyUnapplied is POST /admin/v1/payins/unapplied/{unappliedId}/apply
// {quoteId} or {clientId, mode}: the money credits that quote's client's
// wallet (a receipt of the quote) or that client's wallet of the mode, in
// the receipt's currency; the answer is the receipt it became.
var applyUnapplied = adminOp[*actors.UnappliedReply]{body: true, do: doApplyUnapplied,
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, reply *actors.UnappliedReply) {
		w := jsonWriter{}
		appendReceipt(&w, "", reply.Payment, false)
		s.writeJSON(ctx, fasthttp.StatusOK, w.b)
	},
}

func doApplyUnapplied(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*actors.UnappliedReply, *apiError) {
	raw, e := pathID(ctx, "unappliedId")
	if e != nil {
		return nil, e
	}
	quoteID, hasQuote := optionalID(o, "quoteId")
	clientID, hasClient := optionalID(o, "clientId")
	var mode engine.Mode
	if m, ok := o.str("mode", false, enumBytesMax); ok {
		if mode, ok = engine.ParseMode(m); !ok {
			o.problem("mode", `must be "live" or "sandbox"`)
		}
	} else if hasClient {
		o.problem("mode", "is required with clientId")
	}
	if hasQuote == hasClient {
		o.problem("quoteId", "give quoteId, or clientId and mode")
	}
	if e := o.finish(); e != nil {
		return nil, e
	}
	u, ok := svc.money.Unapplied(engine.UnappliedID(raw))
	if !ok {
		return nil, resultError(engine.ResultUnappliedNotFound)
	}
	req := engine.SettleRequest{Unapplied: u.ID}
	if hasQuote {
		q, ok := svc.quotes.AnyQuote(engine.QuoteID(quoteID))
		if !ok || q.Mode != u.Mode {
			return nil, resultError(engine.ResultQuoteNotFound)
		}
		if q.Pair.Source != u.Currency {
			return nil, fieldError("quoteId", "the quote's source currency is "+q.Pair.Source.String()+", the receipt's "+u.Currency.String())
		}
		clientID, mode, req.Quote = q.Client, q.Mode, q.ID
	}
	if mode != u.Mode {
		return nil, fieldError("mode", "the receipt is held in "+u.Mode.String())
	}
	wallet, ok := walletOf(svc.directory, engine.ClientID(clientID), mode, u.Currency)
	if !ok {
		return nil, resultError(engine.ResultClientNotFound)
	}
	req.Wallet = wallet
	reply := svc.money.SettleUnapplied(req, s.auditLine(ctx, fasthttp.StatusOK))
	return reply, s.adminRefusal(ctx, reply.Err, reply.Result)
}

// returnUnapplied is POST /admin/v1/payins/unapplied/{unappliedId}/return
// {reference}: the money goes back to its sender; reference is the return
// transfer's (an outbound identity, as a payout's).
var returnUnapplied = adminOp[unappliedReturned]{body: true, do: doReturnUnapplied,
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, r unappliedReturned) {
		u := r.unapplied
		s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
			w.id("unappliedId", u.ID)
			w.str("mode", u.Mode.String())
			w.str("currency", u.Currency.String())
			w.amount("amount", u.Amount, u.Currency)
			w.str("bankTransactionId", u.Identity.Text())
			w.str("returnReference", r.back.Text())
			w.time("returnedAt", r.reply.Payment.ReversedAt)
		})
	},
}

// unappliedReturned is money returned to its sender: what was held, the
// return transfer's identity, and the treasury's reply.
type unappliedReturned struct {
	unapplied engine.UnappliedReceipt
	back      engine.Identity
	reply     *actors.UnappliedReply
}

func doReturnUnapplied(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (unappliedReturned, *apiError) {
	raw, e := pathID(ctx, "unappliedId")
	if e != nil {
		return unappliedReturned{}, e
	}
	ref, refOK := o.str("reference", true, referenceBytesMax)
	if refOK {
		if _, err := engine.CanonicalReference(ref); err != nil {
			o.problem("reference", err.Error())
		}
	}
	if e := o.finish(); e != nil {
		return unappliedReturned{}, e
	}
	u, ok := svc.money.Unapplied(engine.UnappliedID(raw))
	if !ok {
		return unappliedReturned{}, resultError(engine.ResultUnappliedNotFound)
	}
	back, _ := engine.OutboundIdentity(u.Currency, ref)
	reply := svc.money.SettleUnapplied(engine.SettleRequest{Unapplied: u.ID, Return: back}, s.auditLine(ctx, fasthttp.StatusOK))
	return unappliedReturned{u, back, reply}, s.adminRefusal(ctx, reply.Err, reply.Result)
}

// cutUTF8 cuts s to at most n bytes, on a UTF-8 boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// consoleStatementsPath is the console's import: a file upload (the
// form's field "statement"), imported as the API imports it.
const consoleStatementsPath = consoleBase + "/payins/statements"

// consoleImportStatement is POST /console/payins/statements: an import,
// its outcome shown on the Pay-ins page.
func (ui *consoleUI) consoleImportStatement(r *consoleRequest) {
	mode := string(r.ctx.FormValue("mode"))
	back := consoleBase + "/payins?mode=" + mode
	fh, err := r.ctx.FormFile("statement")
	if err != nil {
		ui.done(r, back, "Choose a statement file (camt.053 or camt.054 XML) to import.", true)
		return
	}
	if fh.Size > camt.BytesMax {
		ui.done(r, back, fmt.Sprintf("The file is %d bytes, over the %d allowed.", fh.Size, camt.BytesMax), true)
		return
	}
	f, err := fh.Open()
	if err != nil {
		ui.done(r, back, "The file could not be read.", true)
		return
	}
	defer f.Close()
	body := make([]byte, fh.Size)
	if _, err := io.ReadFull(f, body); err != nil {
		ui.done(r, back, "The file could not be read.", true)
		return
	}
	startAudit(r.ctx, r.op)
	report, e := ui.s.importDocument(r.svc, body, func() *engine.OperatorActed { return ui.s.auditLine(r.ctx, fasthttp.StatusOK) },
		func(err error) *apiError { return ui.s.operatingRefusal(r.ctx, err) })
	if e != nil {
		ui.done(r, back, "Not imported: "+e.message, true)
		return
	}
	msg := fmt.Sprintf("Imported %s: %d entries — %d applied, %d unapplied (held in suspense), %d duplicates, %d ignored.",
		fh.Filename, report.entries, report.applied, report.unapplied, report.duplicates, report.ignored)
	if len(report.conflicts) > 0 {
		msg += fmt.Sprintf(" %d entries name a bank id recorded before as another payment: check them.", len(report.conflicts))
	}
	ui.done(r, back, msg, len(report.conflicts) > 0)
}

// consoleSettleUnapplied is POST /console/payins/unapplied/{unappliedId}/{action}:
// apply (to a quote, or a client's wallet) or return, through the API's
// handlers.
func (ui *consoleUI) consoleSettleUnapplied(r *consoleRequest) {
	f := r.ctx.PostArgs()
	mode := string(f.Peek("mode"))
	back := consoleBase + "/payins?mode=" + mode
	var msg string
	var ok bool
	switch action, _ := r.ctx.UserValue("action").(string); action {
	case "apply":
		members := []formMember{}
		if q := strings.TrimSpace(string(f.Peek("quoteId"))); q != "" {
			members = append(members, formMember{name: "quoteId", value: q})
		} else {
			members = append(members, formMember{name: "clientId", value: strings.TrimSpace(string(f.Peek("clientId")))},
				formMember{name: "mode", value: mode})
		}
		_, msg, ok = consoleWrite(ui.s, r, applyUnapplied, members...)
		if ok {
			msg = "Applied: the money is credited as a receipt."
		}
	case "return":
		_, msg, ok = consoleWrite(ui.s, r, returnUnapplied, formMember{name: "reference", value: string(f.Peek("reference"))})
		if ok {
			msg = "Returned under " + strings.TrimSpace(string(f.Peek("reference"))) + "."
		}
	default:
		ui.s.writeError(r.ctx, errNotFound)
		return
	}
	ui.done(r, back, msg, !ok)
}
