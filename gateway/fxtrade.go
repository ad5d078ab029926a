package gateway

import (
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
)

// Trade operations of the XML FX API (spec §7, rows 1–7). Each one is
// the JSON quote operation of the same name with XML in and out: same
// checks in the same order, same service call, same refusals.

// fxInitiate is row 1: POST /trades with FXTradInstr → FXTradInstrRspn NEWT.
func (s *Server) fxInitiate(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	if !fxRequireXML(ctx) {
		s.writeFXError(ctx, errMediaXML)
		return
	}
	cmd, e := createCommand(ctx, svc.market.Markets(), who, engine.ChannelXML, parseFXTradInstr)
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	reply := svc.quotes.CreateQuote(cmd)
	if s.fxQuoteFailed(ctx, reply, cmd) {
		return
	}
	now := svc.market.Now().UnixMilli()
	if reply.Replayed {
		now = reply.Quote.CreatedAt
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
	}
	markFenced(ctx, reply.Durable)
	s.writeXML(ctx, fasthttp.StatusOK, s.fxInstructionResponse(reply.Quote, now))
}

// fxStatus is row 2: GET /trades/{id} → FXTradStsAndDtlsNtfctn.
func (s *Server) fxStatus(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, e := quoteID(ctx)
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	q, ok := svc.quotes.Quote(who.Client, who.Mode, id)
	if !ok {
		s.writeFXError(ctx, resultError(engine.ResultQuoteNotFound))
		return
	}
	now := svc.market.Now().UnixMilli()
	dstn, acct := fxSettlement(q)
	s.writeXML(ctx, fasthttp.StatusOK, &fxmsg.FXTradStsAndDtlsNtfctn{
		UnqTxIdr: fxmsg.TransactionIdentifier{TxId: q.ID.String()},
		TradSts:  fxTradeStatus(q.Status),
		CcyPair:  fxCurrencyPair(q.Pair),
		XchgRate: fxRate(q.WeightedAverageRate()),
		TradAmts: fxmsg.TradeAmounts{
			TradgCcyAmt:   fxAmount(q.Amount, fxAmountCurrency(q)),
			CntrValCcyAmt: fxAmount(q.TotalSource(), q.Pair.Source),
		},
		SttlmInstr: fxPayIn(s.markets(), q, s.received(q)),
		SttlmDstn:  dstn,
		AcctId:     acct,
		TTL:        q.SecondsLeft(now),
		OprgMd:     q.Mode.String(),
	})
}

// fxSettlement is where an accepted trade pays out, as its acceptance
// named it (FXTradAccptReq's SttlmDstn or AcctId).
func fxSettlement(q *engine.Quote) (*fxmsg.SettlementDestination, *string) {
	st := q.SettlementOrZero()
	switch st.Kind {
	case engine.SettlementWallet:
		id := st.Account.String()
		return nil, &id
	case engine.SettlementBank:
		return &fxmsg.SettlementDestination{BkDstn: &fxmsg.BankDestination{
			AcctNm: &st.AccountName, AcctNb: &st.AccountNumber, BkCd: &st.BankCode}}, nil
	case engine.SettlementChain:
		return &fxmsg.SettlementDestination{BlkChnDstn: &fxmsg.BlockchainDestination{Adr: &st.Address}}, nil
	}
	return nil, nil
}

// fxCancel is row 3: PUT /trades/{id}/cancellation → FXTradCxlRspn CANC.
func (s *Server) fxCancel(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, ok := s.fxTransition(ctx, svc.quotes, who, &actors.TransitionQuote{Operation: actors.OperationCancel})
	if !ok {
		return
	}
	s.writeXML(ctx, fasthttp.StatusOK, &fxmsg.FXTradCxlRspn{
		UnqTxIdr: fxmsg.TransactionIdentifier{TxId: q.ID.String()},
		TradSts:  fxTradeStatus(q.Status),
		CcyPair:  fxCurrencyPair(q.Pair),
		XchgRate: fxRate(q.WeightedAverageRate()),
		TTL:      q.SecondsLeft(svc.market.Now().UnixMilli()),
		OprgMd:   q.Mode.String(),
	})
}

