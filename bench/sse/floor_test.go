//go:build linux

package sse

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFanoutFloor is BenchmarkFanout's floor on this machine: the same
// subscribers (the same child, the same request and parsing) served by a
// bare writer that does nothing but the writes. It answers each request
// with a chunked event-stream head and a rate_update, and a rate change is
// one rate_update frame (an id, the event, a data line of the gateway's
// size) written as one chunk to each connection in turn, on one goroutine,
// with the gateway's send buffer. Run with BenchmarkFanout, in one run, the
// two give the server's cost over the system calls' own.
func BenchmarkFanoutFloor(b *testing.B) {
	runFanout(b, floor.get(b, startFloor), false)
}

// floorKey is the one key the floor's subscribers send (it checks none).
const floorKey = "floor"

// startFloor listens on loopback and returns the bare writer's fixture.
func startFloor(tb *fixtureTB) (address string, keys []string, f *fanoutFixture) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	w := &bareWriter{rate: "0.000625000000"}
	done := make(chan struct{})
	go func() { defer close(done); w.accept(ln) }()
	tb.Cleanup(func() {
		_ = ln.Close()
		<-done
		w.close()
	})
	keys = make([]string, (subscribersWanted(tb)+streamsPerKey-1)/streamsPerKey)
	for i := range keys {
		keys[i] = floorKey
	}
	f = &fanoutFixture{streams: w.count}
	f.change = func(round int) (string, time.Time, error) {
		rate := fmt.Sprintf("0.000625%06d", round)
		start := time.Now()
		return rate, start, w.send(rate)
	}
	return ln.Addr().String(), keys, f
}

// bareWriter holds the floor's connections.
type bareWriter struct {
	mu    sync.Mutex
	conns []net.Conn
	rate  string
	id    uint64
	frame []byte
}

// accept answers every connection on ln until ln closes.
func (w *bareWriter) accept(ln net.Listener) {
	var opening sync.WaitGroup
	defer opening.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		opening.Add(1)
		go func() { defer opening.Done(); w.open(c) }()
	}
}

// open reads c's request head, then writes the response head and the
// current rate and keeps c.
func (w *bareWriter) open(c net.Conn) {
	r := bufio.NewReaderSize(c, 1024)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			_ = c.Close()
			return
		}
		if len(line) <= 2 {
			break
		}
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, sendBufferBytes)
			})
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
	if _, err := c.Write(w.appendFrame(b, w.rate)); err != nil {
		_ = c.Close()
		return
	}
	w.conns = append(w.conns, c)
}

// sendBufferBytes is the gateway's sseSendBufferBytes.
const sendBufferBytes = 16 << 10

// appendFrame appends a rate_update carrying rate as one chunk.
func (w *bareWriter) appendFrame(b []byte, rate string) []byte {
	w.id++
	f := append(w.frame[:0], "id: "...)
	f = strconv.AppendUint(f, w.id, 10)
	f = append(f, "\nevent: rate_update\ndata: {\"from\":\"NGN\",\"to\":\"USDT\",\"rate\":"...)
	f = append(f, rate...)
	f = append(f, ",\"timestamp\":\"2026-11-28T17:00:00.000Z\",\"source\":\"CONSENSUS\",\"percentChange24h\":0}\n\n"...)
	w.frame = f
	b = strconv.AppendInt(b, int64(len(f)), 16)
	b = append(b, "\r\n"...)
	b = append(b, f...)
	return append(b, "\r\n"...)
}

// send writes a rate_update carrying rate to every connection, one write
// each, a frame of its own each (the ids differ, as the gateway's do).
func (w *bareWriter) send(rate string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rate = rate
	buf := make([]byte, 0, 512)
	for _, c := range w.conns {
		if _, err := c.Write(w.appendFrame(buf[:0], rate)); err != nil {
			return err
		}
	}
	return nil
}

func (w *bareWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns)
}

func (w *bareWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		_ = c.Close()
	}
	w.conns = nil
}
