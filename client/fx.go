package client

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client/fxmsg"
)

// The XML FX API (spec §7): the same trade lifecycle as the JSON API in
// ISO 20022 messages, under /api/v1/partners/fx. Answers are the fxmsg
// message types; a refusal (MsgRjct) is an *APIError whose Code is the
// spec's error code (RjctgPtyRsn) and Message its description.

const fxPath = "/partners/fx"

// FXTradeRequest is an FXTradInstr: Base is the source currency, Quoted
// the destination; Direction is "SELL" (Amount in Base) or "BUY" (Amount in
// Quoted); Rate is the worst rate accepted.
type FXTradeRequest struct {
	Base, Quoted string
	Amount, Rate decimal.Decimal
	Direction    string
}

// FXSettlement names where an accepted trade pays out: exactly one of the
// partner's own AccountID (its wallet in the destination currency), a
// bank account (fiat destinations) or a chain Address (token destinations).
type FXSettlement struct {
	AccountID                              string
	BankAccountName, BankAccount, BankCode string
	Address                                string
}

func fxRoot(messageType, local string) xml.Name {
	return xml.Name{Space: fxmsg.NamespacePrefix + messageType, Local: local}
}

func fxCall(method, path string, body any, opts []CallOption) *call {
	c := newCall(method, fxPath+path, body, opts)
	c.xml = true
	return c
}

// FXInitiate initiates a trade (POST /partners/fx/trades): the service
// allocates it in full at the rate or better, or refuses it. Pass an
// IdempotencyKey to retry safely.
func (c *Client) FXInitiate(ctx context.Context, req FXTradeRequest, opts ...CallOption) (*fxmsg.FXTradInstrRspn, error) {
	amount := fxmsg.Amount{Value: fxmsg.Decimal(req.Amount.String())}
	rate, direction := fxmsg.Decimal(req.Rate.String()), req.Direction
	body := &fxmsg.FXTradInstr{
		XMLName:  fxRoot(fxmsg.TypeTradeInstruction, "FXTradInstr"),
		CcyPair:  &fxmsg.InstructedPair{BaseCcy: &req.Base, QtdCcy: &req.Quoted},
		TradAmts: &fxmsg.InstructedAmounts{TradgCcyAmt: &amount},
		AgrdRate: &fxmsg.AgreedRate{XchgRate: &rate},
		AmtDrctn: &direction,
	}
	out := &fxmsg.FXTradInstrRspn{}
	_, err := c.t.do(ctx, fxCall(http.MethodPost, "/trades", body, opts), out)
	return out, err
}

// FXStatus reads a trade (GET /partners/fx/trades/{id}), with where it pays
// out once accepted.
func (c *Client) FXStatus(ctx context.Context, tradeID string, opts ...CallOption) (*fxmsg.FXTradStsAndDtlsNtfctn, error) {
	out := &fxmsg.FXTradStsAndDtlsNtfctn{}
	_, err := c.t.do(ctx, fxCall(http.MethodGet, "/trades/"+url.PathEscape(tradeID), nil, opts), out)
	return out, err
}

// FXAccept accepts a trade, naming where it pays out (POST
// /partners/fx/trades/{id}/accept).
func (c *Client) FXAccept(ctx context.Context, tradeID string, to FXSettlement, opts ...CallOption) (*fxmsg.FXTradInstrRspn, error) {
	body := &fxmsg.FXTradAccptReq{XMLName: fxRoot(fxmsg.TypeTradeInstruction, "FXTradAccptReq")}
	switch {
	case to.AccountID != "":
		body.AcctId = &to.AccountID
	case to.Address != "":
		body.SttlmDstn = &fxmsg.SettlementDestination{BlkChnDstn: &fxmsg.BlockchainDestination{Adr: &to.Address}}
	default:
		body.SttlmDstn = &fxmsg.SettlementDestination{BkDstn: &fxmsg.BankDestination{
			AcctNm: &to.BankAccountName, AcctNb: &to.BankAccount, BkCd: &to.BankCode}}
	}
	out := &fxmsg.FXTradInstrRspn{}
	_, err := c.t.do(ctx, fxCall(http.MethodPost, "/trades/"+url.PathEscape(tradeID)+"/accept", body, opts), out)
	return out, err
}

// FXCancel cancels a trade (PUT /partners/fx/trades/{id}/cancellation).
func (c *Client) FXCancel(ctx context.Context, tradeID string, opts ...CallOption) (*fxmsg.FXTradCxlRspn, error) {
	out := &fxmsg.FXTradCxlRspn{}
	_, err := c.t.do(ctx, fxCall(http.MethodPut, "/trades/"+url.PathEscape(tradeID)+"/cancellation", nil, opts), out)
	return out, err
}

// FXConfirm completes a paid trade (POST /partners/fx/trades/{id}/confirmation).
func (c *Client) FXConfirm(ctx context.Context, tradeID string, opts ...CallOption) (*fxmsg.FXTradConfStsAdvc, error) {
	out := &fxmsg.FXTradConfStsAdvc{}
	_, err := c.t.do(ctx, fxCall(http.MethodPost, "/trades/"+url.PathEscape(tradeID)+"/confirmation", nil, opts), out)
	return out, err
}

// FXListings reads a page (zero-based) of the market's listings (GET
// /partners/fx/listings); size 0 is the service's default.
func (c *Client) FXListings(ctx context.Context, page, size int, opts ...CallOption) (*fxmsg.FndPrcgPsptRpt, error) {
	call := fxCall(http.MethodGet, "/listings", nil, opts)
	call.query = url.Values{"page": {strconv.Itoa(page)}}
	if size > 0 {
		call.query.Set("pageSize", strconv.Itoa(size))
	}
	out := &fxmsg.FndPrcgPsptRpt{}
	_, err := c.t.do(ctx, call, out)
	return out, err
}

// FXMakersRate reads the market makers' consensus rate of a pair (GET
// /partners/fx/rates/makers).
func (c *Client) FXMakersRate(ctx context.Context, from, to string, opts ...CallOption) (*fxmsg.FxTradStsAndDtls, error) {
	call := fxCall(http.MethodGet, "/rates/makers", nil, opts)
	call.query = url.Values{"from": {from}, "to": {to}}
	out := &fxmsg.FxTradStsAndDtls{}
	_, err := c.t.do(ctx, call, out)
	return out, err
}

// newFXError reads a refusal of the XML API: a MsgRjct.
func newFXError(res *http.Response, raw []byte) *APIError {
	return readAPIError(res, raw, func(e *APIError) bool {
		var m fxmsg.MsgRjct
		if xml.Unmarshal(raw, &m) != nil || m.Rsn.RjctgPtyRsn == "" {
			return false
		}
		e.Code, e.Message = m.Rsn.RjctgPtyRsn, m.Rsn.RsnDesc
		return true
	})
}
