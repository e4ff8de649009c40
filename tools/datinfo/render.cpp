#include "render.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace datinfo {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_length(const std::string &s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0)
        n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    // Overlong forms, surrogates and values beyond U+10FFFF are invalid too.
    static const std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

// One escaper for JSON and YAML double-quoted scalars: both accept \" \\ \n \t and \uXXXX.
std::string quoted(const std::string &raw) {
    const std::string s = valid_utf8(raw);
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

std::string scalar_json(const Node &n) {
    switch (n.kind()) {
        case Node::Kind::Null:
            return "null";
        case Node::Kind::Bool:
            return n.as_bool() ? "true" : "false";
        case Node::Kind::Int:
            return std::to_string(n.as_int());
        default:
            return quoted(n.as_string());
    }
}

std::string pad(int depth) {
    return std::string(static_cast<std::size_t>(depth) * 2, ' ');
}

void json(const Node &n, int depth, std::string &out) {
    if (n.kind() == Node::Kind::Map) {
        if (n.items().empty()) {
            out += "{}";
            return;
        }
        out += "{\n";
        bool first = true;
        for (const auto &[k, v] : n.items()) {
            if (!first) out += ",\n";
            first = false;
            out += pad(depth + 1) + quoted(k) + ": ";
            json(v, depth + 1, out);
        }
        out += "\n" + pad(depth) + "}";
    } else if (n.kind() == Node::Kind::List) {
        if (n.elements().empty()) {
            out += "[]";
            return;
        }
        out += "[\n";
        bool first = true;
        for (const auto &v : n.elements()) {
            if (!first) out += ",\n";
            first = false;
            out += pad(depth + 1);
            json(v, depth + 1, out);
        }
        out += "\n" + pad(depth) + "]";
    } else {
        out += scalar_json(n);
    }
}

// YAML: block style; every string scalar double-quoted (so "yes", "1.0", "" or "a: b" stay
// strings), keys plain when they are simple identifiers.
bool plain_key(const std::string &k) {
    if (k.empty()) return false;
    for (unsigned char c : k)
        if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
    return std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_';
}

bool is_collection(const Node &n) {
    return (n.kind() == Node::Kind::Map || n.kind() == Node::Kind::List) && !n.empty();
}

std::string yaml_inline(const Node &n) {
    if (n.kind() == Node::Kind::Map) return "{}";
    if (n.kind() == Node::Kind::List) return "[]";
    return scalar_json(n);  // JSON scalars are valid YAML flow scalars
}

void yaml(const Node &n, int depth, std::string &out);

void yaml_map_items(const Node &n, int depth, std::string &out, bool first_inline) {
    bool first = true;
    for (const auto &[k, v] : n.items()) {
        if (!(first && first_inline)) out += pad(depth);
        first = false;
        out += (plain_key(k) ? k : quoted(k)) + ":";
        if (is_collection(v)) {
            out += "\n";
            yaml(v, depth + 1, out);
        } else {
            out += " " + yaml_inline(v) + "\n";
        }
    }
}

void yaml(const Node &n, int depth, std::string &out) {
    if (n.kind() == Node::Kind::Map) {
        yaml_map_items(n, depth, out, false);
    } else if (n.kind() == Node::Kind::List) {
        for (const auto &v : n.elements()) {
            out += pad(depth) + "- ";
            if (v.kind() == Node::Kind::Map && !v.empty()) {
                yaml_map_items(v, depth + 1, out, true);
            } else if (v.kind() == Node::Kind::List && !v.empty()) {
                out += "\n";
                yaml(v, depth + 1, out);
            } else {
                out += yaml_inline(v) + "\n";
            }
        }
    } else {
        out += pad(depth) + yaml_inline(n) + "\n";
    }
}

// Text: the same shape, unquoted, for people.
std::string text_scalar(const Node &n) {
    switch (n.kind()) {
        case Node::Kind::Null:
            return "-";
        case Node::Kind::Bool:
            return n.as_bool() ? "yes" : "no";
        case Node::Kind::Int:
            return std::to_string(n.as_int());
        case Node::Kind::String:
            return n.as_string().empty() ? "\"\"" : n.as_string();
        case Node::Kind::Map:
            return "(none)";
        case Node::Kind::List:
            return "(none)";
    }
    return {};
}

bool all_scalars(const Node &n) {
    for (const auto &v : n.elements())
        if (v.kind() == Node::Kind::Map || v.kind() == Node::Kind::List) return false;
    return true;
}

// A short list of scalars (e.g. a row of the EVD stream-merging matrix) reads best on one line.
std::string text_inline_list(const Node &n) {
    std::string s = "[";
    for (const auto &v : n.elements()) s += (s.size() > 1 ? ", " : "") + text_scalar(v);
    return s + "]";
}

bool short_scalar_list(const Node &n) {
    return n.kind() == Node::Kind::List && !n.empty() && all_scalars(n) &&
           text_inline_list(n).size() <= 60;
}

void text(const Node &n, int depth, std::string &out) {
    if (n.kind() == Node::Kind::Map) {
        for (const auto &[k, v] : n.items()) {
            if (short_scalar_list(v)) {
                out += pad(depth) + k + ": " + text_inline_list(v) + "\n";
            } else if (is_collection(v)) {
                out += pad(depth) + k + ":\n";
                text(v, depth + 1, out);
            } else {
                out += pad(depth) + k + ": " + text_scalar(v) + "\n";
            }
        }
    } else if (n.kind() == Node::Kind::List) {
        for (const auto &v : n.elements()) {
            if (v.kind() == Node::Kind::Map && !v.empty()) {
                // Items of a list of maps are separated the way a reader scans them: the
                // first field on the dash line, the rest indented under it.
                std::string item;
                text(v, depth + 1, item);
                item.replace(0, static_cast<std::size_t>(depth) * 2 + 2, pad(depth) + "- ");
                out += item;
            } else if (short_scalar_list(v)) {
                out += pad(depth) + "- " + text_inline_list(v) + "\n";
            } else if (is_collection(v)) {
                out += pad(depth) + "-\n";
                text(v, depth + 1, out);
            } else {
                out += pad(depth) + "- " + text_scalar(v) + "\n";
            }
        }
    } else {
        out += pad(depth) + text_scalar(n) + "\n";
    }
}

}  // namespace

std::string valid_utf8(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s, i, n);
            i += n;
        }
    }
    return out;
}

std::string render_json(const Node &doc) {
    std::string out;
    json(doc, 0, out);
    return out + "\n";
}

std::string render_yaml(const Node &doc) {
    std::string out = "---\n";
    if (is_collection(doc))
        yaml(doc, 0, out);
    else
        out += yaml_inline(doc) + "\n";
    return out;
}

std::string render_text(const Node &doc) {
    std::string out;
    text(doc, 0, out);
    return out;
}

}  // namespace datinfo
