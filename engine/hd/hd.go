// Package hd derives the deposit addresses of a token pay-in from an
// extended public key (BIP32), and encodes them per chain.
//
// The configured key is an account-level extended public key (an xpub);
// address i is its non-hardened child 0/i (the BIP44 external chain), so
// the service can derive every address but spend from none: the private
// key stays with whoever holds the funds (docs/operating.md, "Markets"). A private
// extended key is refused.
//
// Encodings, from the same 20 bytes — the last 20 of keccak-256 of the
// uncompressed public key without its 0x04 prefix:
//
//   - TRON: base58check of 0x41 ‖ the 20 bytes (checksum: the first 4
//     bytes of double SHA-256), e.g. T…
//   - ETHEREUM, BSC, POLYGON: 0x and the 20 bytes in hex, checksummed by
//     letter case (EIP-55).
//
// SOLANA addresses are ed25519 keys, which BIP32 over secp256k1 does not
// give: a SOLANA deposit key is refused.
//
// The curve, the derivation and the hashes are libraries'
// (github.com/btcsuite/btcd/btcutil/hdkeychain, its base58, and
// golang.org/x/crypto/sha3's keccak-256); this package only composes them.
package hd

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"golang.org/x/crypto/sha3"
)

// IndexMax is the largest derivation index: non-hardened children are
// below 2^31.
const IndexMax = hdkeychain.HardenedKeyStart - 1

// tronPrefix is the first byte of a TRON address.
const tronPrefix = 0x41

// testnetVersions are the version bytes of testnet extended public keys
// (SLIP-132: tpub, upub, vpub, Upub, Vpub).
var testnetVersions = map[string]bool{
	"\x04\x35\x87\xcf": true, "\x04\x4a\x52\x62": true, "\x04\x5f\x1c\xf6": true,
	"\x02\x42\x89\xef": true, "\x02\x57\x54\x83": true,
}

// Key is a parsed account-level extended public key.
type Key struct {
	external *hdkeychain.ExtendedKey // the key's child 0: the external chain
}

// ParseKey parses a mainnet extended public key (xpub, ypub, zpub). A
// private key, a testnet key (tpub…) or text that is not an extended key
// is refused with a message that names the problem (never the key).
func ParseKey(text string) (*Key, error) {
	k, err := hdkeychain.NewKeyFromString(text)
	if err != nil {
		return nil, fmt.Errorf("not an extended public key (BIP32): %v", err)
	}
	if k.IsPrivate() {
		return nil, errors.New("a private extended key: configure the account's extended public key (xpub) only")
	}
	if testnetVersions[string(k.Version())] {
		// The markets serve live money: a testnet key's addresses are
		// controlled by a test wallet, whatever chain they are used on.
		return nil, errors.New("a testnet extended key (tpub, upub, vpub): live deposits need the account's mainnet key (xpub)")
	}
	external, err := k.Derive(0)
	if err != nil {
		return nil, fmt.Errorf("deriving its external chain: %v", err)
	}
	return &Key{external: external}, nil
}

// CheckChain reports whether addresses for chain can be derived.
func CheckChain(chain string) error {
	switch chain {
	case "TRON", "ETHEREUM", "BSC", "POLYGON":
		return nil
	case "SOLANA":
		return errors.New("SOLANA addresses are ed25519 keys, which BIP32 over secp256k1 cannot derive")
	}
	return fmt.Errorf("unknown chain %q", chain)
}

// Address is the deposit address with derivation index i on chain.
func (k *Key) Address(chain string, i uint32) (string, error) {
	if i > IndexMax {
		return "", fmt.Errorf("index %d is hardened", i)
	}
	if err := CheckChain(chain); err != nil {
		return "", err
	}
	child, err := k.external.Derive(i)
	if err != nil {
		return "", err // one index in 2^127: BIP32 says skip it
	}
	pub, err := child.ECPubKey()
	if err != nil {
		return "", err
	}
	account := AccountBytes(pub.SerializeUncompressed())
	if chain == "TRON" {
		return TronAddress(account), nil
	}
	return ChecksumHex(account), nil
}

// AccountBytes is the last 20 bytes of keccak-256 of an uncompressed
// public key (65 bytes, 0x04 first) without its prefix.
func AccountBytes(uncompressed []byte) [20]byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(uncompressed[1:])
	var out [20]byte
	copy(out[:], h.Sum(nil)[12:])
	return out
}

// ChecksumHex is 0x and b in hex, each letter upper-case when the
// matching nibble of keccak-256 of the lower-case hex is 8 or more
// (EIP-55).
func ChecksumHex(b [20]byte) string {
	lower := hex.EncodeToString(b[:])
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(lower))
	digest := h.Sum(nil)
	var sb strings.Builder
	sb.WriteString("0x")
	for i, c := range lower {
		nibble := digest[i/2] >> 4
		if i%2 == 1 {
			nibble = digest[i/2] & 0x0f
		}
		if c >= 'a' && nibble >= 8 {
			c -= 'a' - 'A'
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

// TronAddress is the base58check form of a TRON account (0x41 first).
func TronAddress(account [20]byte) string { return base58.CheckEncode(account[:], tronPrefix) }

// TronAccount decodes a TRON address to its 20 account bytes, checking
// the base58check checksum and the 0x41 prefix.
func TronAccount(address string) ([20]byte, error) {
	payload, version, err := base58.CheckDecode(address)
	var out [20]byte
	switch {
	case err != nil:
		return out, err
	case version != tronPrefix || len(payload) != 20:
		return out, fmt.Errorf("not a TRON address: version %#x, %d bytes", version, len(payload))
	}
	copy(out[:], payload)
	return out, nil
}
