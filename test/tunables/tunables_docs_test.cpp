// The docs' variable tables are checked against the declared table:
//   docs/configuration.md "## Environment variables": one row per tunable, rendered from the
//     table (on a mismatch the test prints the rows to paste);
//   README.md "## Environment variables": names every tunable and nothing else of ours.
#include "tunables/tunables.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace tun = opendat::tunables;

namespace {

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The table rows of the section that starts with `heading` (up to the next blank line after
// the table).
std::string section_table(const std::string &doc, const std::string &heading) {
    const auto at = doc.find("\n" + heading + "\n");
    if (at == std::string::npos) return {};
    const auto start = doc.find("\n|", at);
    if (start == std::string::npos) return {};
    auto end = doc.find("\n\n", start + 1);
    if (end == std::string::npos) end = doc.size();
    std::string t = doc.substr(start + 1, end - start - 1);
    while (!t.empty() && t.back() == '\n') t.pop_back();
    return t + "\n";
}

std::string rendered_table() {
    std::string t =
        "| variable | type | default | range | read by | meaning |\n"
        "|---|---|---|---|---|---|\n";
    for (const tun::Spec *s : tun::all()) {
        t += "| `";
        t += s->name;
        t += "` | ";
        t += tun::type_name(s->type);
        t += " | `";
        t += s->default_text;
        t += "` | ";
        t += s->type == tun::Type::kInt ? std::to_string(s->min) + ".." + std::to_string(s->max)
                                        : std::string(s->type == tun::Type::kTraceLevel ? "0..10"
                                                      : s->type == tun::Type::kChoice   ? s->choices
                                                                                        : "");
        t += " | ";
        t += s->reader;
        t += " | ";
        t += s->help;
        t += " |\n";
    }
    return t;
}

TEST(TunablesDocs, ConfigurationMdTableIsTheDeclaredTable) {
    const std::string doc = read_file(OPENDAT_SOURCE_DIR "/docs/configuration.md");
    ASSERT_FALSE(doc.empty());
    const std::string table = section_table(doc, "## Environment variables");
    EXPECT_EQ(table, rendered_table())
        << "docs/configuration.md's variable table differs from common/tunables/tunables.hpp; "
           "the table should read:\n"
        << rendered_table();
}

TEST(TunablesDocs, ReadmeTableNamesEveryTunableAndNoOther) {
    const std::string doc = read_file(OPENDAT_SOURCE_DIR "/README.md");
    const std::string table = section_table(doc, "## Environment variables");
    ASSERT_FALSE(table.empty());
    std::set<std::string> named;
    const std::regex var("`((DAT|DAPL|OPENDAT)_[A-Z0-9_]+)`");
    for (std::sregex_iterator it(table.begin(), table.end(), var), end; it != end; ++it)
        named.insert((*it)[1]);
    std::set<std::string> declared;
    for (const tun::Spec *s : tun::all()) declared.insert(s->name);
    for (const auto &n : declared) EXPECT_TRUE(named.count(n)) << "README does not list " << n;
    for (const auto &n : named) EXPECT_TRUE(declared.count(n)) << "README lists undeclared " << n;
}

}  // namespace
