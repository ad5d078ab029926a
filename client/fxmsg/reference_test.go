package fxmsg_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
)

// referenceDecode is the reference reader the fast one is compared with:
// encoding/xml, strict, no entity table, refusing other encodings, in two
// passes. The first walks the tokens and applies the package doc's rules;
// the second unmarshals into v by reflection. Slow and obviously right
// (it was the production reader first).
func referenceDecode(body []byte, v any, root, messageType string) error {
	if len(body) > fxmsg.BodyBytesMax {
		return fxmsg.ErrTooLarge
	}
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	if err := referenceCheck(body, root, fxmsg.NamespacePrefix+messageType); err != nil {
		return err
	}
	return xml.Unmarshal(body, v)
}

func referenceDecoder(body []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	d.CharsetReader = func(label string, _ io.Reader) (io.Reader, error) {
		return nil, fmt.Errorf("the document must be encoded in UTF-8, not %s", label)
	}
	return d
}

func referenceCheck(body []byte, root, space string) error {
	d := referenceDecoder(body)
	var (
		depth, elements  int
		tokens           int
		closed, seenRoot bool
		rootSpace        string
		children         [][]string
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if !seenRoot {
				return errors.New("no root")
			}
			return nil
		}
		if err != nil {
			return err
		}
		firstToken := tokens == 0
		tokens++
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case closed:
				return errors.New("second root")
			case elements+1 > fxmsg.ElementsMax:
				return errors.New("too many elements")
			case len(t.Attr) > fxmsg.AttributesMax:
				return errors.New("too many attributes")
			case depth+1 > fxmsg.DepthMax:
				return errors.New("too deep")
			}
			elements++
			depth++
			if depth == 1 {
				seenRoot = true
				if t.Name.Local != root || t.Name.Space != "" && t.Name.Space != space {
					return errors.New("wrong root")
				}
				rootSpace = t.Name.Space
			} else {
				if t.Name.Space != rootSpace {
					return errors.New("foreign namespace")
				}
				siblings := &children[len(children)-1]
				if slices.Contains(*siblings, t.Name.Local) {
					return errors.New("duplicate")
				}
				*siblings = append(*siblings, t.Name.Local)
			}
			children = append(children, nil)
		case xml.EndElement:
			depth--
			children = children[:len(children)-1]
			closed = depth == 0
		case xml.CharData:
			if depth == 0 && len(bytes.Trim(t, " \t\r\n")) > 0 {
				return errors.New("text outside the root")
			}
		case xml.Directive:
			return errors.New("directive")
		case xml.ProcInst:
			// XML 1.0 §2.8 and §2.6, which encoding/xml does not enforce:
			// the declaration only opens the document, names version 1.0,
			// and other targets spelled xml are reserved.
			if strings.EqualFold(t.Target, "xml") {
				if t.Target != "xml" || !firstToken {
					return errors.New("misplaced or reserved XML declaration")
				}
				if !bytes.Contains(t.Inst, []byte("version")) {
					return errors.New("XML declaration without a version")
				}
			}
		}
	}
}

// differential compares the fast reader with the reference on one body:
// what the fast one accepts, the reference accepts with the same value;
// what the reference accepts, the fast one accepts too, unless it holds a
// non-ASCII name (the one documented difference).
func differential(t *testing.T, body []byte) {
	t.Helper()
	for _, c := range []struct {
		root string
		fast func([]byte) (any, error)
		ref  func() any
	}{
		{"FXTradInstr", decodeInstruction, func() any { return &fxmsg.FXTradInstr{} }},
		{"FXTradAccptReq", decodeAcceptance, func() any { return &fxmsg.FXTradAccptReq{} }},
	} {
		got, fastErr := c.fast(body)
		want := c.ref()
		refErr := referenceDecode(body, want, c.root, fxmsg.TypeTradeInstruction)
		switch {
		case fastErr == nil && refErr != nil:
			t.Fatalf("%s: fast reader accepts what the reference refuses (%v): %q", c.root, refErr, body)
		case fastErr == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%s: values differ for %q:\nfast %s\nref  %s", c.root, body, dump(got), dump(want))
		case fastErr != nil && refErr == nil && refusal(fastErr) != "element and attribute names must be ASCII":
			t.Fatalf("%s: fast reader refuses (%v) what the reference accepts: %q", c.root, fastErr, body)
		}
	}
}

func dump(v any) string {
	b, _ := xml.Marshal(v)
	return fmt.Sprintf("%s %+v", b, v)
}

// TestDifferentialCorpus runs the comparison on every document of the
// tests: the goldens, the decode scenarios and a set of XML corner cases.
func TestDifferentialCorpus(t *testing.T) {
	for _, body := range differentialCorpus(t) {
		differential(t, body)
	}
}

