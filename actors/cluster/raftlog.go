package cluster

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// raftLogger is hashicorp/raft's logger (hclog.Logger) over the service's
// slog logger, so Raft's lines have the same schema as the service's own
// (time, level, msg, and the logger's attributes: oja serve's carries
// "node") plus "component":"raft" (hclog's JSON used @level and @message
// and named no node). Levels:
// Trace is slog's Debug-4; the others map one to one. A line below the
// level (Open's RaftLogLevel) is dropped before it is formatted.
//
// Raft names keys of its own that the service's logger may carry already
// ("node": Raft's own Raft struct, where oja serve's logger carries the
// node's id): each of Raft's keys is written as "raft_<key>" (raftKey), so
// a line never holds one key twice — log pipelines keep one of two
// duplicates at random.
type raftLogger struct {
	l       *slog.Logger
	name    string
	level   *atomic.Int32 // hclog.Level, shared by the loggers derived with With and Named
	implied []any
}

// newRaftLogger returns Raft's logger writing through l at level and
// above.
func newRaftLogger(l *slog.Logger, level hclog.Level) hclog.Logger {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	lv := new(atomic.Int32)
	lv.Store(int32(level))
	return &raftLogger{l: l, name: "raft", level: lv}
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (r *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < r.GetLevel() {
		return
	}
	attrs := make([]any, 0, 2+len(r.implied)+len(args))
	attrs = append(attrs, "component", r.name)
	attrs = appendRaftArgs(attrs, r.implied)
	attrs = appendRaftArgs(attrs, args)
	r.l.Log(context.Background(), slogLevel(level), msg, attrs...)
}

// appendRaftArgs appends Raft's key-value pairs to attrs, each key as
// raftKey names it; a value with no key (an odd count, Raft's mistake) is
// kept under "raft_extra".
func appendRaftArgs(attrs, args []any) []any {
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			return append(attrs, "raft_extra", args[i])
		}
		key, ok := args[i].(string)
		if !ok {
			key = "extra"
		}
		attrs = append(attrs, raftKey(key), args[i+1])
	}
	return attrs
}

// raftKey is the key a key of Raft's is written under: "raft_" before it,
// so none is the service's own ("node", "err", …).
func raftKey(k string) string { return "raft_" + k }

func (r *raftLogger) Trace(msg string, args ...any) { r.Log(hclog.Trace, msg, args...) }
func (r *raftLogger) Debug(msg string, args ...any) { r.Log(hclog.Debug, msg, args...) }
func (r *raftLogger) Info(msg string, args ...any)  { r.Log(hclog.Info, msg, args...) }
func (r *raftLogger) Warn(msg string, args ...any)  { r.Log(hclog.Warn, msg, args...) }
func (r *raftLogger) Error(msg string, args ...any) { r.Log(hclog.Error, msg, args...) }

func (r *raftLogger) IsTrace() bool { return r.GetLevel() <= hclog.Trace }
func (r *raftLogger) IsDebug() bool { return r.GetLevel() <= hclog.Debug }
func (r *raftLogger) IsInfo() bool  { return r.GetLevel() <= hclog.Info }
func (r *raftLogger) IsWarn() bool  { return r.GetLevel() <= hclog.Warn }
func (r *raftLogger) IsError() bool { return r.GetLevel() <= hclog.Error }

func (r *raftLogger) ImpliedArgs() []any { return r.implied }

func (r *raftLogger) With(args ...any) hclog.Logger {
	c := *r
	c.implied = append(append([]any(nil), r.implied...), args...)
	return &c
}

func (r *raftLogger) Name() string { return r.name }

func (r *raftLogger) Named(name string) hclog.Logger {
	c := *r
	c.name = r.name + "." + name
	return &c
}

func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *r
	c.name = name
	return &c
}

func (r *raftLogger) SetLevel(level hclog.Level) { r.level.Store(int32(level)) }
func (r *raftLogger) GetLevel() hclog.Level      { return hclog.Level(r.level.Load()) }

func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

// StandardWriter logs each line written to it: at the level its "[LEVEL]"
// prefix names when opts.InferLevels, else at Info.
func (r *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	infer := opts != nil && opts.InferLevels
	return writerFunc(func(p []byte) (int, error) {
		for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
			msg, level := string(line), hclog.Info
			if infer {
				for _, l := range []struct {
					prefix string
					level  hclog.Level
				}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info}, {"[WARN]", hclog.Warn}, {"[ERR]", hclog.Error}, {"[ERROR]", hclog.Error}} {
					if rest, ok := strings.CutPrefix(msg, l.prefix); ok {
						msg, level = strings.TrimSpace(rest), l.level
						break
					}
				}
			}
			r.Log(level, msg)
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
