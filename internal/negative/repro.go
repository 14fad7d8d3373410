package negative

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// curl renders a planned request as a shell command that sends exactly
// its bytes: the body as one shell word, a large value written by the
// shell instead of spelled out, bytes that are not printable UTF-8 as
// $'\xNN' escapes.
func (r *run) curl(pl Planned) string {
	req := r.request(pl)
	body := req.RawBody
	req.RawBody = nil
	line := r.T.Curl(req)
	if body == nil {
		return line
	}
	return line + " --data-binary " + ShellBody(pl.Base, pl.Built)
}

const bigMarker = "\x00conform-big\x00"

// ShellBody renders b's body as one shell word.
func ShellBody(base Base, b Built) string {
	for i, m := range b.Muts {
		bg, ok := m.Value.(big)
		if !ok || m.Whole != "" {
			continue
		}
		if m.Size > 0 {
			bg.n = m.Size
		}
		ms := slices.Clone(b.Muts)
		ms[i].Value = raw(bigMarker)
		ms[i].Size = 0
		enc := Apply(base, ms).Body
		before, after, ok := bytes.Cut(enc, []byte(bigMarker))
		if !ok {
			break
		}
		return shellLit(before) + bigExpr(bg) + shellLit(after)
	}
	return shellLit(b.Body)
}

// bigExpr is a shell expansion that writes a big value.
func bigExpr(b big) string {
	switch b.kind {
	case "string":
		return fmt.Sprintf(`'"'"$(head -c %d /dev/zero | tr '\0' x)"'"'`, b.n)
	case "array":
		item := []byte(`"x"`)
		if b.item != nil {
			item = encode(b.item)
		}
		return fmt.Sprintf(`'['"$(yes %s | head -n %d | paste -sd, -)"']'`, shellLit(item), b.n)
	default:
		return fmt.Sprintf(`"$(head -c %d /dev/zero | tr '\0' '[')$(head -c %d /dev/zero | tr '\0' ']')"`, b.n, b.n)
	}
}

// shellLit quotes bytes as one shell word: '…' when they are printable
// UTF-8, $'…' with escapes otherwise. An empty literal is ”.
func shellLit(b []byte) string {
	if utf8.Valid(b) && printable(string(b)) {
		return "'" + strings.ReplaceAll(string(b), "'", `'\''`) + "'"
	}
	var sb strings.Builder
	sb.WriteString("$'")
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		case r == '\\' || r == '\'':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	sb.WriteString("'")
	return sb.String()
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
