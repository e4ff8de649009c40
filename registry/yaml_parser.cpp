#include "yaml_parser.hpp"

#include "field_syntax.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

namespace opendat::registry {
namespace {

constexpr std::array<std::string_view, 11> kKnownKeys = {"name",        "api",
                                                         "thread_safe", "default",
                                                         "library",     "provider_version",
                                                         "ia_params",   "platform_params",
                                                         "trace_level", "settings",
                                                         "comment"};

int line_of(const YAML::Node &n) {
    const YAML::Mark m = n.Mark();
    return m.line >= 0 ? m.line + 1 : 0;  // yaml-cpp lines are 0-based; -1 = unknown
}

// Thrown inside this file only (always caught in parse_entry): which field is bad and why.
struct EntryError {
    int line;
    std::string field;
    std::string message;
};

std::string scalar_text(const YAML::Node &n, const std::string &field, std::size_t limit) {
    if (n.IsNull()) return {};
    if (!n.IsScalar()) throw EntryError{line_of(n), field, "must be a string"};
    std::string s = n.Scalar();
    // As in the classic format: NUL and other control bytes but tab (written with YAML
    // escapes, "\n", "\x01") are refused.
    if (auto bad = check_text(s); !bad.empty()) throw EntryError{line_of(n), field, bad};
    if (auto err = check_length(s, limit); !err.empty()) throw EntryError{line_of(n), field, err};
    return s;
}

bool boolean(const YAML::Node &n, const std::string &field) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
        throw EntryError{line_of(n), field, "must be true or false"};
    return v;
}

DAT_UINT32 u32(const YAML::Node &n, const std::string &field) {
    std::optional<DAT_UINT32> v;
    if (n.IsScalar()) v = parse_u32(n.Scalar());
    if (!v) throw EntryError{line_of(n), field, "must be a non-negative integer"};
    return *v;
}

void parse_api(const YAML::Node &n, ConfigEntry &e) {
    if (n.IsScalar()) {
        auto v = parse_api_version(n.Scalar());
        if (!v)
            throw EntryError{line_of(n), "api",
                             "api version must look like u2.0 (got '" + n.Scalar() + "')"};
        e.user_level = v->user_level;
        e.api_major = v->major;
        e.api_minor = v->minor;
        return;
    }
    if (!n.IsMap()) throw EntryError{line_of(n), "api", "must be \"u2.0\" or {type, major, minor}"};
    const std::string type = n["type"] ? scalar_text(n["type"], "api.type", 16) : "user";
    if (type == "user" || type == "u")
        e.user_level = true;
    else if (type == "kernel" || type == "k")
        e.user_level = false;
    else
        throw EntryError{line_of(n), "api.type", "must be user or kernel (got '" + type + "')"};
    if (!n["major"]) throw EntryError{line_of(n), "api.major", "missing field api.major"};
    if (!n["minor"]) throw EntryError{line_of(n), "api.minor", "missing field api.minor"};
    e.api_major = u32(n["major"], "api.major");
    e.api_minor = u32(n["minor"], "api.minor");
}

void parse_provider_version_node(const YAML::Node &n, ConfigEntry &e) {
    if (n.IsScalar()) {
        auto v = parse_provider_version(n.Scalar());
        if (!v)
            throw EntryError{
                line_of(n), "provider_version",
                "provider version must look like <id>.<major>.<minor> (got '" + n.Scalar() + "')"};
        e.provider_id = v->id;
        e.provider_major = v->major;
        e.provider_minor = v->minor;
        return;
    }
    if (!n.IsMap())
        throw EntryError{line_of(n), "provider_version",
                         "must be \"id.2.0\" or {id, major, minor}"};
    if (!n["id"])
        throw EntryError{line_of(n), "provider_version.id", "missing field provider_version.id"};
    e.provider_id = scalar_text(n["id"], "provider_version.id", kMaxFieldLength);
    if (e.provider_id.empty())
        throw EntryError{line_of(n), "provider_version.id", "empty provider id"};
    e.provider_major = n["major"] ? u32(n["major"], "provider_version.major") : 0;
    e.provider_minor = n["minor"] ? u32(n["minor"], "provider_version.minor") : 0;
}

// Parses one list item; throws EntryError (or a yaml-cpp exception) when it is unusable.
ConfigEntry parse_entry(const YAML::Node &item, const std::string &file,
                        std::vector<ConfigDiagnostic> &warnings) {
    if (!item.IsMap()) throw EntryError{line_of(item), "entry", "each provider must be a mapping"};
    for (const auto &kv : item) {
        const std::string key =
            kv.first.IsScalar() ? kv.first.Scalar() : std::string("<non-scalar>");
        if (std::find(kKnownKeys.begin(), kKnownKeys.end(), key) == kKnownKeys.end())
            warnings.push_back(
                ConfigDiagnostic{file, line_of(kv.first), key, "unknown key ignored", true});
    }
    ConfigEntry e;
    e.file = file;
    e.line = line_of(item);
    auto required = [&](const char *field) {
        YAML::Node n = item[field];
        if (!n || n.IsNull())
            throw EntryError{line_of(item), field, std::string("missing field ") + field};
        return n;
    };
    e.ia_name = scalar_text(required("name"), "name", kMaxIaNameLength);
    if (e.ia_name.empty()) throw EntryError{line_of(item), "name", "empty IA name"};
    parse_api(required("api"), e);
    e.library = scalar_text(required("library"), "library", kMaxFieldLength);
    if (e.library.empty()) throw EntryError{line_of(item), "library", "empty library path"};
    if (item["thread_safe"]) e.thread_safe = boolean(item["thread_safe"], "thread_safe");
    if (item["default"]) e.is_default = boolean(item["default"], "default");
    if (item["provider_version"]) parse_provider_version_node(item["provider_version"], e);
    if (item["ia_params"])
        e.ia_params = scalar_text(item["ia_params"], "ia_params", kMaxFieldLength);
    if (item["platform_params"])
        e.platform_params =
            scalar_text(item["platform_params"], "platform_params", kMaxFieldLength);
    if (YAML::Node t = item["trace_level"]) {
        auto v = t.IsScalar() ? parse_u32(t.Scalar()) : std::nullopt;
        if (!v || *v > 10) throw EntryError{line_of(t), "trace_level", "must be an integer 0..10"};
        e.trace_level = static_cast<int>(*v);
    }
    if (YAML::Node s = item["settings"]) {
        if (!s.IsMap() && !s.IsNull())
            throw EntryError{line_of(s), "settings", "must be a mapping of name: value"};
        for (const auto &kv : s) {
            std::string k = scalar_text(kv.first, "settings", kMaxFieldLength);
            std::string v = scalar_text(kv.second, "settings." + k, kMaxFieldLength);
            e.settings.emplace_back(std::move(k), std::move(v));
        }
    }
    return e;
}

}  // namespace

