package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"github.com/oja-exchange/oja/internal/poll"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for 127.0.0.1 named cn (and
// its key) to dir, and returns the files and the certificate.
func writeCert(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+"-key.pem")
	for _, f := range []struct {
		name, kind string
		der        []byte
	}{{certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.name, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestListenerTLS: --tls-cert/--tls-key and --admin-tls-cert/
// --admin-tls-key serve HTTPS (TLS 1.2 at least) on each listener with its
// own certificate; plain HTTP gets no answer there; SIGHUP reloads a
// replaced certificate without a restart; bad flag combinations are usage
// errors (exit 2) naming the problem.
func TestListenerTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pubCert, pubKey, pub := writeCert(t, dir, "public")
	admCert, admKey, adm := writeCert(t, dir, "admin")
	pool := x509.NewCertPool()
	pool.AddCert(pub)
	pool.AddCert(adm)
	srv := newOjaServer(t, "--tls-cert", pubCert, "--tls-key", pubKey, "--admin-tls-cert", admCert, "--admin-tls-key", admKey)
	srv.tls = &tls.Config{RootCAs: pool}
	srv.start()

	served := func(addr string) *x509.Certificate {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS13})
		if err != nil {
			t.Fatalf("TLS to %s: %v", addr, err)
		}
		defer conn.Close()
		if v := conn.ConnectionState().Version; v < tls.VersionTLS12 {
			t.Errorf("%s negotiated TLS version %x", addr, v)
		}
		return conn.ConnectionState().PeerCertificates[0]
	}
	if got := served(srv.public); got.Subject.CommonName != "public" {
		t.Errorf("public listener serves %q", got.Subject.CommonName)
	}
	if got := served(srv.admin); got.Subject.CommonName != "admin" {
		t.Errorf("admin listener serves %q", got.Subject.CommonName)
	}
	if _, err := tls.Dial("tcp", srv.public, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/pools", crashAdminToken, nil)
	mustDo(t, client, 401, "GET", srv.publicURL()+"/api/v1/partners/balances", "", nil)
	plain := &http.Client{Timeout: 2 * time.Second}
	if res, err := plain.Get("http://" + srv.public + "/livez"); err == nil && res.StatusCode == 200 {
		t.Error("plain HTTP answered on the TLS listener")
	}

	// Rotation: replace the files, SIGHUP, the next handshake gets the new one.
	pubCert2, pubKey2, pub2 := writeCert(t, dir, "public-2")
	pool.AddCert(pub2)
	for _, f := range [][2]string{{pubCert2, pubCert}, {pubKey2, pubKey}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 5*time.Second, "SIGHUP reloads the public certificate", func() bool {
		return served(srv.public).Subject.CommonName == "public-2"
	})
	srv.stop()

	bin := ojaBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", pubCert}, "--tls-cert and --tls-key go together"},
		{[]string{"--admin-tls-key", admKey}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", pubCert, "--tls-key", admKey}, "--tls-cert: TLS certificate"},
	} {
		_, stderr, code := runOja(t, bin, childEnv(), append([]string{"serve", "--data", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestServeDataDirInUse: a second `oja serve` on a data dir a running one
// holds is refused with exit status 3 (as the wal tools), naming the data
// dir and its lock, before it listens or changes anything.
func TestServeDataDirInUse(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t)
	srv.start()
	_, stderr, code := runOja(t, srv.bin, srv.env, "serve", "--data", srv.data, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	if code != 3 || !strings.Contains(stderr, "is in use by another running oja") || !strings.Contains(stderr, filepath.Join(srv.data, "serve.lock")) {
		t.Errorf("a second serve on the data dir: exit %d, stderr %q; want 3, naming the lock", code, stderr)
	}
	mustDo(t, newHTTPClient(), 200, "GET", srv.adminURL()+"/admin/v1/pools", crashAdminToken, nil) // the first serves on
}
