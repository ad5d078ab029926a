package main

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// startProfiler serves Go's profiler on $OJA_PPROF_LISTEN (e.g.
// 127.0.0.1:6060) when set. Off by default: it exposes internals, so bind it
// to loopback only.
func startProfiler(logger *slog.Logger) {
	addr := os.Getenv("OJA_PPROF_LISTEN")
	if addr == "" {
		return
	}
	go func() {
		logger.Info("profiler listening", "addr", addr)
		if err := http.ListenAndServe(addr, nil); err != nil {
			logger.Error("profiler stopped", "err", err)
		}
	}()
}