func differentialCorpus(t testing.TB) [][]byte {
	var corpus [][]byte
	for _, d := range documents {
		b, err := fxmsg.Append(nil, d.message)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, b)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "decode.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range strings.Split(string(raw), "\ndecode ") {
		if _, rest, ok := strings.Cut(chunk, "\n"); ok {
			if doc, _, ok := strings.Cut(rest, "\n----"); ok {
				corpus = append(corpus, []byte(doc))
			}
		}
	}
	for _, s := range []string{
		"\xEF\xBB\xBF<FXTradInstr/>",
		"<FXTradInstr><AmtDrctn>a\r\nb\rc</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn><![CDATA[a\r\n]]]]><![CDATA[>&amp;]]></AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>]]></AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>]]&gt;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&#xD800;&#65;&#x10FFFF;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&#x110000;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&#X41;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&#;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&#65</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&amp</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>&é;</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn>S<x>no</x>E<!-- c -->LL</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><TradAmts><TradgCcyAmt Ccy='A' p:Ccy=\"B\" xmlns:p='u'>1<b/>2</TradgCcyAmt></TradAmts></FXTradInstr>",
		"<FXTradInstr><TradAmts><TradgCcyAmt xmlns:Ccy='x'>1</TradgCcyAmt></TradAmts></FXTradInstr>",
		"<FXTradInstr><TradAmts><TradgCcyAmt Ccy='&lt;\r\n'>1</TradgCcyAmt></TradAmts></FXTradInstr>",
		"<FXTradInstr a='1'b='2'/>",
		"<FXTradInstr a='<'/>",
		"<FXTradInstr a=1/>",
		"<FXTradInstr a/>",
		"<FXTradInstr a='1' / >",
		"<FXTradInstr></FXTradInstr >",
		"<FXTradInstr></FXTradInstr x>",
		"<p:FXTradInstr xmlns:p='urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05'></p:FXTradInstr>",
		"<p:FXTradInstr xmlns:p='urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05'></FXTradInstr>",
		"<p:FXTradInstr xmlns:p=''><p:AmtDrctn>x</p:AmtDrctn></p:FXTradInstr>",
		"<FXTradInstr xmlns='urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05'><AmtDrctn xmlns=''>x</AmtDrctn></FXTradInstr>",
		"<FXTradInstr><AmtDrctn xmlns=''>x</AmtDrctn><xmlns/></FXTradInstr>",
		"<FXTradInstr xmlns:p='abc' xmlns:abc='urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05'><p:AmtDrctn/></FXTradInstr>",
		"<xml:FXTradInstr/>", "<xmlns:FXTradInstr/>", "<:FXTradInstr/>", "<FXTradInstr:/>", "<a:b:FXTradInstr/>",
		"<FXTradInstr><:AmtDrctn/></FXTradInstr>", "<FXTradInstr><1a/></FXTradInstr>", "<FXTradInstr><-a/></FXTradInstr>",
		"<FXTradInstr><é/></FXTradInstr>", "<FXTradInstr é='1'/>",
		"<?xml version='1.0' encoding='utf-8'?><FXTradInstr/>",
		"<?xml version='1.1'?><FXTradInstr/>",
		"<?xml encoding=\"UTF-16\"?><FXTradInstr/>",
		"<FXTradInstr/><?xml version='1.0' encoding='latin1'?>",
		"<?pi data?><FXTradInstr><?pi ?></FXTradInstr><?pi?>",
		"<?1pi?><FXTradInstr/>", "<? pi?><FXTradInstr/>", "<?pi", "<!--", "<!-- a -- b -->", "<!-- a --->", "<!--->-->",
		"<FXTradInstr><!-- ok --></FXTradInstr><!---->",
		"<![CDATA[ ]]><FXTradInstr/>", "<![CDATA[x]]><FXTradInstr/>", "<FXTradInstr/><![CDATA[", "<FXTradInstr><![CDAT",
		"<FXTradInstr><![cdata[x]]></FXTradInstr>",
		" \t\r\n<FXTradInstr/> \n", "&#32;<FXTradInstr/>", "&#160;<FXTradInstr/>", "\u00a0<FXTradInstr/>",
		"<FXTradInstr/></FXTradInstr>", "</FXTradInstr>", "<", "<FXTradInstr", "<FXTradInstr ", "<FXTradInstr a", "<FXTradInstr a=",
		"<FXTradInstr a='", "<FXTradInstr/", "<FXTradInstr>&", "<FXTradInstr>&#", "<FXTradInstr>&#x", "<FXTradInstr>&#x4",
		"<FXTradInstr>&l", "<FXTradInstr></", "<FXTradInstr></FXTradInstr", "< FXTradInstr/>", "<>",
		"<FXTradInstr>\x00</FXTradInstr>", "<FXTradInstr>\x7f</FXTradInstr>", "<FXTradInstr>\xef\xbf\xbe</FXTradInstr>",
		"<FXTradInstr a='\x01'/>", "<FXTradInstr><!-- \x00 \xff --></FXTradInstr>",
		"<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>A</AcctNm><AcctNb/><BkCd></BkCd><X/></BkDstn><Y/></SttlmDstn><AcctId/></FXTradAccptReq>",
	} {
		corpus = append(corpus, []byte(s))
	}
	return corpus
}

// FuzzDifferential compares the two readers on fuzzed bodies.
func FuzzDifferential(f *testing.F) {
	for _, b := range differentialCorpus(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		differential(t, body)
	})
}
