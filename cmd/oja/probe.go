package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// probe is `oja probe [--timeout 2s] [--insecure] [URL]`: one GET, exit 0
// when it answers 2xx, 1 otherwise (with the reason on stderr). It is the
// container image's HEALTHCHECK, which has no shell and no curl; URL
// defaults to the public listener's liveness route.
func probe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 2*time.Second, "give up after this long")
	insecure := fs.Bool("insecure", false, "accept any TLS certificate (a probe of an https listener by its loopback address)")
	probeUsage := func(w io.Writer) {
		fmt.Fprint(w, `usage: oja probe [--timeout 2s] [--insecure] [URL]

GET URL (default http://127.0.0.1:8080/livez) once: exit 0 on a 2xx answer,
1 otherwise, 2 for a usage error. A container's HEALTHCHECK.
`)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, probeUsage); err != nil {
		return err
	}
	target := "http://127.0.0.1:8080/livez"
	switch fs.NArg() {
	case 0:
	case 1:
		target = fs.Arg(0)
	default:
		return usageErrorf("probe: one URL at most, got %d arguments (oja probe --help)", fs.NArg())
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("probe: %q is not an http or https URL (oja probe --help)", target)
	}
	if *timeout <= 0 {
		return usageErrorf("probe: --timeout must be positive, got %v", *timeout)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if *insecure {
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // opt-in, for a loopback probe
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", target, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe %s: %s", target, resp.Status)
	}
	fmt.Fprintln(os.Stdout, "ok", resp.Status)
	return nil
}
