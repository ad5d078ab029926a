package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/oja-exchange/oja/actors/cluster"
)

// clusterCommand is `oja cluster certs --cluster FILE --out DIR`: the
// certificates of mutual TLS between nodes (actors/cluster/tls.go).
func clusterCommand(args []string) error {
	clusterUsage := func(w io.Writer) {
		fmt.Fprint(w, `usage: oja cluster certs --cluster FILE --out DIR [--node ID]

Writes the certificates nodes use to talk to each other over mutual TLS
(oja serve --cluster FILE --node ID --cluster-tls DIR): ca.pem and
ca-key.pem (made when DIR has none; otherwise DIR's CA signs), and for
every member of FILE (only member ID with --node) <id>.pem and
<id>-key.pem (ECDSA P-256, the node id as the certificate's Common Name;
keys mode 0600). Run it again to renew the node certificates; with --node
for a member being added. Copy ca.pem and each node's two files to that
node, never ca-key.pem.
`)
	}
	if len(args) == 0 {
		clusterUsage(os.Stderr)
		return usageErrorf("cluster: which command? (oja cluster help)")
	}
	// Help anywhere only helps: it never writes certificates.
	if helpAsked(args) {
		clusterUsage(os.Stdout)
		return nil
	}
	if args[0] != "certs" {
		return usageErrorf("cluster: unknown command %q (oja cluster help)", args[0])
	}
	fs := flag.NewFlagSet("cluster certs", flag.ContinueOnError)
	file := fs.String("cluster", "", "the cluster file (JSON) whose members get certificates")
	out := fs.String("out", "", "the directory the certificates go to")
	only := fs.String("node", "", "only this member's certificate (a member being added)")
	if err := parseFlags(fs, args[1:], func(w io.Writer) {
		clusterUsage(w)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}); err != nil {
		return err
	}
	if fs.NArg() > 0 || *file == "" || *out == "" {
		return usageErrorf("cluster certs: --cluster FILE and --out DIR (and --node ID), nothing else (oja cluster help)")
	}
	f, err := cluster.LoadFile(*file)
	if err != nil {
		return usageErrorf("cluster certs: %v", err)
	}
	members := f.Nodes
	if *only != "" {
		m, ok := f.Member(*only)
		if !ok {
			return usageErrorf("cluster certs: --node %q is not in %s", *only, *file)
		}
		members = []cluster.Member{m}
	}
	written, err := cluster.WriteCerts(*out, members, time.Now())
	if err != nil {
		return fmt.Errorf("cluster certs: %w", err)
	}
	for _, name := range written {
		fmt.Println(name)
	}
	return nil
}
