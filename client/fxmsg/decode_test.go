package fxmsg_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/client/fxmsg"
)

// TestDecodeScenarios runs testdata/decode.txt (see its header).
func TestDecodeScenarios(t *testing.T) {
	path := filepath.Join("testdata", "decode.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(bytes.NewReader(raw))
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		root, ok := strings.CutPrefix(line, "decode ")
		if !ok {
			out.WriteString(line + "\n")
			continue
		}
		out.WriteString(line + "\n")
		var doc []string
		for lines.Scan() && lines.Text() != "----" {
			doc = append(doc, lines.Text())
		}
		var want []string
		for lines.Scan() && lines.Text() != "" {
			want = append(want, lines.Text())
		}
		input := strings.Join(doc, "\n")
		got := decodeResult(root, []byte(input))
		out.WriteString(input + "\n----\n" + got + "\n\n")
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("decode %s\n%s\ngot:  %s\nwant: %s", root, input, got, strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func decodeResult(root string, body []byte) string {
	var m any
	var err error
	switch root {
	case "FXTradInstr":
		m, err = fxmsg.DecodeFXTradInstr(body)
	case "FXTradAccptReq":
		m, err = fxmsg.DecodeFXTradAccptReq(body)
	default:
		return "unknown root " + root
	}
	if err != nil {
		return "error: " + refusal(err)
	}
	b, err := xml.Marshal(m)
	if err != nil {
		return "marshal: " + err.Error()
	}
	return "ok " + string(b)
}

func refusal(err error) string {
	var e *fxmsg.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return err.Error()
}

// TestDecodeLimits covers the limits that need large or binary inputs.
func TestDecodeLimits(t *testing.T) {
	deep := strings.Repeat("<a>", 5000) + strings.Repeat("</a>", 5000)
	var many strings.Builder
	for i := range fxmsg.ElementsMax {
		many.WriteString("<x" + strconv.Itoa(i) + "/>")
	}
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"over 64 KiB", []byte("<FXTradInstr>" + strings.Repeat(" ", fxmsg.BodyBytesMax) + "</FXTradInstr>"), fxmsg.ErrTooLarge.Error()},
		{"5000 levels", []byte("<FXTradInstr>" + deep + "</FXTradInstr>"), "elements are nested deeper than 16 levels"},
		{"too many elements", []byte("<FXTradInstr>" + many.String() + "</FXTradInstr>"), "the document has more than 256 elements"},
		{"invalid UTF-8", []byte("<FXTradInstr><AmtDrctn>\xff\xfe</AmtDrctn></FXTradInstr>"), "the body is not well-formed XML: invalid UTF-8"},
		{"NUL byte", []byte("<FXTradInstr><AmtDrctn>\x00</AmtDrctn></FXTradInstr>"), "the body is not well-formed XML: illegal character code U+0000"},
		{"empty", nil, "the body must be an <FXTradInstr> document"},
		{"white space only", []byte(" \n\t "), "the body must be an <FXTradInstr> document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := fxmsg.DecodeFXTradInstr(c.body)
			if err == nil {
				t.Fatalf("decoded; want refusal %q", c.want)
			}
			if got := refusal(err); got != c.want {
				t.Errorf("refusal: got %q, want %q", got, c.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refusal took %s", d)
			}
		})
	}
}

// TestDecodeAllowsLimits: exactly at each limit is still fine.
func TestDecodeAllowsLimits(t *testing.T) {
	body := "<FXTradInstr>" + strings.Repeat("<a>", fxmsg.DepthMax-1) + strings.Repeat("</a>", fxmsg.DepthMax-1) + "</FXTradInstr>"
	if _, err := fxmsg.DecodeFXTradInstr([]byte(body)); err != nil {
		t.Errorf("depth %d: %v", fxmsg.DepthMax, err)
	}
	var b strings.Builder
	b.WriteString("<FXTradInstr>")
	for i := 1; i < fxmsg.ElementsMax; i++ {
		b.WriteString("<x" + strconv.Itoa(i) + "/>")
	}
	b.WriteString("</FXTradInstr>")
	if _, err := fxmsg.DecodeFXTradInstr([]byte(b.String())); err != nil {
		t.Errorf("%d elements: %v", fxmsg.ElementsMax, err)
	}
	padded := "<FXTradInstr>" + strings.Repeat(" ", fxmsg.BodyBytesMax-len("<FXTradInstr></FXTradInstr>")) + "</FXTradInstr>"
	if _, err := fxmsg.DecodeFXTradInstr([]byte(padded)); err != nil {
		t.Errorf("%d bytes: %v", len(padded), err)
	}
}

// FuzzDecode: the decoders never panic, refuse only with an *Error or
// ErrTooLarge, and what they accept re-marshals and decodes to the same
// document.
func FuzzDecode(f *testing.F) {
	for _, d := range documents {
		if d.decode != nil {
			b, err := fxmsg.Append(nil, d.message)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "decode.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, chunk := range strings.Split(string(raw), "\ndecode ") {
		if _, rest, ok := strings.Cut(chunk, "\n"); ok {
			if doc, _, ok := strings.Cut(rest, "\n----"); ok {
				f.Add([]byte(doc))
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func([]byte) (any, error){decodeInstruction, decodeAcceptance} {
			m, err := decode(body)
			if err != nil {
				var e *fxmsg.Error
				if !errors.As(err, &e) && !errors.Is(err, fxmsg.ErrTooLarge) {
					t.Fatalf("refusal of type %T: %v", err, err)
				}
				continue
			}
			again, err := xml.Marshal(m)
			if err != nil {
				t.Fatalf("re-marshal: %v", err)
			}
			m2, err := decode(again)
			if err != nil {
				t.Fatalf("re-decode of %s: %v", again, err)
			}
			third, _ := xml.Marshal(m2)
			if !bytes.Equal(again, third) {
				t.Fatalf("not stable:\n%s\n%s", again, third)
			}
		}
	})
}
