package io.rmqstore.conformance.common;

import java.util.List;
import java.util.Map;

/** Minimal deterministic JSON writer: maps keep their iteration order, one value per line. */
public final class Json {
    private Json() {
    }

    /** Renders maps, lists, strings, numbers, booleans and null; anything else is rejected. */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        append(out, value, 0);
        return out.append('\n').toString();
    }

    private static void append(StringBuilder out, Object value, int depth) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            appendString(out, s);
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            appendMap(out, map, depth);
        } else if (value instanceof List<?> list) {
            appendList(out, list, depth);
        } else {
            throw new IllegalArgumentException("not a JSON value: " + value.getClass());
        }
    }

    private static void appendMap(StringBuilder out, Map<?, ?> map, int depth) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        out.append("{\n");
        int i = 0;
        for (Map.Entry<?, ?> e : map.entrySet()) {
            indent(out, depth + 1);
            appendString(out, String.valueOf(e.getKey()));
            out.append(": ");
            append(out, e.getValue(), depth + 1);
            out.append(++i < map.size() ? ",\n" : "\n");
        }
        indent(out, depth);
        out.append('}');
    }

    private static void appendList(StringBuilder out, List<?> list, int depth) {
        if (list.isEmpty()) {
            out.append("[]");
            return;
        }
        boolean scalars = list.stream().allMatch(v -> v == null || v instanceof Number || v instanceof Boolean);
        if (scalars) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                out.append(i == 0 ? "" : ", ").append(list.get(i));
            }
            out.append(']');
            return;
        }
        out.append("[\n");
        for (int i = 0; i < list.size(); i++) {
            indent(out, depth + 1);
            append(out, list.get(i), depth + 1);
            out.append(i + 1 < list.size() ? ",\n" : "\n");
        }
        indent(out, depth);
        out.append(']');
    }

    private static void indent(StringBuilder out, int depth) {
        out.append("  ".repeat(depth));
    }

    /** Escapes quotes, backslashes and every char outside printable ASCII as \\uXXXX (UTF-16 units). */
    private static void appendString(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
