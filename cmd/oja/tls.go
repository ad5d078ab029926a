package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
)

// listenerCert is a listener's certificate and key files (--tls-cert and
// --tls-key, --admin-tls-cert and --admin-tls-key), loaded at start and
// again on SIGHUP: rotating a certificate is replacing the files and
// sending SIGHUP, with no restart and no dropped connection (a handshake
// after the reload gets the new one; a reload that fails keeps the old one
// and says why).
type listenerCert struct {
	certFile, keyFile string
	mu                sync.RWMutex
	cert              *tls.Certificate
}

// loadListenerCert loads the pair, or returns nil when neither is given.
func loadListenerCert(certFile, keyFile string) (*listenerCert, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	c := &listenerCert{certFile: certFile, keyFile: keyFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *listenerCert) reload() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s, key %s: %w", c.certFile, c.keyFile, err)
	}
	c.mu.Lock()
	c.cert = &cert
	c.mu.Unlock()
	return nil
}

// config is the listener's TLS: 1.2 at least, HTTP/1.1 (what fasthttp
// serves), the certificate as last loaded.
func (c *listenerCert) config() *tls.Config {
	if c == nil {
		return nil
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c.mu.RLock()
			defer c.mu.RUnlock()
			return c.cert, nil
		},
	}
}

// reloadCerts reloads every listener certificate (SIGHUP).
func reloadCerts(logger *slog.Logger, certs ...*listenerCert) {
	for _, c := range certs {
		if c == nil {
			continue
		}
		if err := c.reload(); err != nil {
			logger.Error("TLS certificate not reloaded; the previous one stays in use", "err", err)
			continue
		}
		logger.Info("TLS certificate reloaded", "cert", c.certFile)
	}
}