// fxConfirm is row 4: POST /trades/{id}/confirmation (= complete) →
// FXTradConfStsAdvc COMP with the pay-in details.
func (s *Server) fxConfirm(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, ok := s.fxTransition(ctx, svc.quotes, who, &actors.TransitionQuote{Operation: actors.OperationComplete})
	if !ok {
		return
	}
	s.writeXML(ctx, fasthttp.StatusOK, &fxmsg.FXTradConfStsAdvc{
		UnqTxIdr:   fxmsg.TransactionIdentifier{TxId: q.ID.String()},
		TradSts:    fxTradeStatus(q.Status),
		CcyPair:    fxCurrencyPair(q.Pair),
		XchgRate:   fxRate(q.WeightedAverageRate()),
		SttlmInstr: fxPayIn(s.markets(), q, s.received(q)),
		TTL:        q.SecondsLeft(svc.market.Now().UnixMilli()),
		OprgMd:     q.Mode.String(),
	})
}

// fxTransition runs a body-less transition (cancel, complete) and returns
// the quote after it, or answers the refusal.
func (s *Server) fxTransition(ctx *fasthttp.RequestCtx, quotes quoteService, who actors.Principal, cmd *actors.TransitionQuote) (*engine.Quote, bool) {
	id, e := quoteID(ctx)
	if e != nil {
		s.writeFXError(ctx, e)
		return nil, false
	}
	if len(ctx.PostBody()) > 0 && !fxRequireXML(ctx) {
		s.writeFXError(ctx, errMediaXML)
		return nil, false
	}
	reply := quotes.TransitionQuote(who.Client, who.Mode, id, cmd)
	if s.fxQuoteFailed(ctx, reply, nil) {
		return nil, false
	}
	return reply.Quote, true
}

// fxAccept is rows 5–7: POST /trades/{id}/accept with FXTradAccptReq →
// FXTradInstrRspn SETT. The body's shape chooses the settlement: a bank
// payout (fiat destinations), the partner's own wallet, or a chain payout
// (token destinations).
func (s *Server) fxAccept(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, e := quoteID(ctx)
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	if !fxRequireXML(ctx) {
		s.writeFXError(ctx, errMediaXML)
		return
	}
	settlement, e := parseFXTradAccptReq(ctx.PostBody())
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	q, found := svc.quotes.Quote(who.Client, who.Mode, id)
	if !found {
		s.writeFXError(ctx, resultError(engine.ResultQuoteNotFound))
		return
	}
	if e := fxCheckSettlement(svc.directory, who, q, settlement); e != nil {
		s.writeFXError(ctx, e)
		return
	}
	reply := svc.quotes.TransitionQuote(who.Client, who.Mode, id, &actors.TransitionQuote{
		Operation: actors.OperationAccept,
		Accept:    engine.AcceptQuote{Settlement: settlement},
	})
	if s.fxQuoteFailed(ctx, reply, nil) {
		return
	}
	s.writeXML(ctx, fasthttp.StatusOK, s.fxInstructionResponse(reply.Quote, svc.market.Now().UnixMilli()))
}

// ---- Rendering -----------------------------------------------------------------

// fxInstructionResponse is the FXTradInstrRspn of q as of time now.
func (s *Server) fxInstructionResponse(q *engine.Quote, now int64) *fxmsg.FXTradInstrRspn {
	total := fxAmount(q.TotalDestination(), q.Pair.Destination)
	rate := fxRate(q.WeightedAverageRate())
	return &fxmsg.FXTradInstrRspn{
		UnqTxIdr: fxmsg.TransactionIdentifier{TxId: q.ID.String()},
		TradSts:  fxTradeStatus(q.Status),
		CcyPair:  fxCurrencyPair(q.Pair),
		XchgRate: rate,
		TradAmts: fxmsg.TradeAmounts{
			TradgCcyAmt:   fxAmount(q.Amount, fxAmountCurrency(q)),
			SttlmCcyAmt:   &total,
			CntrValCcyAmt: fxAmount(q.TotalSource(), q.Pair.Source),
		},
		AllcnDtls:  fxmsg.AllocationDetails{TtlSttlmAmt: total, WtdAvrgRate: rate},
		SttlmInstr: fxPayIn(s.markets(), q, s.received(q)),
		TTL:        q.SecondsLeft(now),
		OprgMd:     q.Mode.String(),
	}
}

