// Command oja runs the Oja currency exchange marketplace and its operator
// tools.
//
//	oja serve [flags]          run the service (oja serve --help)
//	oja admin <command> ...    call the admin API of a running service (oja admin help)
//	oja wal <command> ...      inspect a stopped service's log offline (oja wal help)
//	oja probe [URL]            one GET of URL (default the local /livez): exit 0 on 2xx
//	oja version                the module version, commit and Go version
//
// Exit status: 0 on success and for help; 2 for a usage error (an unknown
// command, a missing or bad flag or argument, named in one line); 1 for a
// failure; the wal tools document their own (3: the log is in use).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/gateway"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "admin":
		err = admin(os.Args[2:])
	case "wal":
		err = walCommand(os.Args[2:])
	case "probe":
		err = probe(os.Args[2:])
	case "cluster":
		err = clusterCommand(os.Args[2:])
	case "version", "--version":
		printVersion(os.Stdout)
		return
	case "help", "-h", "--help":
		usage(os.Stdout)
		return
	default:
		err = usageErrorf("unknown command %q (oja help lists them)", os.Args[1])
	}
	if err != nil {
		os.Exit(exitStatus(err, os.Stderr))
	}
}

// exitStatus reports err (unless it was already reported) and returns the
// exit status it calls for.
func exitStatus(err error, stderr io.Writer) int {
	var u usageError
	var code interface{ ExitStatus() int }
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0 // the usage went to stdout
	case errors.As(err, &u):
		fmt.Fprintln(stderr, "oja:", u.msg)
		return 2
	case errors.As(err, &code):
		return code.ExitStatus() // already reported
	}
	fmt.Fprintln(stderr, "oja:", err)
	return 1
}

// helpAsked reports whether any of args asks for help: -h, --help, -help
// or help, wherever it stands, so that a command asked for help never acts.
func helpAsked(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" })
}

// usageError is a mistake in the command line: one line, exit status 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// parseFlags parses args with fs: -h/--help prints fs's usage to stdout
// and returns flag.ErrHelp; any other problem is a usageError naming it.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer)) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage(os.Stdout)
		return flag.ErrHelp
	}
	return usageErrorf("%s: %v (%s --help)", fs.Name(), err, "oja "+fs.Name())
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `usage:
  oja serve [--listen :8080] [--admin-listen 127.0.0.1:8081] [--data ./data] [--demo] ...   (oja serve --help)
  oja serve --cluster FILE --node ID --cluster-tls DIR [--join] ...    one node of a cluster (docs/cluster.md)
  oja cluster certs --cluster FILE --out DIR [--node ID]               the certificates of mutual TLS between nodes
  oja admin <%s> ...   (oja admin help)
  oja wal <stats|dump|verify|replay|salvage> --data DIR ...            (oja wal help)
  oja probe [URL]                                                      GET URL (default the local /livez) once, exit 0 on 2xx (a container HEALTHCHECK)
  oja version
`, strings.Join(adminGroups(), "|"))
}

// adminGroups is the first words of the admin commands, in the usage's
// order, each once.
func adminGroups() []string {
	var groups []string
	for _, c := range adminCommands {
		if !slices.Contains(groups, c.words[0]) {
			groups = append(groups, c.words[0])
		}
	}
	return groups
}

// printVersion prints the module version, the commit it was built from
// (+modified for a modified tree) and the Go version, from the build
// information (the same oja_build_info shows on /metrics).
func printVersion(w io.Writer) {
	version, revision, goVersion := gateway.Build()
	fmt.Fprintf(w, "oja %s\ncommit %s\n%s\n", version, revision, goVersion)
}
