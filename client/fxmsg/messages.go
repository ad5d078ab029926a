package fxmsg

import "encoding/xml"

// NamespacePrefix + a message type is the namespace of that type's documents.
const NamespacePrefix = "urn:iso:std:iso:20022:tech:xsd:"

// The message types of spec §7. The numbers are the interface's; they
// borrow ISO 20022 names, not ISO's schemas.
const (
	// TypeTradeInstruction: FXTradInstr and FXTradAccptReq requests, the
	// FXTradInstrRspn answer, and the FxTradStsAndDtls makers rate.
	TypeTradeInstruction = "fxtr.014.001.05"
	// TypeTradeStatus: FXTradStsAndDtlsNtfctn.
	TypeTradeStatus = "fxtr.017.001.05"
	// TypeTradeCancellation: FXTradCxlRspn.
	TypeTradeCancellation = "fxtr.016.001.05"
	// TypeTradeConfirmation: FXTradConfStsAdvc.
	TypeTradeConfirmation = "fxtr.037.001.02"
	// TypeListings: FndPrcgPsptRpt.
	TypeListings = "reda.041.001.01"
	// TypeMessageReject: MsgRjct, the body of every error.
	TypeMessageReject = "admi.002.001.01"
)

// Trade statuses (TradSts/Sts) and the expiry reason (TradSts/Rsn).
const (
	StatusNew       = "NEWT" // pending
	StatusSettling  = "SETT" // awaiting_payment
	StatusCompleted = "COMP" // completed
	StatusCancelled = "CANC" // cancelled or expired
	ReasonExpired   = "EXPD" // only on expired trades
)

// Amount directions of FXTradInstr/AmtDrctn.
const (
	DirectionSell = "SELL" // the amount is in the base (source) currency
	DirectionBuy  = "BUY"  // the amount is in the quoted (destination) currency
)

// RateSourceMarketMaker is FxTradStsAndDtls/RateSrc.
const RateSourceMarketMaker = "market_maker"

// Decimal is an amount or a rate as exact decimal text ("1500", "0.000625").
// It is text on purpose: no float64 ever holds money (spec §1), and the
// gateway parses and formats it exactly.
type Decimal string

// Amount is an amount element: decimal text with an optional Ccy attribute
// (ISO 20022's ActiveCurrencyAndAmount). Responses always set Ccy; in a
// request it is optional and, when present, must name the amount's currency.
type Amount struct {
	Ccy   string  `xml:"Ccy,attr,omitempty"`
	Value Decimal `xml:",chardata"`
}

// Element stands for an element the message does not define. Request types
// collect such elements in their Unknown field so that the gateway can
// refuse them by name, as the JSON API refuses unknown members.
type Element struct {
	XMLName xml.Name
}

// ---- Requests ----------------------------------------------------------------

// FXTradInstr (fxtr.014.001.05) initiates a trade: POST /trades.
type FXTradInstr struct {
	XMLName  xml.Name           `xml:"FXTradInstr"`
	CcyPair  *InstructedPair    `xml:"CcyPair"`
	TradAmts *InstructedAmounts `xml:"TradAmts"`
	AgrdRate *AgreedRate        `xml:"AgrdRate"`
	AmtDrctn *string            `xml:"AmtDrctn"`
	Unknown  []Element          `xml:",any"`
}

// InstructedPair is FXTradInstr/CcyPair: BaseCcy is the source currency,
// QtdCcy the destination.
type InstructedPair struct {
	BaseCcy *string   `xml:"BaseCcy"`
	QtdCcy  *string   `xml:"QtdCcy"`
	Unknown []Element `xml:",any"`
}

// InstructedAmounts is FXTradInstr/TradAmts.
type InstructedAmounts struct {
	TradgCcyAmt *Amount   `xml:"TradgCcyAmt"`
	Unknown     []Element `xml:",any"`
}

