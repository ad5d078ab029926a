//go:build linux

package sse

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// loopbackPairs is the number of socket pairs BenchmarkLoopbackDelivery
// opens: both ends are in this process, so 10,000 would need more files
// than many hard limits allow, and the cost per delivery is about the same
// from 1,000 pairs up.
const loopbackPairs = 4_000

// BenchmarkLoopbackDelivery is what the kernel alone charges for one
// delivery of a rate_update-sized frame over loopback TCP on this machine:
// no server, no Go poller, no parsing. Each iteration writes 200 bytes to
// every pair's one end with write(2), in turn, then reads them at the other
// end with read(2), in turn. It reports the time of one write and of one
// read, and what a fan-out to 10,000 streams costs the machine's cores in
// these two system calls alone (cpu-ms/10k): divided by the number of
// cores, a lower bound on how soon the last of 10,000 subscribers on the
// same machine can have read its frame.
func BenchmarkLoopbackDelivery(b *testing.B) {
	if err := raiseFileLimit(2*loopbackPairs + 256); err != nil {
		b.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	senders, receivers := make([]int, loopbackPairs), make([]int, loopbackPairs)
	for i := range loopbackPairs {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		senders[i], receivers[i] = rawFD(b, s), rawFD(b, c)
	}
	defer func() {
		for i := range loopbackPairs {
			_ = syscall.Close(senders[i])
			_ = syscall.Close(receivers[i])
		}
	}()
	frame := make([]byte, 200)
	buf := make([]byte, 4096)
	var writing, reading time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, fd := range senders {
			if n, err := syscall.Write(fd, frame); err != nil || n != len(frame) {
				b.Fatalf("write: %d, %v", n, err)
			}
		}
		wrote := time.Now()
		for _, fd := range receivers {
			if n, err := syscall.Read(fd, buf); err != nil || n != len(frame) {
				b.Fatalf("read: %d, %v", n, err)
			}
		}
		writing += wrote.Sub(start)
		reading += time.Since(wrote)
	}
	b.StopTimer()
	deliveries := float64(b.N * loopbackPairs)
	write := float64(writing.Nanoseconds()) / deliveries
	read := float64(reading.Nanoseconds()) / deliveries
	b.ReportMetric(write/1e3, "write-us")
	b.ReportMetric(read/1e3, "read-us")
	b.ReportMetric((write+read)*10_000/1e6, "cpu-ms/10k")
}

// rawFD takes c's socket out of Go's poller: a blocking descriptor of its
// own (c is closed), so that the benchmark's system calls are the only
// ones.
func rawFD(b *testing.B, c net.Conn) int {
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		b.Fatal(err)
	}
	_ = c.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	if err := syscall.SetNonblock(fd, false); err != nil {
		b.Fatal(err)
	}
	return fd
}
