package reports

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Text from the results (kernel strings, NCCL and tool output, names from
// a results.json) may hold bytes XML 1.0 forbids or that are not UTF-8 at
// all, and one such byte makes Jenkins drop the whole JUnit file. So every
// string the JUnit writer and the HTML page print passes cleanText, once,
// on the finished document or page model (cleanStrings):
//
//   - a byte that starts no valid UTF-8 sequence becomes U+FFFD;
//   - a control character other than tab, newline and carriage return (C0,
//     DEL, C1) and a Unicode noncharacter (U+FFFE, U+FDD0, ...) become
//     their Go escape, `\x1b`, `\u0085`, `\U0001fffe`, so that a NUL or an
//     ANSI colour stays visible;
//   - everything else is kept as it is: clean text comes out unchanged.
//
// XML 1.0 forbids only C0 (bar tab, newline, carriage return), U+FFFE and
// U+FFFF; HTML also counts DEL, C1 and every noncharacter as errors. One
// rule for both means a text reads the same in Jenkins and on the page.

// cleanText applies the rule above to s.
func cleanText(s string) string {
	if textIsClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case mustEscape(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func textIsClean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || mustEscape(r) {
			return false
		}
		i += n
	}
	return true
}

func mustEscape(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20 || r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= 0xfdd0 && r <= 0xfdef || r&0xfffe == 0xfffe: // noncharacters
		return true
	}
	return false
}

func escapeRune(r rune) string {
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// cleanStrings applies cleanText to every string reachable from v, which
// must be settable (reflect.ValueOf(&doc).Elem()). Walking the whole value
// rather than naming fields means a field added to the JUnit document or
// the page model later is cleaned too. What it walks into it copies first
// (slices, maps, pointees), so a model sharing memory with the results (a
// *results.Band in a chart) never changes them. Unexported fields are
// neither encoded nor printed, and are left alone. The models are trees:
// nothing in them refers back to itself.
func cleanStrings(v reflect.Value) {
	if !v.CanSet() {
		if v.Kind() == reflect.Struct {
			// An unexported embedded struct: its exported fields are
			// promoted and printed.
			walkFields(v)
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !textIsClean(s) {
			v.SetString(cleanText(s))
		}
	case reflect.Struct:
		walkFields(v)
	case reflect.Array:
		for i := range v.Len() {
			cleanStrings(v.Index(i))
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v.Set(c)
		for i := range c.Len() {
			cleanStrings(c.Index(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		cleanStrings(c.Elem())
		v.Set(c)
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		cleanStrings(c)
		v.Set(c)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			cleanStrings(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			cleanStrings(e)
			c.SetMapIndex(k, e)
		}
		v.Set(c)
	}
}

func walkFields(v reflect.Value) {
	for i := range v.NumField() {
		cleanStrings(v.Field(i))
	}
}

// truncate cuts s to at most limit bytes at the start of a rune, so that
// no character is cut in half, and says how much it left out.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit, 0)
	for back := 0; back < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[... %d bytes trimmed]\n", len(s)-cut)
}
