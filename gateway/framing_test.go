package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// exchangeRaw writes raw bytes on a new connection to addr and reads every
// response the server sends until it closes the connection (or the
// deadline passes: closed reports which).
func exchangeRaw(t *testing.T, addr string, raw []byte) (responses []*http.Response, bodies [][]byte, closed bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	r := bufio.NewReader(conn)
	for {
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			var ne net.Error
			return responses, bodies, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
				!(errors.As(err, &ne) && ne.Timeout())
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		responses, bodies = append(responses, res), append(bodies, body)
	}
}

// A smuggling probe: a request framed both by
// Content-Length and chunked, whose Content-Length bytes hold a second,
// authenticated create. Answered once with 400 and the connection closed:
// the second request never runs.
func TestSmugglingContentLengthWithTransferEncoding(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "victim")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNGHS, "accra", "0.0085", "1000000")
	addr := strings.TrimPrefix(s.URL, "http://")
	smuggle := func(target, contentType string, body []byte) []byte {
		inner := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			target, p.SandboxKey, contentType, len(body), body)
		outer := append([]byte("0\r\n\r\n"), inner...)
		return fmt.Appendf(nil, "POST /livez HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", len(outer), outer)
	}
	jsonBody := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"GHS","amount":1000,"rate":0.000001,"amountDirection":"source"}`)
	xmlBody := []byte(fxInstr("NGN", "GHS", "1000", "0.000001", "SELL"))
	for _, tc := range []struct {
		name, target, ctype string
		body                []byte
	}{
		{"JSON create smuggled", intentPath, "application/json", jsonBody},
		{"XML initiate smuggled", "/api/v1/partners/fx/trades", "application/xml", xmlBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Log.LastSeq()
			responses, bodies, closed := exchangeRaw(t, addr, smuggle(tc.target, tc.ctype, tc.body))
			if len(responses) != 1 {
				t.Fatalf("%d responses, want exactly one (the smuggled request must not run)", len(responses))
			}
			if responses[0].StatusCode != http.StatusBadRequest || !bytes.Contains(bodies[0], []byte("VALIDATION_ERROR")) {
				t.Errorf("answer %d %s, want 400 VALIDATION_ERROR", responses[0].StatusCode, bodies[0])
			}
			if !closed {
				t.Error("the connection stayed open after ambiguous framing")
			}
			if after := s.Log.LastSeq(); after != before {
				t.Errorf("the log grew from %d to %d: the smuggled request ran", before, after)
			}
		})
	}

	// The same ambiguity on an FX route is answered in XML.
	inner := []byte("0\r\n\r\n")
	raw := fmt.Appendf(nil, "POST /api/v1/partners/fx/trades HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s",
		p.SandboxKey, len(inner), inner)
	responses, bodies, closed := exchangeRaw(t, addr, raw)
	if len(responses) != 1 || responses[0].StatusCode != http.StatusBadRequest || !closed {
		t.Fatalf("FX route: %d responses, closed %v; want one 400 and the connection closed", len(responses), closed)
	}
	m := &fxmsg.MsgRjct{}
	if err := xml.Unmarshal(bodies[0], m); err != nil || m.Rsn.RjctgPtyRsn != "VALIDATION_ERROR" {
		t.Errorf("FX route answered %s (%v), want a MsgRjct VALIDATION_ERROR", bodies[0], err)
	}
}

// A header that must appear once is refused when repeated: two
// Authorization headers used to pick the first credential silently.
func TestRepeatedHeadersRefused(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	a, b := s.NewPartner(t, "a"), s.NewPartner(t, "b")
	addr := strings.TrimPrefix(s.URL, "http://")
	for _, tc := range []struct{ name, headers string }{
		{"two Authorization", "Authorization: Bearer " + a.SandboxKey + "\r\nAuthorization: Bearer " + b.SandboxKey + "\r\n"},
		{"Authorization in two cases", "Authorization: Bearer " + a.SandboxKey + "\r\nauthorization: Bearer " + a.SandboxKey + "\r\n"},
		{"two Idempotency-Key", "Authorization: Bearer " + a.SandboxKey + "\r\nIdempotency-Key: x\r\nIdempotency-Key: y\r\n"},
		{"two X-Service-Source", "Authorization: Bearer " + a.SandboxKey + "\r\nX-Service-Source: x\r\nX-Service-Source: y\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "GET /api/v1/partners/balances HTTP/1.1\r\nHost: x\r\n" + tc.headers + "\r\n"
			responses, bodies, _ := exchangeRaw(t, addr, []byte(raw))
			if len(responses) != 1 || responses[0].StatusCode != http.StatusBadRequest ||
				!bytes.Contains(bodies[0], []byte("VALIDATION_ERROR")) {
				t.Fatalf("got %d responses (first %v %s), want one 400 VALIDATION_ERROR", len(responses), status(responses), first(bodies))
			}
		})
	}
	// Once each, the same request is fine.
	raw := "GET /api/v1/partners/balances HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " + a.SandboxKey + "\r\nX-Service-Source: x\r\n\r\n"
	if responses, bodies, _ := exchangeRaw(t, addr, []byte(raw)); len(responses) != 1 || responses[0].StatusCode != http.StatusOK {
		t.Fatalf("a well-formed request: %v %s", status(responses), first(bodies))
	}
}

func status(rs []*http.Response) any {
	if len(rs) == 0 {
		return "no response"
	}
	return rs[0].StatusCode
}

func first(bs [][]byte) []byte {
	if len(bs) == 0 {
		return nil
	}
	return bs[0]
}

// Every refusal on the XML routes is a MsgRjct, the framing-level ones
// fasthttp makes before any route runs too (a probe found it).
func TestFXFramingRefusalsAreMsgRjct(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	addr := strings.TrimPrefix(s.URL, "http://")
	const target = "POST /api/v1/partners/fx/trades HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
	for _, tc := range []struct {
		name   string
		raw    string
		status int
	}{
		{"duplicate Content-Length", target + "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400},
		{"conflicting Content-Length", target + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nxy", 400},
		{"bad chunk size", target + "Transfer-Encoding: chunked\r\n\r\nzz\r\nx\r\n0\r\n\r\n", 400},
		{"NUL in a header", target + "X-Junk: a\x00b\r\nContent-Length: 0\r\n\r\n", 400},
		{"oversized header", target + "X-Junk: " + strings.Repeat("a", 9000) + "\r\nContent-Length: 0\r\n\r\n", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			responses, bodies, _ := exchangeRaw(t, addr, []byte(tc.raw))
			if len(responses) == 0 {
				t.Fatal("no answer")
			}
			res, body := responses[0], bodies[0]
			if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/xml") {
				t.Fatalf("got %d %q %s, want %d and a MsgRjct", res.StatusCode, res.Header.Get("Content-Type"), body, tc.status)
			}
			m := &fxmsg.MsgRjct{}
			if err := xml.Unmarshal(body, m); err != nil || m.XMLName.Local != "MsgRjct" || m.Rsn.RjctgPtyRsn == "" {
				t.Errorf("body %s (%v), want a MsgRjct with a reason", body, err)
			}
		})
	}
}
