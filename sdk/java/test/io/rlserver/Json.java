package io.rlserver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A tiny JSON parser for the conformance file: objects, arrays, strings, integers, booleans, null. */
final class Json {
    private final String s;
    private int i;

    private Json(String s) { this.s = s; }

    static Object parse(String s) {
        Json j = new Json(s);
        Object v = j.value();
        j.ws();
        if (j.i != s.length()) throw new IllegalArgumentException("trailing JSON at " + j.i);
        return v;
    }

    private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

    private Object value() {
        ws();
        char c = s.charAt(i);
        switch (c) {
            case '{': {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') { i++; return m; }
                for (;;) {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                    ws();
                    if (s.charAt(i) == ',') { i++; continue; }
                    expect('}');
                    return m;
                }
            }
            case '[': {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') { i++; return l; }
                for (;;) {
                    l.add(value());
                    ws();
                    if (s.charAt(i) == ',') { i++; continue; }
                    expect(']');
                    return l;
                }
            }
            case '"': return string();
            case 't': i += 4; return Boolean.TRUE;
            case 'f': i += 5; return Boolean.FALSE;
            case 'n': i += 4; return null;
            default: {
                int st = i;
                while (i < s.length() && "-0123456789".indexOf(s.charAt(i)) >= 0) i++;
                if (i < s.length() && ".eE".indexOf(s.charAt(i)) >= 0) throw new IllegalArgumentException("non-integer number at " + st);
                return Long.parseLong(s.substring(st, i));
            }
        }
    }

    private void expect(char c) {
        if (s.charAt(i) != c) throw new IllegalArgumentException("expected " + c + " at " + i);
        i++;
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        for (;;) {
            char c = s.charAt(i++);
            if (c == '"') return b.toString();
            if (c == '\\') {
                char e = s.charAt(i++);
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 't' -> b.append('\t');
                    case 'r' -> b.append('\r');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> { b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; }
                    default -> b.append(e);
                }
            } else b.append(c);
        }
    }

    /** Renders a value canonically (map keys sorted), for comparing a step's expectation with what came back. */
    static String render(Object v) {
        if (v == null) return "null";
        if (v instanceof String str) return '"' + str.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
        if (v instanceof Map<?, ?> m) {
            StringBuilder b = new StringBuilder("{");
            m.keySet().stream().map(String::valueOf).sorted().forEach(k -> {
                if (b.length() > 1) b.append(',');
                b.append(render(k)).append(':').append(render(m.get(k)));
            });
            return b.append('}').toString();
        }
        if (v instanceof List<?> l) {
            StringBuilder b = new StringBuilder("[");
            for (Object o : l) {
                if (b.length() > 1) b.append(',');
                b.append(render(o));
            }
            return b.append(']').toString();
        }
        return String.valueOf(v);
    }
}