ParseResult parse_yaml_conf(std::string_view text, const std::string &file) noexcept {
    ParseResult r;
    try {
        if (text.find('\0') != std::string_view::npos) {
            r.diagnostics.push_back(
                ConfigDiagnostic{file, 0, "file", "binary/NUL byte in YAML file"});
            return r;
        }
        YAML::Node root;
        try {
            root = YAML::Load(std::string(text));
        } catch (const YAML::Exception &ex) {
            r.diagnostics.push_back(ConfigDiagnostic{file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0,
                                                     "file", "YAML syntax error: " + ex.msg});
            return r;
        }
        if (!root || root.IsNull()) return r;  // empty file: no providers
        if (!root.IsMap()) {
            r.diagnostics.push_back(
                ConfigDiagnostic{file, line_of(root), "file",
                                 "top level must be a mapping with a 'providers' list"});
            return r;
        }
        for (const auto &kv : root) {
            if (!kv.first.IsScalar() || kv.first.Scalar() != "providers")
                r.diagnostics.push_back(
                    ConfigDiagnostic{file, line_of(kv.first),
                                     kv.first.IsScalar() ? kv.first.Scalar() : "<non-scalar>",
                                     "unknown top-level key ignored", true});
        }
        YAML::Node list = root["providers"];
        if (!list || list.IsNull()) {
            r.diagnostics.push_back(ConfigDiagnostic{file, line_of(root), "providers",
                                                     "missing field providers", true});
            return r;
        }
        if (!list.IsSequence()) {
            r.diagnostics.push_back(
                ConfigDiagnostic{file, line_of(list), "providers", "must be a list"});
            return r;
        }
        // yaml-cpp gives an alias the node (and so the mark) of its anchor. An item whose
        // position is not past every earlier item's is therefore an alias of an earlier node
        // (`- *a`): it can only repeat what is already there, and its line would point back
        // up the file. Skip it with a diagnostic, so that entries stay in file order and each
        // carries the line it was written on.
        int last_pos = -1;
        for (const auto &item : list) {
            const YAML::Mark at = item.Mark();
            if (at.pos >= 0 && at.pos <= last_pos) {
                r.diagnostics.push_back(ConfigDiagnostic{
                    file, line_of(item), "entry",
                    "a later item of the providers list is an alias (*) of this node; an alias "
                    "cannot add a provider, it only repeats what is written here"});
                continue;
            }
            last_pos = std::max(last_pos, at.pos);
            std::vector<ConfigDiagnostic> warnings;
            try {
                ConfigEntry e = parse_entry(item, file, warnings);
                r.entries.push_back(std::move(e));
            } catch (const EntryError &err) {
                r.diagnostics.push_back(ConfigDiagnostic{file, err.line, err.field, err.message});
            } catch (const YAML::Exception &ex) {
                r.diagnostics.push_back(ConfigDiagnostic{file, line_of(item), "entry", ex.what()});
            }
            for (auto &w : warnings) r.diagnostics.push_back(std::move(w));
        }
    } catch (const std::exception &ex) {
        r.diagnostics.push_back(
            ConfigDiagnostic{file, 0, "file", std::string("internal error: ") + ex.what()});
    } catch (...) {
        r.diagnostics.push_back(ConfigDiagnostic{file, 0, "file", "internal error"});
    }
    return r;
}

}  // namespace opendat::registry