// AgreedRate is FXTradInstr/AgrdRate: the partner's proposed (minimum) rate.
type AgreedRate struct {
	XchgRate *Decimal  `xml:"XchgRate"`
	Unknown  []Element `xml:",any"`
}

// FXTradAccptReq (fxtr.014.001.05) accepts a trade and chooses where its
// destination funds settle: POST /trades/{id}/accept. Exactly one of
// SttlmDstn/BkDstn, AcctId and SttlmDstn/BlkChnDstn is present.
type FXTradAccptReq struct {
	XMLName   xml.Name               `xml:"FXTradAccptReq"`
	SttlmDstn *SettlementDestination `xml:"SttlmDstn"`
	AcctId    *string                `xml:"AcctId"`
	Unknown   []Element              `xml:",any"`
}

// SettlementDestination is FXTradAccptReq/SttlmDstn.
type SettlementDestination struct {
	BkDstn     *BankDestination       `xml:"BkDstn"`
	BlkChnDstn *BlockchainDestination `xml:"BlkChnDstn"`
	Unknown    []Element              `xml:",any"`
}

// BankDestination is a payout to a bank account.
type BankDestination struct {
	AcctNm  *string   `xml:"AcctNm"`
	AcctNb  *string   `xml:"AcctNb"`
	BkCd    *string   `xml:"BkCd"`
	Unknown []Element `xml:",any"`
}

// BlockchainDestination is a payout to a wallet address on the trade's chain.
type BlockchainDestination struct {
	Adr     *string   `xml:"Adr"`
	Unknown []Element `xml:",any"`
}

// ---- Shared parts ------------------------------------------------------------

// CurrencyPair is a trade's CcyPair in a response: BaseCcy is the source,
// QtdCcy the destination.
type CurrencyPair struct {
	BaseCcy string `xml:"BaseCcy"`
	QtdCcy  string `xml:"QtdCcy"`
}

// TransactionIdentifier is UnqTxIdr: TxId is the trade's (= the quote's) id.
type TransactionIdentifier struct {
	TxId string `xml:"TxId"`
}

// TradeStatus is TradSts. Rsn is ReasonExpired on expired trades, else empty.
type TradeStatus struct {
	Sts string `xml:"Sts"`
	Rsn string `xml:"Rsn,omitempty"`
}

// TradeAmounts is TradAmts of a response: TradgCcyAmt the amount the
// instruction named, SttlmCcyAmt the total destination amount (what the
// partner receives), CntrValCcyAmt the total source amount (what it pays).
type TradeAmounts struct {
	TradgCcyAmt   Amount  `xml:"TradgCcyAmt"`
	SttlmCcyAmt   *Amount `xml:"SttlmCcyAmt,omitempty"`
	CntrValCcyAmt Amount  `xml:"CntrValCcyAmt"`
}

// AllocationDetails is AllcnDtls: the total destination amount and the
// weighted average rate of the trade's allocations.
type AllocationDetails struct {
	TtlSttlmAmt Amount  `xml:"TtlSttlmAmt"`
	WtdAvrgRate Decimal `xml:"WtdAvrgRate"`
}

// SettlementInstruction is SttlmInstr: where the partner pays in — a bank
// collection account for a fiat source, a deposit address for a token
// source.
type SettlementInstruction struct {
	BkPayInDtls    *BankPayInDetails   `xml:"BkPayInDtls,omitempty"`
	CrptoPayInDtls *CryptoPayInDetails `xml:"CrptoPayInDtls,omitempty"`
}