// fxPayIn is SttlmInstr, once q was accepted: BkPayInDtls, the collection
// account of q's source currency and q's reference (metadata.bankPayIn in
// JSON), or CrptoPayInDtls, the deposit address issued to a token source
// (metadata.cryptoPayIn); nil before, and when there is neither.
func fxPayIn(m *engine.Markets, q *engine.Quote, received bool) *fxmsg.SettlementInstruction {
	if q.Accepted == nil {
		return nil
	}
	if p := q.PayIn; p != nil {
		return &fxmsg.SettlementInstruction{CrptoPayInDtls: &fxmsg.CryptoPayInDetails{
			AdrId: p.Address.String(), Adr: p.Deposit, BlckChn: p.Chain.String(), Tkn: p.Currency.String(),
			AdrTp: "hd_deposit", XpctdAmt: fxAmount(q.TotalSource(), p.Currency), XtrnlRef: q.Reference.String(),
			Sts: q.PayInStatus(received), CreDtTm: fxTime(p.CreatedAt), XpryDtTm: fxTime(q.ExpiresAt),
			VrtlAcctId: engine.VirtualAccountID(q.Client, p.Currency), DrvtnIdx: p.Index,
			WrngMsg: engine.PayInWarning(p.Currency, p.Chain),
		}}
	}
	bank, ok := m.CollectionAccount(q.Mode, q.Pair.Source)
	if !ok {
		return nil
	}
	return &fxmsg.SettlementInstruction{BkPayInDtls: &fxmsg.BankPayInDetails{
		AcctNm: bank.AccountName, AcctNb: bank.AccountNumber, BkNm: bank.BankName, Ref: q.Reference.String(),
	}}
}

// fxTradeStatus maps a quote status to TradSts (spec §4).
func fxTradeStatus(st engine.Status) fxmsg.TradeStatus {
	switch st {
	case engine.StatusPending:
		return fxmsg.TradeStatus{Sts: fxmsg.StatusNew}
	case engine.StatusAwaitingPayment:
		return fxmsg.TradeStatus{Sts: fxmsg.StatusSettling}
	case engine.StatusCompleted:
		return fxmsg.TradeStatus{Sts: fxmsg.StatusCompleted}
	case engine.StatusCancelled:
		return fxmsg.TradeStatus{Sts: fxmsg.StatusCancelled}
	case engine.StatusExpired:
		return fxmsg.TradeStatus{Sts: fxmsg.StatusCancelled, Rsn: fxmsg.ReasonExpired}
	}
	panic("gateway: quote with unknown status " + strconv.Itoa(int(st)))
}

func fxCurrencyPair(p engine.Pair) fxmsg.CurrencyPair {
	return fxmsg.CurrencyPair{BaseCcy: p.Source.String(), QtdCcy: p.Destination.String()}
}

func fxAmount(a engine.Amount, c engine.Currency) fxmsg.Amount {
	return fxmsg.Amount{Ccy: c.String(), Value: fxmsg.Decimal(engine.AppendAmount(nil, a, c))}
}

func fxRate(r engine.Rate) fxmsg.Decimal { return fxmsg.Decimal(engine.AppendRate(nil, r)) }

// fxAmountCurrency is the currency q's Amount is in.
func fxAmountCurrency(q *engine.Quote) engine.Currency {
	if q.Direction == engine.DirectionDestination {
		return q.Pair.Destination
	}
	return q.Pair.Source
}

// ---- Reading -------------------------------------------------------------------

// parseFXTradInstr validates a trade initiation: it reads the XML into
// createTerms, whose meaning is checked by the same code as a JSON create's
// (create.go; spec §5, §6, §7): the same refusals in the same
// precedence, with details named by element path.
func parseFXTradInstr(body []byte, markets *engine.Markets) (*actors.CreateQuote, *apiError) {
	m, err := fxmsg.DecodeFXTradInstr(body)
	if err != nil {
		return nil, fxDecodeError(err)
	}
	f := fxFields{}
	f.unknown("", m.Unknown)
	cmd := &actors.CreateQuote{}
	var base, quoted string
	var baseOK, quotedOK bool
	if p := m.CcyPair; p == nil {
		f.problem("CcyPair", "is required")
	} else {
		f.unknown("CcyPair", p.Unknown)
		base, baseOK = f.text("CcyPair/BaseCcy", p.BaseCcy, fxCurrencyCodeBytesMax)
		quoted, quotedOK = f.text("CcyPair/QtdCcy", p.QtdCcy, fxCurrencyCodeBytesMax)
	}
	const amountPath = "TradAmts/TradgCcyAmt"
	var amount []byte
	var amountOK bool
	var amountCcy string
	if a := m.TradAmts; a == nil {
		f.problem("TradAmts", "is required")
	} else {
		f.unknown("TradAmts", a.Unknown)
		if a.TradgCcyAmt == nil {
			f.problem(amountPath, "is required")
		} else {
			amount, amountOK = f.number(amountPath, a.TradgCcyAmt.Value)
			amountCcy = strings.Trim(a.TradgCcyAmt.Ccy, fxSpace)
		}
	}
	if r := m.AgrdRate; r == nil {
		f.problem("AgrdRate", "is required")
	} else {
		f.unknown("AgrdRate", r.Unknown)
		if r.XchgRate == nil {
			f.problem("AgrdRate/XchgRate", "is required")
		} else if text, ok := f.number("AgrdRate/XchgRate", *r.XchgRate); ok {
			cmd.Rate, _ = f.rate("AgrdRate/XchgRate", text)
		}
	}
	direction, directionOK := f.text("AmtDrctn", m.AmtDrctn, fxCurrencyCodeBytesMax)
	terms := createTerms{markets: markets, source: base, sourceOK: baseOK, destination: quoted, destinationOK: quotedOK,
		amount: amount, amountOK: amountOK, amountField: amountPath,
		amountCurrency: func(c engine.Currency) {
			if amountCcy != "" && amountCcy != c.String() {
				f.problem(amountPath+"/@Ccy", "must be "+c.String()+", the currency AmtDrctn "+direction+" puts the amount in")
			}
		}}
	if directionOK {
		switch direction {
		case fxmsg.DirectionSell:
			terms.direction = engine.DirectionSource
		case fxmsg.DirectionBuy:
			terms.direction = engine.DirectionDestination
		default:
			f.problem("AmtDrctn", "must be SELL (amount in BaseCcy) or BUY (amount in QtdCcy)")
		}
	}
	if e := terms.meaning(cmd, f); e != nil {
		return nil, e
	}
	if e := f.err(); e != nil {
		return nil, e
	}
	cmd.Chain = defaultChain(markets, cmd.Pair)
	return cmd, nil
}

