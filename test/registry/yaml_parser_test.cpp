// The YAML configuration parser: schema, per-entry diagnostics, syntax errors, garbage.
#include "registry_test_support.hpp"
#include "yaml_parser.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace opendat::registry;
using registry_test::corpus;
using registry_test::read_file;

namespace {
ParseResult parse_corpus(const std::string &name) {
    return parse_yaml_conf(read_file(corpus(name)), name);
}
}  // namespace

TEST(YamlParser, GoodCorpus) {
    ParseResult r = parse_corpus("good.yaml");
    EXPECT_TRUE(r.diagnostics.empty()) << r.diagnostics.front().message;
    ASSERT_EQ(r.entries.size(), 3u);

    const ConfigEntry &tcp = r.entries[0];
    EXPECT_EQ(tcp.ia_name, "tcp-lo");
    EXPECT_TRUE(tcp.user_level);
    EXPECT_EQ(tcp.api_major, 2u);
    EXPECT_EQ(tcp.api_minor, 0u);
    EXPECT_FALSE(tcp.thread_safe);
    EXPECT_TRUE(tcp.is_default);
    EXPECT_EQ(tcp.library, "/path/libopendat-tcp.so");
    EXPECT_EQ(tcp.provider_id, "opendat");
    EXPECT_EQ(tcp.ia_params, "lo 0");
    EXPECT_EQ(tcp.platform_params, "");
    EXPECT_EQ(tcp.trace_level, 3);
    ASSERT_EQ(tcp.settings.size(), 2u);
    EXPECT_EQ(tcp.settings[0], (std::pair<std::string, std::string>{"keepalive_ms", "5000"}));
    EXPECT_EQ(tcp.settings[1], (std::pair<std::string, std::string>{"mode", "fast"}));
    EXPECT_EQ(tcp.file, "good.yaml");
    EXPECT_EQ(tcp.line, 3);

    const ConfigEntry &map = r.entries[1];
    EXPECT_EQ(map.ia_name, "map-api");
    EXPECT_TRUE(map.thread_safe);
    EXPECT_EQ(map.api_major, 2u);
    EXPECT_EQ(map.provider_minor, 1u);
    EXPECT_EQ(map.trace_level, -1);
    EXPECT_TRUE(map.is_default);

    const ConfigEntry &kern = r.entries[2];
    EXPECT_FALSE(kern.user_level);
    EXPECT_FALSE(kern.is_default);
}

TEST(YamlParser, BadEntriesReportedAndSkipped) {
    ParseResult r = parse_corpus("bad.yaml");
    std::vector<std::string> names;
    for (const auto &e : r.entries) names.push_back(e.ia_name);
    EXPECT_EQ(names, (std::vector<std::string>{"ok-1", "unknown-key", "ok-3"}));

    struct Expect {
        int line;
        const char *field;
        const char *message_part;
        bool warning;
    };
    const Expect expected[] = {
        {8, "thread_safe", "must be true or false", false},
        {9, "name", "missing field name", false},
        {12, "api", "api version must look like u2.0", false},
        {14, "library", "missing field library", false},
        {16, "name", "must be a string", false},
        {22, "trace_level", "0..10", false},
        {26, "colour", "unknown key", true},
        {27, "entry", "must be a mapping", false},
        {29, "api.minor", "non-negative integer", false},
    };
    ASSERT_EQ(r.diagnostics.size(), std::size(expected));
    for (std::size_t i = 0; i < std::size(expected); ++i) {
        SCOPED_TRACE(i);
        const auto &d = r.diagnostics[i];
        EXPECT_EQ(d.file, "bad.yaml");
        EXPECT_EQ(d.line, expected[i].line);
        EXPECT_EQ(d.field, expected[i].field);
        EXPECT_NE(d.message.find(expected[i].message_part), std::string::npos) << d.message;
        EXPECT_EQ(d.warning, expected[i].warning);
    }
}

TEST(YamlParser, SyntaxErrorIsOneDiagnosticForTheFile) {
    ParseResult r = parse_corpus("syntax.yaml");
    EXPECT_TRUE(r.entries.empty());
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].field, "file");
    EXPECT_GT(r.diagnostics[0].line, 0);
    EXPECT_NE(r.diagnostics[0].message.find("YAML syntax error"), std::string::npos);
}

TEST(YamlParser, UnknownTopLevelKeyIsAWarning) {
    ParseResult r = parse_corpus("extra-top.yml");
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].ia_name, "flow");
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_TRUE(r.diagnostics[0].warning);
    EXPECT_EQ(r.diagnostics[0].field, "version");
    EXPECT_EQ(r.diagnostics[0].line, 1);
}