// CryptoPayInDetails is CrptoPayInDtls: the deposit address issued to a
// token-source trade at acceptance (JSON metadata.cryptoPayIn, member for
// member).
type CryptoPayInDetails struct {
	AdrId      string `xml:"AdrId"`      // addressId
	Adr        string `xml:"Adr"`        // address
	BlckChn    string `xml:"BlckChn"`    // chain
	Tkn        string `xml:"Tkn"`        // token
	AdrTp      string `xml:"AdrTp"`      // addressType: hd_deposit
	XpctdAmt   Amount `xml:"XpctdAmt"`   // expectedAmount, with Ccy
	XtrnlRef   string `xml:"XtrnlRef"`   // externalReference
	Sts        string `xml:"Sts"`        // status: active, pending, expired
	CreDtTm    string `xml:"CreDtTm"`    // createdAt
	XpryDtTm   string `xml:"XpryDtTm"`   // expiresAt
	VrtlAcctId string `xml:"VrtlAcctId"` // virtualAccountId
	DrvtnIdx   uint32 `xml:"DrvtnIdx"`   // derivationIndex
	WrngMsg    string `xml:"WrngMsg"`    // warningMessage
}

// BankPayInDetails is the marketplace's collection account for the source
// currency and the reference the partner puts on its transfer.
type BankPayInDetails struct {
	AcctNm string `xml:"AcctNm"`
	AcctNb string `xml:"AcctNb"`
	BkNm   string `xml:"BkNm"`
	Ref    string `xml:"Ref"`
}

// ---- Responses ---------------------------------------------------------------

// FXTradInstrRspn (fxtr.014.001.05) answers a trade initiation (Sts NEWT)
// and an accept (Sts SETT, with SttlmInstr).
type FXTradInstrRspn struct {
	XMLName    xml.Name               `xml:"urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05 FXTradInstrRspn"`
	UnqTxIdr   TransactionIdentifier  `xml:"UnqTxIdr"`
	TradSts    TradeStatus            `xml:"TradSts"`
	CcyPair    CurrencyPair           `xml:"CcyPair"`
	XchgRate   Decimal                `xml:"XchgRate"`
	TradAmts   TradeAmounts           `xml:"TradAmts"`
	AllcnDtls  AllocationDetails      `xml:"AllcnDtls"`
	SttlmInstr *SettlementInstruction `xml:"SttlmInstr,omitempty"`
	TTL        int64                  `xml:"TTL"`
	OprgMd     string                 `xml:"OprgMd"`
}

// FXTradStsAndDtlsNtfctn (fxtr.017.001.05) reports a trade's status:
// GET /trades/{id}. SttlmInstr (the pay-in) is present once the trade was
// accepted, and so is where it pays out, as the acceptance named it:
// SttlmDstn (BkDstn or BlkChnDstn) or AcctId (the partner's own account).
type FXTradStsAndDtlsNtfctn struct {
	XMLName    xml.Name               `xml:"urn:iso:std:iso:20022:tech:xsd:fxtr.017.001.05 FXTradStsAndDtlsNtfctn"`
	UnqTxIdr   TransactionIdentifier  `xml:"UnqTxIdr"`
	TradSts    TradeStatus            `xml:"TradSts"`
	CcyPair    CurrencyPair           `xml:"CcyPair"`
	XchgRate   Decimal                `xml:"XchgRate"`
	TradAmts   TradeAmounts           `xml:"TradAmts"`
	SttlmInstr *SettlementInstruction `xml:"SttlmInstr,omitempty"`
	SttlmDstn  *SettlementDestination `xml:"SttlmDstn,omitempty"`
	AcctId     *string                `xml:"AcctId,omitempty"`
	TTL        int64                  `xml:"TTL"`
	OprgMd     string                 `xml:"OprgMd"`
}

// FXTradCxlRspn (fxtr.016.001.05) answers a cancellation: Sts CANC, TTL 0.
type FXTradCxlRspn struct {
	XMLName  xml.Name              `xml:"urn:iso:std:iso:20022:tech:xsd:fxtr.016.001.05 FXTradCxlRspn"`
	UnqTxIdr TransactionIdentifier `xml:"UnqTxIdr"`
	TradSts  TradeStatus           `xml:"TradSts"`
	CcyPair  CurrencyPair          `xml:"CcyPair"`
	XchgRate Decimal               `xml:"XchgRate"`
	TTL      int64                 `xml:"TTL"`
	OprgMd   string                `xml:"OprgMd"`
}

