// Command oja runs the Oja currency exchange marketplace and its operator
// tools.
//
//	oja serve [flags]          run the service (see --help)
//	oja admin <command> ...    call the admin API of a running service
//	oja wal <command> ...      inspect a stopped service's log offline
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
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
	case "help", "-h", "--help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		var code interface{ ExitStatus() int }
		if errors.As(err, &code) {
			os.Exit(code.ExitStatus()) // already reported
		}
		fmt.Fprintln(os.Stderr, "oja:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  oja serve [--listen :8080] [--admin-listen 127.0.0.1:8081] [--data ./data] [--demo] ...
  oja admin <clients|keys|pools|accounts|ledger|backup> ...   (oja admin help)
  oja wal <stats|dump|verify|replay> --data DIR ...            (oja wal help)
`)
}
