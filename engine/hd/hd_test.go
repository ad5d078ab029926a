package hd

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
)

// BIP32's published test vectors (bips/bip-0032.mediawiki).
const (
	vector1Master = "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8"
	vector1Xprv   = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
	vector2Master = "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB"
	// vector2Child0 is vector 2's m/0: a non-hardened child of the
	// master, what a Key's external chain is.
	vector2Child0 = "xpub69H7F5d8KSRgmmdJg2KhpAK8SR3DjMwAdkxj3ZuxV27CprR9LgpeyGmXUbC6wb7ERfvrnKZjXoUmmDznezpbZb7ap6r1D3tgFxHmwMkQTPH"
)

func TestDerivationMatchesBIP32Vectors(t *testing.T) {
	k, err := ParseKey(vector2Master)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.external.String(); got != vector2Child0 {
		t.Fatalf("vector 2 m/0: got %s, want %s", got, vector2Child0)
	}
	k1, err := ParseKey(vector1Master)
	if err != nil {
		t.Fatalf("vector 1's master public key: %v", err)
	}
	seen := map[string]bool{}
	for i := uint32(0); i < 20; i++ {
		tron, err := k1.Address("TRON", i)
		if err != nil {
			t.Fatal(err)
		}
		eth, err := k1.Address("ETHEREUM", i)
		if err != nil {
			t.Fatal(err)
		}
		// The TRON address decodes (checksum, 0x41) to the same 20 bytes
		// the EVM address spells.
		account, err := TronAccount(tron)
		if err != nil {
			t.Fatalf("index %d: %s: %v", i, tron, err)
		}
		if got := "0x" + hex.EncodeToString(account[:]); !strings.EqualFold(got, eth) {
			t.Errorf("index %d: TRON %s holds %s, EVM address %s", i, tron, got, eth)
		}
		if !strings.HasPrefix(tron, "T") || len(tron) != 34 {
			t.Errorf("index %d: TRON address %q", i, tron)
		}
		if ChecksumHex(account) != eth {
			t.Errorf("index %d: %s is not EIP-55 checksummed", i, eth)
		}
		for _, chain := range []string{"BSC", "POLYGON"} {
			if a, _ := k1.Address(chain, i); a != eth {
				t.Errorf("index %d: %s address %s, want the EVM %s", i, chain, a, eth)
			}
		}
		if seen[tron] {
			t.Errorf("index %d: %s repeats an earlier index's address", i, tron)
		}
		seen[tron] = true
	}
}

func TestEIP55Vectors(t *testing.T) {
	// From EIP-55's specification.
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		raw, err := hex.DecodeString(strings.ToLower(want[2:]))
		if err != nil {
			t.Fatal(err)
		}
		var b [20]byte
		copy(b[:], raw)
		if got := ChecksumHex(b); got != want {
			t.Errorf("ChecksumHex: got %s, want %s", got, want)
		}
	}
	// The generator point (private key 1) has the well-known address
	// 0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf.
	g, _ := hex.DecodeString("0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798" +
		"483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8")
	if got := ChecksumHex(AccountBytes(g)); got != "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf" {
		t.Errorf("address of G: got %s", got)
	}
}

func TestParseKeyRefusals(t *testing.T) {
	master, err := hdkeychain.NewKeyFromString(vector1Master)
	if err != nil {
		t.Fatal(err)
	}
	tpub, err := master.CloneWithVersion([]byte{0x04, 0x35, 0x87, 0xcf}) // the same key as a testnet tpub
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tpub.String(), "tpub") {
		t.Fatalf("the test's testnet key is %.4s…", tpub.String())
	}
	for _, tc := range []struct{ name, key, want string }{
		{"a private key", vector1Xprv, "a private extended key"},
		{"a testnet key", tpub.String(), "a testnet extended key"},
		{"not a key", "xpub-not-a-key", "not an extended public key"},
		{"a bad checksum", vector1Master[:len(vector1Master)-1] + "9", "not an extended public key"},
	} {
		_, err := ParseKey(tc.key)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the error repeats the key", tc.name)
		}
	}
	k, _ := ParseKey(vector1Master)
	if _, err := k.Address("SOLANA", 0); err == nil {
		t.Errorf("a SOLANA address was derived")
	}
	if _, err := k.Address("TRON", IndexMax+1); err == nil {
		t.Errorf("a hardened index was derived")
	}
}