// parseFXTradAccptReq validates an acceptance and returns the settlement it
// asks for. What depends on the trade (fiat or token destination, the
// chain's address format, the wallet's currency) is fxCheckSettlement's.
func parseFXTradAccptReq(body []byte) (engine.Settlement, *apiError) {
	m, err := fxmsg.DecodeFXTradAccptReq(body)
	if err != nil {
		return engine.Settlement{}, fxDecodeError(err)
	}
	f := fxFields{}
	f.unknown("", m.Unknown)
	var st engine.Settlement
	variants := 0
	if d := m.SttlmDstn; d != nil {
		f.unknown("SttlmDstn", d.Unknown)
		if b := d.BkDstn; b != nil {
			variants++
			st.Kind = engine.SettlementBank
			f.unknown("SttlmDstn/BkDstn", b.Unknown)
			st.AccountName, _ = f.text("SttlmDstn/BkDstn/AcctNm", b.AcctNm, bankAccountNameBytesMax)
			st.AccountNumber, _ = f.text("SttlmDstn/BkDstn/AcctNb", b.AcctNb, bankAccountNumberBytesMax)
			st.BankCode, _ = f.text("SttlmDstn/BkDstn/BkCd", b.BkCd, bankCodeBytesMax)
		}
		if c := d.BlkChnDstn; c != nil {
			variants++
			st.Kind = engine.SettlementChain
			f.unknown("SttlmDstn/BlkChnDstn", c.Unknown)
			st.Address, _ = f.text("SttlmDstn/BlkChnDstn/Adr", c.Adr, chainAddressBytesMax)
		}
		if d.BkDstn == nil && d.BlkChnDstn == nil {
			f.problem("SttlmDstn", "must hold BkDstn or BlkChnDstn")
		}
	}
	if m.AcctId != nil {
		variants++
		st.Kind = engine.SettlementWallet
		if raw, ok := f.text("AcctId", m.AcctId, fxIDBytesMax); ok {
			id, valid := engine.ParseUUID(raw)
			if !valid {
				f.problem("AcctId", "must be a UUID")
			}
			st.Account = engine.AccountID(id)
		}
	}
	if variants != 1 {
		f.problem("FXTradAccptReq", "must hold exactly one of SttlmDstn/BkDstn, AcctId and SttlmDstn/BlkChnDstn")
	}
	if e := f.err(); e != nil {
		return engine.Settlement{}, e
	}
	return st, nil
}

// fxCheckSettlement answers an accept whose settlement the engine's rule
// (engine.CheckSettlement) refuses, naming the XML element at fault; nil
// when it is legal. The quote actor asks the same rule again when it
// decides.
func fxCheckSettlement(directory directoryService, who actors.Principal, q *engine.Quote, st engine.Settlement) *apiError {
	client, ok := directory.Client(who.Client)
	if !ok {
		return errUnauthorized
	}
	destination := q.Pair.Destination
	switch p := engine.CheckSettlement(q, st, client.Wallets); p {
	case engine.SettlementLegal:
		return nil
	case engine.SettlementBankForToken:
		return fieldError("SttlmDstn/BkDstn", "applies only to fiat destinations; "+destination.String()+
			" is a token: use SttlmDstn/BlkChnDstn or AcctId")
	case engine.SettlementChainForFiat:
		return fieldError("SttlmDstn/BlkChnDstn", "applies only to token destinations; "+destination.String()+
			" is fiat: use SttlmDstn/BkDstn or AcctId")
	case engine.SettlementBadAddress:
		return fieldError("SttlmDstn/BlkChnDstn/Adr", "must be a "+q.Chain.String()+" address: "+q.Chain.AddressRule())
	default:
		return resultError(p.Result())
	}
}

