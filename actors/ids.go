package actors

import (
	"bufio"
	"crypto/rand"
	"io"
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// IDSource makes random identifiers and references. It is the one place
// randomness enters: the engine receives ids as inputs, so replay is
// deterministic. Exported for tools that write logs the service could have
// written (the benchmark's generator, from a seeded reader).
type IDSource struct {
	mu sync.Mutex
	r  *bufio.Reader
	// scratch is where read reads, under mu, before copying to the
	// caller: a caller's buffer handed to the reader escapes to the heap
	// (a reference's was 16 bytes of garbage, two a quote, left between
	// the quotes' live strings of the same size class).
	scratch [64]byte
}

// NewIDSource reads its randomness from r; nil means crypto/rand.
func NewIDSource(r io.Reader) *IDSource {
	if r == nil {
		r = rand.Reader
	}
	return &IDSource{r: bufio.NewReaderSize(r, 4096)}
}

func (s *IDSource) read(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(b) > 0 {
		chunk := s.scratch[:min(len(b), len(s.scratch))]
		if _, err := io.ReadFull(s.r, chunk); err != nil {
			panic("actors: random source failed: " + err.Error())
		}
		b = b[copy(b, chunk):]
	}
}

// UUID returns a random (version 4) UUID.
func (s *IDSource) UUID() [16]byte {
	var id [16]byte
	s.read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// referenceAlphabet is Crockford's base32: no I, L, O or U, so references
// survive being read aloud and typed into a bank transfer.
const referenceAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Reference returns prefix + n random characters of referenceAlphabet,
// at most engine.RefBytesMax in all (it panics on more: the callers'
// prefixes and lengths are constants).
// NB: references are random, not checked for uniqueness: allocation
// references carry 60 bits (n = 12) and pay-in references 50 (n = 10), so a
// collision within the retention window is vanishingly unlikely, and every
// reference is also tied to a unique quote id.
func (s *IDSource) Reference(prefix string, n int) engine.Ref {
	var stack [engine.RefBytesMax]byte
	buf := append(stack[:0], prefix...)[:len(prefix)+n]
	random := buf[len(prefix):]
	s.read(random)
	for i := range random {
		random[i] = referenceAlphabet[random[i]&31]
	}
	r, _ := engine.MakeRef(buf)
	return r
}