// FXTradConfStsAdvc (fxtr.037.001.02) answers a confirmation: Sts COMP.
type FXTradConfStsAdvc struct {
	XMLName    xml.Name               `xml:"urn:iso:std:iso:20022:tech:xsd:fxtr.037.001.02 FXTradConfStsAdvc"`
	UnqTxIdr   TransactionIdentifier  `xml:"UnqTxIdr"`
	TradSts    TradeStatus            `xml:"TradSts"`
	CcyPair    CurrencyPair           `xml:"CcyPair"`
	XchgRate   Decimal                `xml:"XchgRate"`
	SttlmInstr *SettlementInstruction `xml:"SttlmInstr,omitempty"`
	TTL        int64                  `xml:"TTL"`
	OprgMd     string                 `xml:"OprgMd"`
}

// FndPrcgPsptRpt (reda.041.001.01) is one page of listings: GET /listings.
type FndPrcgPsptRpt struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:reda.041.001.01 FndPrcgPsptRpt"`
	Pgntn   Pagination `xml:"Pgntn"`
	Listgs  []Listing  `xml:"Listgs"`
	OprgMd  string     `xml:"OprgMd"`
}

// Pagination is FndPrcgPsptRpt/Pgntn; PageNumber is zero-based.
type Pagination struct {
	PageNumber    int `xml:"PageNumber"`
	PageSize      int `xml:"PageSize"`
	TotalElements int `xml:"TotalElements"`
}

// Listing is one active pool: Id is the pool id, CcyPair "NGN/USDT",
// AvlblBal its available liquidity (destination currency), TradsCnt its
// completed trades and CmpltnRate completed ÷ accepted in percent.
type Listing struct {
	Id         string  `xml:"Id"`
	Nm         string  `xml:"Nm"`
	CcyPair    string  `xml:"CcyPair"`
	XchgRate   Decimal `xml:"XchgRate"`
	AvlblBal   Amount  `xml:"AvlblBal"`
	TradsCnt   uint64  `xml:"TradsCnt"`
	CmpltnRate Decimal `xml:"CmpltnRate"`
}

// FxTradStsAndDtls (fxtr.014.001.05) is the best market maker rate of a
// pair: GET /rates/makers. TmStmp is when that rate was set (RFC 3339 UTC
// with milliseconds), AgeSecs the whole seconds since, PctChg24H the change
// against 24 hours before in percent, to 2 places.
type FxTradStsAndDtls struct {
	XMLName   xml.Name `xml:"urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05 FxTradStsAndDtls"`
	SrcCcy    string   `xml:"SrcCcy"`
	TrgtCcy   string   `xml:"TrgtCcy"`
	XchgRate  Decimal  `xml:"XchgRate"`
	RateSrc   string   `xml:"RateSrc"`
	TmStmp    string   `xml:"TmStmp"`
	AgeSecs   int64    `xml:"AgeSecs"`
	PctChg24H Decimal  `xml:"PctChg24H"`
	OprgMd    string   `xml:"OprgMd"`
}

// MsgRjct (admi.002.001.01) is every error of the XML API: RltdRef/Ref is
// the trade's TxId when there is one, else the request id; RjctgPtyRsn is
// the JSON API's error code for the same failure.
type MsgRjct struct {
	XMLName xml.Name         `xml:"urn:iso:std:iso:20022:tech:xsd:admi.002.001.01 MsgRjct"`
	RltdRef RelatedReference `xml:"RltdRef"`
	Rsn     RejectionReason  `xml:"Rsn"`
}

// RelatedReference is MsgRjct/RltdRef.
type RelatedReference struct {
	Ref string `xml:"Ref"`
}

// RejectionReason is MsgRjct/Rsn.
type RejectionReason struct {
	RjctgPtyRsn string `xml:"RjctgPtyRsn"`
	RjctnDtTm   string `xml:"RjctnDtTm"`
	RsnDesc     string `xml:"RsnDesc"`
}