// fxDecodeError maps a refused document to its answer: 413 for size, else
// 400 VALIDATION_ERROR naming the body.
func fxDecodeError(err error) *apiError {
	if errors.Is(err, fxmsg.ErrTooLarge) {
		return errTooLarge
	}
	var refused *fxmsg.Error
	if errors.As(err, &refused) {
		return fieldError("body", refused.Reason)
	}
	return fieldError("body", "must be a well-formed XML document")
}

// fxSpace is XML's white space, trimmed around every value.
const fxSpace = " \t\r\n"

// fxFields collects the problems of one XML request by element path, as
// object does for JSON members; the VALIDATION_ERROR details name each
// offending element ("TradAmts/TradgCcyAmt"). The first problem of a path
// is kept.
type fxFields map[string]any

func (f fxFields) problem(path, text string) {
	if _, ok := f[path]; !ok {
		f[path] = text
	}
}

func (f fxFields) err() *apiError {
	if len(f) == 0 {
		return nil
	}
	return validationError(map[string]any(f))
}

// unknown reports each element the message does not define.
func (f fxFields) unknown(parent string, elements []fxmsg.Element) {
	for _, e := range elements {
		path := e.XMLName.Local
		if parent != "" {
			path = parent + "/" + path
		}
		f.problem(path, "is not a known element")
	}
}

// text reads a required leaf: white space trimmed, not empty, at most
// maxBytes bytes, no control characters.
func (f fxFields) text(path string, v *string, maxBytes int) (string, bool) {
	if v == nil {
		f.problem(path, "is required")
		return "", false
	}
	s := strings.Trim(*v, fxSpace)
	switch {
	case s == "":
		f.problem(path, "must not be empty")
		return "", false
	case len(s) > maxBytes:
		f.problem(path, "must be at most "+strconv.Itoa(maxBytes)+" bytes")
		return "", false
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		f.problem(path, "must not contain control characters")
		return "", false
	}
	return s, true
}

// number reads a decimal number: XML Schema's xs:decimal lexical form
// (optional sign, digits with at most one '.', no exponent), at most
// numberBytesMax characters, white space around it trimmed. It returns the
// number as engine.ParseAmountText and ParseRateText read it (the JSON
// grammar), so that both APIs convert numbers with the same exact code.
func (f fxFields) number(path string, v fxmsg.Decimal) ([]byte, bool) {
	s := strings.Trim(string(v), fxSpace)
	if s == "" {
		f.problem(path, "must not be empty")
		return nil, false
	}
	text, ok := fxNumberText(s)
	if !ok {
		f.problem(path, "must be a decimal number such as 1500 or 0.000625")
		return nil, false
	}
	return text, true
}

// fxNumberText checks s against xs:decimal's lexical form and rewrites it
// in the JSON number grammar: no '+', no leading zeros, a digit on both
// sides of a '.', so "+007.50" is "7.50" and ".5" is "0.5".
func fxNumberText(s string) ([]byte, bool) {
	if len(s) == 0 || len(s) > numberBytesMax {
		return nil, false
	}
	out := make([]byte, 0, len(s)+1)
	i := 0
	switch s[0] {
	case '-':
		out = append(out, '-')
		i++
	case '+':
		i++
	}
	integer, point, fraction := i, -1, 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if point >= 0 {
				fraction++
			}
		case c == '.' && point < 0:
			point = i
		default:
			return nil, false
		}
	}
	end := len(s)
	if point >= 0 {
		end = point
	}
	digits := strings.TrimLeft(s[integer:end], "0")
	if digits == "" && end == integer && fraction == 0 {
		return nil, false // no digit at all: "", "+", "."
	}
	if digits == "" {
		digits = "0"
	}
	out = append(out, digits...)
	if fraction > 0 {
		out = append(out, s[point:]...)
	}
	return out, true
}

// rate converts a positive rate, as object.rate does.
func (f fxFields) rate(path string, text []byte) (engine.Rate, bool) { return rateIn(f, path, text) }
