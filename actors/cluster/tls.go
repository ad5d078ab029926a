package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Mutual TLS between nodes (spec §15.3): every Raft connection is TLS
// 1.3, both ends present a certificate signed by the cluster's CA, and the
// node id a certificate names (its Common Name) must be a member of the
// cluster's Raft configuration (before a node has one: of the cluster file,
// or, on a node that is joining, any id the CA signed, since the leader
// adding it dials in first); the one a node dials must be the member at
// that address. A removed member's certificate is refused from the moment
// its removal is in the configuration.
// A stranger who reaches a Raft port without such a certificate gets no
// byte of Raft read: the handshake fails first.
//
// The files, in the directory --cluster-tls names (`oja cluster certs`
// writes them): ca.pem, and for node <id> <id>.pem and <id>-key.pem. The
// CA's key (ca-key.pem) is only needed to sign certificates, never by a
// running node.

// NodeTLS is a node's certificate and the cluster CA it trusts.
type NodeTLS struct {
	cert tls.Certificate
	cas  *x509.CertPool
	file *File
	self string
	// member, once the node's Raft runs, says whether an id may connect
	// (Node.mayConnect); until then, members of the file may.
	member atomic.Pointer[func(id string) bool]
}

func (t *NodeTLS) allowed(id string) bool {
	if f := t.member.Load(); f != nil {
		return (*f)(id)
	}
	_, ok := t.file.Member(id)
	return ok
}

// LoadTLS reads node self's certificate and the CA from dir.
func LoadTLS(dir string, file *File, self string) (*NodeTLS, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster TLS: %s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, self+".pem"), filepath.Join(dir, self+"-key.pem"))
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: node %s: %w", self, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: node %s: %w", self, err)
	}
	if leaf.Subject.CommonName != self {
		return nil, fmt.Errorf("cluster TLS: %s.pem names node %q, not %q", self, leaf.Subject.CommonName, self)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: cas, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("cluster TLS: %s.pem is not signed by ca.pem for client and server use: %w", self, err)
	}
	cert.Leaf = leaf
	return &NodeTLS{cert: cert, cas: cas, file: file, self: self}, nil
}

// ServerConfig is what a node's Raft listener accepts: TLS 1.3, a client
// certificate of the cluster CA naming a member.
func (t *NodeTLS) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    t.cas,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("cluster TLS: the peer presented no certificate")
			}
			id := cs.PeerCertificates[0].Subject.CommonName
			if !t.allowed(id) {
				return fmt.Errorf("cluster TLS: the peer's certificate names %q, not a member of the cluster", id)
			}
			return nil
		},
	}
}

// ClientConfig is how a node dials member id: TLS 1.3, its own
// certificate, and the peer's certificate must be the CA's for node id.
func (t *NodeTLS) ClientConfig(id string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		// NB: the chain and the node id are verified in VerifyConnection
		// against the cluster CA, not against a host name: a node is
		// known by its id, wherever it runs.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("cluster TLS: the peer presented no certificate")
			}
			leaf := cs.PeerCertificates[0]
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: t.cas, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				return fmt.Errorf("cluster TLS: node %s's certificate: %w", id, err)
			}
			if leaf.Subject.CommonName != id {
				return fmt.Errorf("cluster TLS: dialled node %s, its certificate names %q", id, leaf.Subject.CommonName)
			}
			return nil
		},
	}
}

// certValidity is how long `oja cluster certs` makes certificates last:
// the CA ten years, a node's two (renew by running it again: the CA in the
// directory signs the new ones).
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	nodeValidity = 2 * 365 * 24 * time.Hour
)

// WriteCerts writes, in dir, a certificate for each of members, signed by
// the CA in dir (ca.pem, ca-key.pem), which it makes first when dir has
// none. Keys are ECDSA P-256, written with mode 0600. It returns the files
// written.
func WriteCerts(dir string, members []Member, now time.Time) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var written []string
	ca, caKey, err := loadCA(dir)
	if errors.Is(err, os.ErrNotExist) {
		if ca, caKey, err = newCA(now); err == nil {
			err = writePair(dir, "ca", ca.Raw, caKey)
			written = append(written, "ca.pem", "ca-key.pem")
		}
	}
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: m.ID, Organization: []string{"oja cluster"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(nodeValidity),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			DNSNames:     []string{m.ID},
		}
		if host, _, err := net.SplitHostPort(m.Raft); err == nil {
			if ip := net.ParseIP(host); ip != nil {
				tmpl.IPAddresses = []net.IP{ip}
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, host)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		if err := writePair(dir, m.ID, der, key); err != nil {
			return nil, err
		}
		written = append(written, m.ID+".pem", m.ID+"-key.pem")
	}
	return written, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "oja cluster CA", Organization: []string{"oja cluster"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s has ca.pem but its key: %w", dir, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: ca.pem and ca-key.pem: %w", dir, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, nil, fmt.Errorf("%s: ca.pem is not an ECDSA CA certificate", dir)
	}
	return cert, key, nil
}

// writePair writes name.pem (the certificate) and name-key.pem (0600).
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}
