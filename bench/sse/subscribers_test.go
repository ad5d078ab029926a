//go:build linux

package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The subscriber side (the child process).
//
// The subscribers stand in for clients on other machines, so they cost this
// machine's two cores as little as they can: each is a bare socket, and one
// reader per core waits on an epoll set of its share of them and reads
// whichever is ready, as a load generator such as wrk does. A reader that
// finds nothing ready sleeps pollEvery before it looks again rather than
// blocking in epoll_wait: a reader asleep in epoll_wait is woken by every
// delivery, which measured slower on the development machine
// (docs/benchmarks.md, "Rate stream fan-out"). A goroutine per subscriber (Go's net.Conn) costs more again: a
// goroutine wake-up and a scheduler pass per delivery, charged to the cores
// the server runs on. Polling delays a reading by up to pollEvery, which
// only adds to the delays measured.

// pollEvery is how long a reader that found nothing ready waits.
const pollEvery = time.Millisecond

// observation is the last rate_update a subscriber read.
type observation struct {
	rate string
	at   int64 // unix ns when its data line was read
}

// subscriber is one stream's socket and what its reader has parsed.
type subscriber struct {
	fd      int
	partial []byte // the bytes after the last complete line
	headOK  bool   // the status line was read and is 200
	opened  bool   // the opening rate_update was read
	last    atomic.Pointer[observation]
}

// runSubscribers opens the subscribers, reports READY and answers ROUND
// lines until QUIT or the end of its input.
func runSubscribers() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "sse bench subscribers: "+format+"\n", args...)
		return 1
	}
	address, keys := os.Getenv(addressEnv), strings.Split(os.Getenv(keysEnv), ",")
	n, err := strconv.Atoi(os.Getenv(subscribersEnv))
	if err != nil || n <= 0 || address == "" || len(keys)*streamsPerKey < n {
		return fail("bad environment")
	}
	if err := raiseFileLimit(uint64(n) + 256); err != nil {
		return fail("%v", err)
	}
	time.AfterFunc(sseBenchChildMax, func() { os.Exit(3) })
	to, err := socketAddress(address)
	if err != nil {
		return fail("%v", err)
	}

	subs := make([]*subscriber, n)
	readers := make([]*reader, runtime.NumCPU())
	for i := range readers {
		if readers[i], err = newReader(); err != nil {
			return fail("%v", err)
		}
	}
	var opened sync.WaitGroup
	opened.Add(n)
	var openErr atomic.Pointer[error]
	broken := make(chan struct{})
	failed := func(err error) {
		if openErr.CompareAndSwap(nil, &err) {
			close(broken)
		}
	}
	for _, r := range readers {
		go r.run(&opened, failed)
	}
	gate := make(chan struct{}, dialParallelism)
	var dialing sync.WaitGroup
	for i := range n {
		gate <- struct{}{}
		dialing.Add(1)
		go func() {
			defer func() { <-gate; dialing.Done() }()
			s, err := dial(to, keys[i/streamsPerKey])
			if err != nil {
				failed(err)
				opened.Done()
				return
			}
			subs[i] = s
			if err := readers[i%len(readers)].add(i, s); err != nil {
				failed(err)
				opened.Done()
			}
		}()
	}
	dialing.Wait()
	waited := make(chan struct{})
	go func() { opened.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-broken:
	case <-time.After(openMax):
		return fail("opening: not every subscriber read its opening rate within %s", openMax)
	}
	if e := openErr.Load(); e != nil {
		return fail("opening: %v", *e)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	fmt.Fprintf(out, "READY %d\n", n)
	out.Flush()

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 1 && fields[0] == "QUIT" {
			return 0
		}
		if len(fields) != 3 || fields[0] != "ROUND" {
			return fail("unknown command %q", in.Text())
		}
		rate := fields[1]
		start, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return fail("bad start %q", fields[2])
		}
		deadline := time.Now().Add(roundMax)
		missing := n
		for missing > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			missing = 0
			for _, s := range subs {
				if o := s.last.Load(); o == nil || o.rate != rate {
					missing++
				}
			}
		}
		if e := openErr.Load(); e != nil {
			return fail("reading: %v", *e)
		}
		fmt.Fprintf(out, "RESULT %d", missing)
		if missing == 0 {
			for _, s := range subs {
				fmt.Fprintf(out, " %d", (s.last.Load().at-start)/1000)
			}
		}
		out.WriteString("\n")
		out.Flush()
	}
	return 0
}

