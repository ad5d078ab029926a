package engine

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// The identity of money (spec §16.1). A payment that crosses the
// marketplace's edge — a chain transfer, a bank transfer, an operator's
// prefund or payout — is the same payment however a person or a file
// spells it. Its Identity is decided here, once, from the spelling:
//
//   - a chain transfer is (chain, transaction hash, log index); the hash is
//     64 hex digits, with or without 0x, in any case, with surrounding
//     white space, kept as 64 lower-case digits;
//   - money in by bank (a bank receipt's bankTransactionId, a prefund's
//     reference) is (currency, canonical text), whatever the mode;
//   - money out (a payout's reference) is (currency, canonical text),
//     apart from money in: a payout may name the bank's id of the transfer
//     it answers.
//
// Canonical text (CanonicalReference) is NFKC, case-folded, with
// surrounding white space trimmed, every inner run of white space one
// space and every dash (Unicode Pd) a hyphen-minus; control and format
// characters (Cc, Cf) are refused, as is an empty or over-long result.

// IdentityKind is the namespace of an Identity.
type IdentityKind uint8

const (
	IdentityChain    IdentityKind = 1 // a chain transfer: Chain, Ref (hash), LogIndex
	IdentityInbound  IdentityKind = 2 // money in by bank, or a prefund: Currency, Ref
	IdentityOutbound IdentityKind = 3 // a payout: Currency, Ref
)

// Identity is a payment's identity. Two payments with equal identities
// are one payment. It is comparable: a map key.
type Identity struct {
	Kind     IdentityKind
	Chain    Chain    // IdentityChain
	Currency Currency // IdentityInbound, IdentityOutbound
	LogIndex uint32   // IdentityChain
	// Ref is the canonical hash (64 lower-case hex digits) or text.
	Ref string
}

// IsZero reports whether id names nothing (a payment recorded before
// identities, whose identity State derives when it applies it).
func (id Identity) IsZero() bool { return id.Kind == 0 }

// String renders id for operators, one spelling per identity:
// "chain:ETHEREUM:0x…:0", "in:NGN:nip-var-1", "out:NGN:payout-77".
func (id Identity) String() string {
	switch id.Kind {
	case IdentityChain:
		return "chain:" + id.Chain.String() + ":" + TxHashText(id.Chain, id.Ref) + ":" + strconv.FormatUint(uint64(id.LogIndex), 10)
	case IdentityInbound:
		return "in:" + id.Currency.String() + ":" + id.Ref
	case IdentityOutbound:
		return "out:" + id.Currency.String() + ":" + id.Ref
	}
	return ""
}

// Text is the identity's reference as a partner or operator reads it: the
// hash in its chain's spelling (TxHashText), or the canonical text.
func (id Identity) Text() string {
	if id.Kind == IdentityChain {
		return TxHashText(id.Chain, id.Ref)
	}
	return id.Ref
}

// valid reports whether id is well formed (a log record's check).
func (id Identity) valid() bool {
	switch id.Kind {
	case IdentityChain:
		_, err := CanonicalTxHash(id.Ref)
		return err == nil && id.Chain > ChainNone && id.Chain < chainEnd && id.Currency == CurrencyNone
	case IdentityInbound, IdentityOutbound:
		ref, err := CanonicalReference(id.Ref)
		return err == nil && ref == id.Ref && id.Currency.Valid() && id.Chain == ChainNone && id.LogIndex == 0
	}
	return false
}

// ChainIdentity is the identity of a transfer on chain c.
// REQUIRES: hash is canonical (CanonicalTxHash).
func ChainIdentity(c Chain, hash string, logIndex uint32) Identity {
	return Identity{Kind: IdentityChain, Chain: c, Ref: hash, LogIndex: logIndex}
}

// Limits of identities.
const (
	// ReferenceCharsMax bounds a canonical bank transaction id or payout
	// reference, in characters.
	ReferenceCharsMax = 128
	// TxHashDigits is the length of a canonical transaction hash.
	TxHashDigits = 64
	// LogIndexMax bounds a transfer's log index within its transaction.
	LogIndexMax = 1<<31 - 1
)

// Errors of canonical forms: each says what the input must be.
var (
	ErrTxHash          = errors.New("must be a transaction hash: 64 hex digits, 0x-prefixed or not")
	ErrReferenceEmpty  = errors.New("must not be empty")
	ErrReferenceLong   = fmt.Errorf("must be at most %d characters", ReferenceCharsMax)
	ErrReferenceFormat = errors.New("must not hold control or format characters (Unicode Cc, Cf)")
	ErrReferenceUTF8   = errors.New("must be valid UTF-8")
)

// CanonicalTxHash reads a transaction hash as TRON and the EVM chains write
// it: 64 hex digits, 0x-prefixed or not, any case, surrounding white space
// ignored. It returns the 64 digits in lower case.
func CanonicalTxHash(s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) == TxHashDigits+2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	if len(s) != TxHashDigits {
		return "", ErrTxHash
	}
	var b [TxHashDigits / 2]byte
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return "", ErrTxHash
	}
	return hex.EncodeToString(b[:]), nil
}

// TxHashText spells a canonical hash as chain c writes it: 0x-prefixed on
// the EVM chains, bare on TRON (and on a chain not named).
func TxHashText(c Chain, hash string) string {
	switch c {
	case ChainEthereum, ChainBSC, ChainPolygon:
		return "0x" + hash
	}
	return hash
}