TEST(YamlParser, WrongShapes) {
    EXPECT_TRUE(parse_yaml_conf("", "e.yaml").diagnostics.empty());
    EXPECT_FALSE(parse_yaml_conf("- a\n- b\n", "s.yaml").diagnostics.empty());
    EXPECT_FALSE(parse_yaml_conf("providers: 3\n", "p.yaml").diagnostics.empty());
    EXPECT_FALSE(parse_yaml_conf("providers: {a: 1}\n", "p.yaml").diagnostics.empty());
    EXPECT_FALSE(parse_yaml_conf("providers:\n\t- x\n", "tab.yaml").diagnostics.empty());
    EXPECT_FALSE(
        parse_yaml_conf(std::string("providers: [\0]", 14), "nul.yaml").diagnostics.empty());
    auto r = parse_yaml_conf(
        "providers:\n  - name: " + std::string(300, 'n') + "\n    api: u2.0\n    library: l\n",
        "l.yaml");
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].message, "field too long (300 > 255)");
}

TEST(YamlParser, DeepNestingIsAnErrorNotAStackOverflow) {
    const std::string deep = "providers: " + std::string(100000, '[');
    ParseResult r = parse_yaml_conf(deep, "deep.yaml");
    EXPECT_TRUE(r.entries.empty());
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].field, "file");
}

TEST(YamlParser, GarbageFixedSeed) {
    std::mt19937 rng(777);
    const std::string good = read_file(corpus("good.yaml"));
    const char alphabet[] = " \n:-[]{}\"'#&*!|>%@`,?\tabc012";
    std::uniform_int_distribution<std::size_t> pick(0, sizeof alphabet - 2);
    for (int round = 0; round < 1000; ++round) {
        std::string text = good;
        for (int e = 0; e < 4; ++e) {
            std::uniform_int_distribution<std::size_t> pos(0, text.size() - 1);
            text[pos(rng)] = alphabet[pick(rng)];
        }
        ParseResult r = parse_yaml_conf(text, "mutated.yaml");  // must not throw or crash
        for (const auto &e : r.entries) EXPECT_FALSE(e.ia_name.empty());
    }
    std::uniform_int_distribution<int> byte(1, 255);
    for (int round = 0; round < 20; ++round) {
        std::string text(4096, 'x');
        for (auto &c : text) c = static_cast<char>(byte(rng));
        (void)parse_yaml_conf(text, "garbage.yaml");
    }
}

// The classic format refuses control bytes; YAML escapes could smuggle them in ("a\nb" as
// an IA name split every trace line and datinfo's text report).
TEST(YamlParser, ControlBytesInAFieldAreRefusedAsInTheClassicFormat) {
    ParseResult r = parse_yaml_conf(
        "providers:\n"
        "  - name: \"a\\nb\"\n    api: u2.0\n    library: l.so\n"
        "  - name: ok\n    api: u2.0\n    library: l.so\n    ia_params: \"x\\x01\"\n"
        "  - name: tab\n    api: u2.0\n    library: l.so\n    ia_params: \"a\\tb\"\n",
        "ctl.yaml");
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].ia_name, "tab");
    ASSERT_EQ(r.diagnostics.size(), 2u);
    EXPECT_EQ(r.diagnostics[0].field, "name");
    EXPECT_EQ(r.diagnostics[0].message, "binary/control byte at column 2");
    EXPECT_EQ(r.diagnostics[1].field, "ia_params");
}

// yaml-cpp hands out an alias as its anchor's node, mark included: `- *a` would add a second
// copy of an entry with a line that points back up the file (found by fuzz_yaml_conf in CI:
// "entries in file order"). Such an item is reported at the anchor and skipped.
TEST(YamlParser, AnEntryWrittenAsAnAliasIsReportedAndSkipped) {
    ParseResult r = parse_yaml_conf(
        "providers:\n"
        "  - &a {name: x, api: u2.0, library: l.so}\n"
        "  - {name: y, api: u2.0, library: l.so}\n"
        "  - *a\n"
        "  - {name: z, api: u2.0, library: l.so}\n",
        "alias.yaml");
    ASSERT_EQ(r.entries.size(), 3u);
    EXPECT_EQ(r.entries[0].ia_name, "x");
    EXPECT_EQ(r.entries[1].ia_name, "y");
    EXPECT_EQ(r.entries[2].ia_name, "z");
    EXPECT_EQ(r.entries[2].line, 5);
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_FALSE(r.diagnostics[0].warning);
    EXPECT_EQ(r.diagnostics[0].field, "entry");
    EXPECT_EQ(r.diagnostics[0].line, 2);
    EXPECT_NE(r.diagnostics[0].message.find("alias"), std::string::npos);

    // Right after its anchor too, and an alias of a node inside an earlier entry that would
    // be a valid entry of its own.
    r = parse_yaml_conf(
        "providers:\n"
        "  - &a {name: x, api: u2.0, library: l.so}\n"
        "  - *a\n",
        "again.yaml");
    EXPECT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.diagnostics.size(), 1u);
    r = parse_yaml_conf(
        "providers:\n"
        "  - name: x\n    api: u2.0\n    library: l.so\n"
        "    settings: &s {name: s, api: u2.0, library: l.so}\n"
        "  - {name: y, api: u2.0, library: l.so}\n"
        "  - *s\n",
        "inner.yaml");
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_EQ(r.entries[1].ia_name, "y");
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].line, 5);
}
