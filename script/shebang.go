package script

import (
	"bytes"
	"errors"
	"strings"
)

// parseShebang reads an EVAL script's shebang line, `#!lua [flags=a,b]`,
// as Redis 7's evalExtractShebangFlags does: shebang is false for a
// script without one (Redis's compatibility mode, where the flags mean
// nothing), n the line's length without its newline.
func parseShebang(body []byte) (flags Flags, shebang bool, n int, err error) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return 0, false, 0, nil
	}
	n = bytes.IndexByte(body, '\n')
	if n < 0 {
		return 0, false, 0, errors.New("ERR Invalid script shebang")
	}
	parts := strings.Fields(string(body[:n]))
	if len(parts) == 0 || parts[0] != "#!lua" {
		engine := ""
		if len(parts) > 0 {
			engine = parts[0]
		}
		return 0, false, 0, errors.New("ERR Unexpected engine in script shebang: " + engine)
	}
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, false, 0, errors.New("ERR Unknown lua shebang option: " + p)
		}
		for _, name := range strings.Split(list, ",") {
			i := -1
			for j, f := range flagNames {
				if f == name {
					i = j
				}
			}
			if i < 0 {
				return 0, false, 0, errors.New("ERR Unexpected flag in script shebang: " + name)
			}
			flags |= 1 << i
		}
	}
	return flags, true, n, nil
}

// EvalFlags returns the flags of the script body, or of the loaded script
// sha (body nil), and whether it has a shebang line: without one (or not
// loaded) the flags mean nothing. err is a bad shebang's.
func (e *Engine) EvalFlags(sha string, body []byte) (Flags, bool, error) {
	if body != nil {
		f, ok, _, err := parseShebang(body)
		return f, ok, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.scripts[sha]
	if c == nil || !c.shebang {
		return 0, false, nil
	}
	return c.flags, true, nil
}