// socketAddress is address (host:port, a literal IP) as a socket address.
func socketAddress(address string) (syscall.Sockaddr, error) {
	a, err := net.ResolveTCPAddr("tcp", address)
	if err != nil {
		return nil, err
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		return &syscall.SockaddrInet4{Port: a.Port, Addr: [4]byte(ip4)}, nil
	}
	return &syscall.SockaddrInet6{Port: a.Port, Addr: [16]byte(a.IP.To16())}, nil
}

// dial connects a socket to to and sends the stream request with key; the
// socket is left non-blocking for a reader.
func dial(to syscall.Sockaddr, key string) (*subscriber, error) {
	family := syscall.AF_INET
	if _, ok := to.(*syscall.SockaddrInet6); ok {
		family = syscall.AF_INET6
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	request := []byte("GET /api/v1/partners/marketplace/rates/stream?from=NGN&to=USDT HTTP/1.1\r\n" +
		"Host: bench\r\nAuthorization: Bearer " + key + "\r\nAccept: text/event-stream\r\n\r\n")
	// A blocking connect and write: the request is far smaller than the
	// socket's buffer.
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &syscall.Timeval{Sec: 30})
	err = syscall.Connect(fd, to)
	for err == syscall.EINTR {
		err = syscall.Connect(fd, to)
	}
	if err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("connect: %w", err)
	}
	for len(request) > 0 {
		w, err := syscall.Write(fd, request)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			_ = syscall.Close(fd)
			return nil, fmt.Errorf("write: %w", err)
		}
		request = request[w:]
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	return &subscriber{fd: fd}, nil
}

// reader reads the subscribers of one epoll set.
type reader struct {
	epfd int
	mu   sync.Mutex
	subs map[int32]*subscriber // by index
}

func newReader() (*reader, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	return &reader{epfd: epfd, subs: make(map[int32]*subscriber)}, nil
}

// add makes r read s, subscriber number i.
func (r *reader) add(i int, s *subscriber) error {
	r.mu.Lock()
	r.subs[int32(i)] = s
	r.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(i)}
	if err := syscall.EpollCtl(r.epfd, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// run reads every ready subscriber until the process exits; each one's
// opening rate marks it opened; a failure ends the run, reported once.
// Level-triggered: a subscriber with more than buf holds is ready again.
func (r *reader) run(opened *sync.WaitGroup, failed func(error)) {
	events := make([]syscall.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		k, err := syscall.EpollWait(r.epfd, events, 0)
		if err == syscall.EINTR || (err == nil && k == 0) {
			time.Sleep(pollEvery)
			continue
		}
		if err != nil {
			failed(fmt.Errorf("epoll_wait: %w", err))
			return
		}
		for _, ev := range events[:k] {
			r.mu.Lock()
			s := r.subs[ev.Fd]
			r.mu.Unlock()
			if err := s.read(buf, opened); err != nil {
				failed(fmt.Errorf("subscriber %d: %w", ev.Fd, err))
				return
			}
		}
	}
}

// errEnded is a stream the server ended.
var errEnded = errors.New("the server ended the stream")

// read reads what s's socket holds and records the last rate_update in it.
func (s *subscriber) read(buf []byte, opened *sync.WaitGroup) error {
	w, err := syscall.Read(s.fd, buf)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return nil
	}
	if err != nil {
		return err
	}
	if w == 0 {
		return errEnded
	}
	at := time.Now().UnixNano()
	data := buf[:w]
	if len(s.partial) > 0 {
		data = append(s.partial, data...)
	}
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break
		}
		line := data[:nl]
		data = data[nl+1:]
		if !s.headOK {
			if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
				return fmt.Errorf("status line %q", line)
			}
			s.headOK = true
			continue
		}
		if rate, ok := rateOf(line); ok {
			s.last.Store(&observation{rate: string(rate), at: at})
			if !s.opened {
				s.opened = true
				opened.Done()
			}
		}
	}
	if len(data) > 4<<10 {
		return fmt.Errorf("a line of more than 4 KiB")
	}
	s.partial = append(s.partial[:0], data...)
	return nil
}

// rateOf is the rate in a rate_update's data line.
func rateOf(line []byte) ([]byte, bool) {
	const marker = `"rate":`
	if !bytes.HasPrefix(line, []byte("data: ")) {
		return nil, false
	}
	i := bytes.Index(line, []byte(marker))
	if i < 0 {
		return nil, false // a heartbeat
	}
	rest := line[i+len(marker):]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}