// caseFold folds case the Unicode way (full case folding): "ß" and "SS"
// fold alike, as "ǅ" and "ǆ" do.
var caseFold = cases.Fold()

// CanonicalReference is a bank transaction id or payout reference in its
// canonical form (the package comment's rules).
func CanonicalReference(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", ErrReferenceUTF8
	}
	// NFKC, folded, NFKC again: folding can leave a string that is not
	// normalized (Unicode's NFKC_Casefold does the same).
	s = norm.NFKC.String(caseFold.String(norm.NFKC.String(s)))
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0 // inner runs become one space; leading ones go
			continue
		case unicode.In(r, unicode.Cc, unicode.Cf):
			return "", ErrReferenceFormat
		case unicode.Is(unicode.Pd, r):
			r = '-'
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	switch n := utf8.RuneCountInString(out); {
	case n == 0:
		return "", ErrReferenceEmpty
	case n > ReferenceCharsMax:
		return "", ErrReferenceLong
	}
	return out, nil
}

// CanonicalPayInReference is a quote's bank pay-in reference as a bank
// statement or an operator may write it (OJA-4F7Q9D2M): trimmed, upper
// case. References are issued in upper case, so this is the issued form.
func CanonicalPayInReference(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }

// InboundIdentity is the identity of money in by bank (or a prefund) in
// currency c, from its reference as typed.
func InboundIdentity(c Currency, reference string) (Identity, error) {
	return referenceIdentity(IdentityInbound, c, reference)
}

// OutboundIdentity is the identity of a payout in currency c.
func OutboundIdentity(c Currency, reference string) (Identity, error) {
	return referenceIdentity(IdentityOutbound, c, reference)
}

func referenceIdentity(k IdentityKind, c Currency, reference string) (Identity, error) {
	ref, err := CanonicalReference(reference)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Kind: k, Currency: c, Ref: ref}, nil
}

// legacyIdentity is the identity of a receipt recorded before identities
// (its reference as typed then): canonical where the reference reads as
// canonical now, else its raw text in the same namespace, so that a
// reference no rule reads still collides with its exact repeats.
func legacyIdentity(method ReceiptMethod, chain Chain, c Currency, reference string) Identity {
	if method == ReceiptCrypto {
		if hash, err := CanonicalTxHash(reference); err == nil {
			return ChainIdentity(chain, hash, 0)
		}
		return Identity{Kind: IdentityChain, Chain: chain, Ref: reference}
	}
	if id, err := InboundIdentity(c, reference); err == nil {
		return id
	}
	return Identity{Kind: IdentityInbound, Currency: c, Ref: reference}
}

// Errors of operator names.
var (
	ErrOperatorNameLength  = fmt.Errorf("must be 1 to %d characters (%d bytes)", OperatorNameMax, OperatorNameMax)
	ErrOperatorNameScripts = errors.New("must be written in one script (Unicode's single-script rule, UTS #39: no Latin mixed with Cyrillic or Greek look-alikes)")
)

// CanonicalOperatorName is an operator's name as people read it: NFKC,
// case-folded, trimmed, inner white space one space; control and format
// characters (a zero-width space) and letters of more than one script
// ("rооt" with Cyrillic о) are refused. Two names that read alike have
// the same canonical form, so uniqueness is decided on it.
func CanonicalOperatorName(s string) (string, error) {
	name, err := CanonicalReference(s)
	switch {
	case errors.Is(err, ErrReferenceEmpty), errors.Is(err, ErrReferenceLong):
		return "", ErrOperatorNameLength
	case err != nil:
		return "", err
	case utf8.RuneCountInString(name) > OperatorNameMax:
		return "", ErrOperatorNameLength
	case !singleScript(name):
		return "", ErrOperatorNameScripts
	}
	return name, nil
}

// Scripts of the single-script rule. Every character has one Unicode
// script; Common and Inherited ones (digits, punctuation, combining marks)
// go with any. The rule of UTS #39 §5.1 compares augmented script sets:
// Han writes Japanese and Korean too, so Han, Hiragana and Katakana are
// one script (Japanese), as Han and Hangul (Korean) and Han and Bopomofo
// (Han with Bopomofo) are.
const (
	scriptJapanese uint8 = 1 << iota
	scriptKorean
	scriptHanBopomofo
	scriptHan = scriptJapanese | scriptKorean | scriptHanBopomofo
)

// singleScript reports whether s's characters share a script (above).
func singleScript(s string) bool {
	var only *unicode.RangeTable // the one script met so far, outside the CJK sets
	cjk := uint8(0xff)           // the augmented CJK sets every character so far is in
	for _, r := range s {
		if unicode.In(r, unicode.Common, unicode.Inherited) {
			continue
		}
		var set uint8
		switch {
		case unicode.Is(unicode.Han, r):
			set = scriptHan
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			set = scriptJapanese
		case unicode.Is(unicode.Hangul, r):
			set = scriptKorean
		case unicode.Is(unicode.Bopomofo, r):
			set = scriptHanBopomofo
		}
		if set != 0 {
			if only != nil {
				return false
			}
			if cjk &= set; cjk == 0 {
				return false
			}
			continue
		}
		t := scriptOf(r)
		if cjk != 0xff || only != nil && t != only {
			return false
		}
		only = t
	}
	return true
}

// scriptOf is r's script table (nil for a character of none).
func scriptOf(r rune) *unicode.RangeTable {
	for _, t := range unicode.Scripts {
		if unicode.Is(t, r) {
			return t
		}
	}
	return nil
}
