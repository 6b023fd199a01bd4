package reports

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// FuzzWriteJUnit holds the writer to one invariant: whatever text the
// results carry, the JUnit parses. a, b and c fill every string field the
// writer reads (textResults); sel picks states and options and limit the
// output cap, so cuts land anywhere.
func FuzzWriteJUnit(f *testing.F) {
	n := len(hostileTexts)
	for i, a := range hostileTexts {
		f.Add(a, hostileTexts[(i+1)%n], hostileTexts[(i+5)%n], uint8(i*37), uint16(i*7+1))
	}
	f.Fuzz(func(t *testing.T, a, b, c string, sel uint8, limit uint16) {
		var buf bytes.Buffer
		opt := JUnitOptions{TestcaseProperties: sel&0x80 != 0, MaxOutput: int(limit) + 1}
		if err := WriteJUnit(&buf, textResults(a, b, c, sel), opt); err != nil {
			t.Fatal(err)
		}
		if err := xmlCharError(buf.Bytes()); err != nil {
			t.Fatalf("%v\n%q", err, buf.String())
		}
		var doc junitSuites
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("the JUnit does not parse: %v\n%q", err, buf.String())
		}
		if len(doc.Suites) != 2 || doc.Suites[0].Name != "gdrcheck."+cleanText(a) || doc.Suites[0].Hostname != cleanText(a) {
			t.Fatalf("suites %d, first %q on %q; want 2, the first for node %q", len(doc.Suites), doc.Suites[0].Name, doc.Suites[0].Hostname, cleanText(a))
		}
		var names []string
		for _, tc := range doc.Suites[0].Cases {
			names = append(names, tc.Name)
		}
		for _, want := range []string{a, b, c} {
			if !strings.Contains("\x00"+strings.Join(names, "\x00")+"\x00", "\x00"+cleanText(want)+"\x00") {
				t.Fatalf("no testcase named %q in %q", cleanText(want), names)
			}
		}
		// Read back, every text is clean; CDATA's line ends come back as
		// XML normalises them.
		forEachString(reflect.ValueOf(doc), func(s string) {
			if cleanText(s) != s {
				t.Fatalf("read back an unclean %q", s)
			}
		})
	})
}

// forEachString calls fn with every exported string reachable from v.
func forEachString(v reflect.Value, fn func(string)) {
	switch v.Kind() {
	case reflect.String:
		fn(v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				forEachString(v.Field(i), fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			forEachString(v.Index(i), fn)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			forEachString(v.Elem(), fn)
		}
	}
}
