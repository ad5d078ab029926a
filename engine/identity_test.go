package engine_test

import (
	"errors"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

func TestCanonicalTxHash(t *testing.T) {
	const hash = "34ce5a1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f"
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"bare", hash, true},
		{"0x", "0x" + hash, true},
		{"upper", "0X34CE5A1B0C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F", true},
		{"padded", " \t0x" + hash + "\n", true},
		{"short", hash[:63], false},
		{"long", hash + "0", false},
		{"not hex", "0x" + hash[:63] + "g", false},
		{"inner space", hash[:32] + " " + hash[32:63], false},
		{"0x only", "0x", false},
		{"empty", "", false},
	} {
		got, err := engine.CanonicalTxHash(tc.in)
		if tc.ok && (err != nil || got != hash) || !tc.ok && !errors.Is(err, engine.ErrTxHash) {
			t.Errorf("%s: CanonicalTxHash(%q) = %q, %v", tc.name, tc.in, got, err)
		}
	}
	if got := engine.TxHashText(engine.ChainEthereum, hash); got != "0x"+hash {
		t.Errorf("ETHEREUM spells %q", got)
	}
	if got := engine.TxHashText(engine.ChainTron, hash); got != hash {
		t.Errorf("TRON spells %q", got)
	}
	a := engine.ChainIdentity(engine.ChainEthereum, hash, 0)
	if b := engine.ChainIdentity(engine.ChainTron, hash, 0); a == b {
		t.Error("one hash on two chains is one identity")
	}
	if b := engine.ChainIdentity(engine.ChainEthereum, hash, 1); a == b {
		t.Error("two log indexes of one transaction are one identity")
	}
}

func TestCanonicalReference(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"plain", "NIP-VAR-1", "nip-var-1", nil},
		{"padded", "  NIP-VAR-1 \t", "nip-var-1", nil},
		{"tab inside", "NIP\tVAR 1", "nip var 1", nil},
		{"runs of space", "NIP  \u00a0 VAR", "nip var", nil},
		{"hyphen", "NIP\u2010VAR\u20111", "nip-var-1", nil},
		{"en and em dash", "NIP\u2013VAR\u20141", "nip-var-1", nil},
		{"minus sign is not a dash", "NIP\u2212VAR", "nip\u2212var", nil},
		{"fullwidth", "ＮＩＰ-１", "nip-1", nil},
		{"ligature", "ﬁx-1", "fix-1", nil},
		{"sharp s", "STRASSE-ß", "strasse-ss", nil},
		{"zero-width space", "NIP\u200b-1", "", engine.ErrReferenceFormat},
		{"bell", "NIP\a1", "", engine.ErrReferenceFormat},
		{"empty", "", "", engine.ErrReferenceEmpty},
		{"spaces only", " \t ", "", engine.ErrReferenceEmpty},
		{"invalid UTF-8", "NIP\xff", "", engine.ErrReferenceUTF8},
		{"129 characters", string(make129()), "", engine.ErrReferenceLong},
	} {
		got, err := engine.CanonicalReference(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: CanonicalReference(%q) = %q, %v; want %q, %v", tc.name, tc.in, got, err, tc.want, tc.err)
		}
	}
	in, _ := engine.InboundIdentity(engine.CurrencyNGN, "NIP-1")
	out, _ := engine.OutboundIdentity(engine.CurrencyNGN, "nip-1")
	ghs, _ := engine.InboundIdentity(engine.CurrencyGHS, "nip-1")
	if in == out || in == ghs {
		t.Errorf("money in, out and in another currency share an identity: %v %v %v", in, out, ghs)
	}
	if in.String() != "in:NGN:nip-1" || out.String() != "out:NGN:nip-1" {
		t.Errorf("identities read %q and %q", in, out)
	}
}

func make129() []rune {
	r := make([]rune, 129)
	for i := range r {
		r[i] = 'é'
	}
	return r
}

func TestCanonicalOperatorName(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"plain", "Ada", "ada", nil},
		{"padded root", "root ", "root", nil},
		{"Cyrillic o", "r\u043e\u043et", "", engine.ErrOperatorNameScripts},
		{"Greek omicron", "r\u03bfot", "", engine.ErrOperatorNameScripts},
		{"all Cyrillic", "\u0410\u0434\u0430", "\u0430\u0434\u0430", nil},
		{"digits go with any", "ada 2", "ada 2", nil},
		{"Japanese mixes Han and kana", "山田たろう", "山田たろう", nil},
		{"Korean mixes Han and Hangul", "金민수", "金민수", nil},
		{"kana and Hangul do not", "たろう민수", "", engine.ErrOperatorNameScripts},
		{"zero-width space", "ro\u200bot", "", engine.ErrReferenceFormat},
		{"empty", "  ", "", engine.ErrOperatorNameLength},
		{"65 characters", "a234567890123456789012345678901234567890123456789012345678901234x", "", engine.ErrOperatorNameLength},
	} {
		got, err := engine.CanonicalOperatorName(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: CanonicalOperatorName(%q) = %q, %v; want %q, %v", tc.name, tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestReceiptIDRoundTrip(t *testing.T) {
	for _, id := range []engine.ReceiptID{{Mode: engine.ModeLive, Seq: 1}, {Mode: engine.ModeSandbox, Seq: 1 << 40}} {
		got, ok := engine.ParseReceiptID(id.String())
		if !ok || got != id {
			t.Errorf("ParseReceiptID(%q) = %v, %v", id, got, ok)
		}
	}
	for _, bad := range []string{"", "rcpt_", "rcpt_x000000000000001", "rcpt_l0", "rcpt_l000000000000000", "txn_l000000000000001", "rcpt_l00000000000000A"} {
		if _, ok := engine.ParseReceiptID(bad); ok {
			t.Errorf("ParseReceiptID(%q) took it", bad)
		}
	}
}
