// The classic dat.conf parser over the corpus and over generated hostile input.
#include "conf_parser.hpp"
#include "config_file.hpp"
#include "registry_test_support.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace opendat::registry;
using registry_test::corpus;
using registry_test::read_file;

namespace {

ParseResult parse_corpus(const std::string &name) {
    return parse_dat_conf(read_file(corpus(name)), name);
}

const ConfigEntry *find(const ParseResult &r, const std::string &name) {
    for (const auto &e : r.entries)
        if (e.ia_name == name) return &e;
    return nullptr;
}

}  // namespace

TEST(ConfParser, GoodCorpus) {
    ParseResult r = parse_corpus("good.conf");
    EXPECT_TRUE(r.diagnostics.empty()) << r.diagnostics.front().message;
    ASSERT_EQ(r.entries.size(), 8u);

    const ConfigEntry &ib0 = r.entries[0];
    EXPECT_EQ(ib0.ia_name, "ofa-v2-ib0");
    EXPECT_TRUE(ib0.user_level);
    EXPECT_EQ(ib0.api_major, 2u);
    EXPECT_EQ(ib0.api_minor, 0u);
    EXPECT_FALSE(ib0.thread_safe);
    EXPECT_TRUE(ib0.is_default);
    EXPECT_EQ(ib0.library, "libdaplofa.so.2");
    EXPECT_EQ(ib0.provider_id, "dapl");
    EXPECT_EQ(ib0.ia_params, "ib0 0");
    EXPECT_EQ(ib0.platform_params, "");
    EXPECT_EQ(ib0.file, "good.conf");
    EXPECT_EQ(ib0.line, 3);

    const ConfigEntry &tabs = r.entries[1];  // tab-separated
    EXPECT_EQ(tabs.ia_name, "ofa-v2-mlx4_0-1u");
    EXPECT_EQ(tabs.library, "libdaploucm.so.2");
    EXPECT_EQ(tabs.ia_params, "mlx4_0 1");

    const ConfigEntry *esc = find(r, "escaped");
    ASSERT_NE(esc, nullptr);
    EXPECT_EQ(esc->line, 8);
    EXPECT_TRUE(esc->thread_safe);  // "threadsafeX": prefix compare, like the reference
    EXPECT_TRUE(esc->is_default);   // "defaultish"
    EXPECT_EQ(esc->library, "/opt/my libs/libx.so");
    EXPECT_EQ(esc->provider_id, "my.prov");
    EXPECT_EQ(esc->provider_major, 1u);
    EXPECT_EQ(esc->provider_minor, 2u);
    EXPECT_EQ(esc->ia_params, "say \"hi\" \\ back");
    EXPECT_EQ(esc->platform_params, "a#b");  // '#' inside quotes is not a comment

    const ConfigEntry *k = find(r, "kernel");
    ASSERT_NE(k, nullptr);
    EXPECT_FALSE(k->user_level);
    EXPECT_EQ(k->api_major, 1u);
    EXPECT_EQ(k->api_minor, 2u);

    const ConfigEntry *nd = find(r, "nd");
    ASSERT_NE(nd, nullptr);
    EXPECT_FALSE(nd->is_default);

    int dups = 0;
    for (const auto &e : r.entries) dups += e.ia_name == "dup";
    EXPECT_EQ(dups, 2);  // both kept by the parser; the registry chains them

    const ConfigEntry &last = r.entries.back();  // no final newline
    EXPECT_EQ(last.ia_name, "last");
    EXPECT_EQ(last.ia_params, "unquoted-params");
    EXPECT_EQ(last.platform_params, "x");
}

TEST(ConfParser, MalformedCorpusEachLineReportedAndSkipped) {
    ParseResult r = parse_corpus("malformed.conf");
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_EQ(r.entries[0].ia_name, "good-1");
    EXPECT_EQ(r.entries[1].ia_name, "good-2");
    EXPECT_TRUE(r.entries[1].thread_safe);

    struct Expect {
        int line;
        const char *field;
        const char *message_part;
    };
    const Expect expected[] = {
        {3, "platform_params", "missing field platform_params"},
        {4, "api_version", "api version must look like u2.0"},
        {5, "api_version", "api version must look like u2.0"},
        {6, "thread_safety", "threadsafe or nonthreadsafe"},
        {7, "default", "default or nondefault"},
        {8, "provider_version", "<id>.<major>.<minor>"},
        {9, "provider_version", "<id>.<major>.<minor>"},
        {10, "ia_params", "unterminated quote"},
        {11, "EOR", "unexpected extra field 'surplus'"},
        {12, "api_version", "missing field api_version"},
        {13, "api_version", "api version must look like u2.0"},
        {15, "ia_params", "text directly after closing quote"},
    };
    ASSERT_EQ(r.diagnostics.size(), std::size(expected));
    for (std::size_t i = 0; i < std::size(expected); ++i) {
        SCOPED_TRACE(i);
        const ConfigDiagnostic &d = r.diagnostics[i];
        EXPECT_EQ(d.file, "malformed.conf");
        EXPECT_EQ(d.line, expected[i].line);
        EXPECT_EQ(d.field, expected[i].field);
        EXPECT_NE(d.message.find(expected[i].message_part), std::string::npos) << d.message;
        EXPECT_FALSE(d.warning);
    }
}

TEST(ConfParser, CrlfCorpus) {
    ParseResult r = parse_corpus("crlf.conf");
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_EQ(r.entries[0].platform_params, "");  // no stray '\r'
    EXPECT_EQ(r.entries[0].ia_params, "ib0 0");
    EXPECT_EQ(r.entries[1].ia_name, "crlf-2");
    EXPECT_EQ(r.entries[1].line, 4);
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].line, 5);
    EXPECT_EQ(r.diagnostics[0].field, "thread_safety");
}

TEST(ConfParser, TenThousandCharacterFields) {
    const std::string big(10000, 'a');
    const std::string text = big + " u2.0 nonthreadsafe default libx.so dapl.2.0 \"\" \"\"\n" +
                             "n2 u2.0 nonthreadsafe default " + big + " dapl.2.0 \"\" \"\"\n" +
                             "n3 u2.0 nonthreadsafe default libx.so dapl.2.0 \"" + big +
                             "\" \"\"\n" + std::string(255, 'b') +
                             " u2.0 nonthreadsafe default libx.so dapl.2.0 \"\" \"\"\n";
    ParseResult r = parse_dat_conf(text, "big.conf");
    ASSERT_EQ(r.diagnostics.size(), 3u);
    EXPECT_EQ(r.diagnostics[0].field, "ia_name");
    EXPECT_EQ(r.diagnostics[0].message, "field too long (10000 > 255)");
    EXPECT_EQ(r.diagnostics[1].field, "library");
    EXPECT_EQ(r.diagnostics[1].message, "field too long (10000 > 4095)");
    EXPECT_EQ(r.diagnostics[2].field, "ia_params");
    EXPECT_EQ(r.diagnostics[2].line, 3);
    ASSERT_EQ(r.entries.size(), 1u);  // 255 characters is the limit, inclusive
    EXPECT_EQ(r.entries[0].ia_name.size(), 255u);
}

TEST(ConfParser, NulAndControlBytes) {
    std::string text = "good u2.0 nonthreadsafe default libx.so dapl.2.0 \"\" \"\"\n";
    text += std::string("nul u2.0 nonthreadsafe default lib") + '\0' + "x.so dapl.2.0 \"\" \"\"\n";
    text += "bell u2.0 nonthreadsafe default lib\x07x.so dapl.2.0 \"\" \"\"\n";
    text += "good2 u2.0 nonthreadsafe default libx.so dapl.2.0 \"\" \"\"";
    ParseResult r = parse_dat_conf(text, "nul.conf");
    ASSERT_EQ(r.entries.size(), 2u);
    ASSERT_EQ(r.diagnostics.size(), 2u);
    EXPECT_EQ(r.diagnostics[0].line, 2);
    EXPECT_NE(r.diagnostics[0].message.find("binary/NUL byte"), std::string::npos);
    EXPECT_EQ(r.diagnostics[1].line, 3);
    EXPECT_NE(r.diagnostics[1].message.find("binary/control byte"), std::string::npos);
}

TEST(ConfParser, EmptyAndDegenerateInputs) {
    for (const char *t :
         {"", "\n", "\n\n\n", "#", "# only a comment", "   \t  ", "\r\n", "\"", "\\", "\"\\"}) {
        SCOPED_TRACE(t);
        ParseResult r = parse_dat_conf(t, "x");
        EXPECT_TRUE(r.entries.empty());
    }
    EXPECT_EQ(parse_dat_conf("\"", "x").diagnostics.at(0).message, "unterminated quote");
    // A lone backslash at the end of a quoted field does not escape the end of the line.
    EXPECT_EQ(parse_dat_conf("\"abc\\", "x").diagnostics.at(0).message, "unterminated quote");
    // The first bad field is reported, even in a short record.
    auto short_bad = parse_dat_conf("bad line", "x");
    EXPECT_EQ(short_bad.diagnostics.at(0).field, "api_version");
    // Empty quoted IA name.
    EXPECT_EQ(parse_dat_conf("\"\" u2.0 nonthreadsafe default l dapl.2.0 \"\" \"\"", "x")
                  .diagnostics.at(0)
                  .field,
              "ia_name");
}

TEST(ConfParser, HugeLineWithoutNewline) {
    std::string text(4 << 20, 'x');  // one 4 MiB token: linear time, one diagnostic
    ParseResult r = parse_dat_conf(text, "huge.conf");
    EXPECT_TRUE(r.entries.empty());
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].field, "ia_name");
    EXPECT_EQ(r.diagnostics[0].message, "field too long (4194304 > 255)");
}

TEST(ConfParser, BinaryGarbageFixedSeed) {
    std::mt19937 rng(20261121);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int round = 0; round < 50; ++round) {
        std::string text(64 * 1024, '\0');
        for (auto &c : text) c = static_cast<char>(byte(rng));
        ParseResult r = parse_dat_conf(text, "garbage.conf");
        for (const auto &d : r.diagnostics) {
            EXPECT_GT(d.line, 0);
            EXPECT_FALSE(d.field.empty());
        }
    }
}

TEST(ConfParser, MutatedGoodFileFixedSeed) {
    // Flip, insert and delete bytes of the good corpus: whatever survives must be a
    // well-formed entry, everything else a diagnostic with a line number.
    const std::string good = read_file(corpus("good.conf"));
    std::mt19937 rng(4242);
    const char alphabet[] = " \t\"\\#\n\r.uk0123456789abcdefghijklmnopqrstuvwxyz\0\xff";
    std::uniform_int_distribution<std::size_t> pick(0, sizeof alphabet - 1);
    for (int round = 0; round < 2000; ++round) {
        std::string text = good;
        std::uniform_int_distribution<int> edits(1, 8);
        for (int e = edits(rng); e > 0 && !text.empty(); --e) {
            std::uniform_int_distribution<std::size_t> pos(0, text.size() - 1);
            switch (rng() % 3) {
                case 0:
                    text[pos(rng)] = alphabet[pick(rng)];
                    break;
                case 1:
                    text.insert(pos(rng), 1, alphabet[pick(rng)]);
                    break;
                default:
                    text.erase(pos(rng), 1);
                    break;
            }
        }
        ParseResult r = parse_dat_conf(text, "mutated.conf");
        for (const auto &en : r.entries) {
            EXPECT_FALSE(en.ia_name.empty());
            EXPECT_LE(en.ia_name.size(), 255u);
            EXPECT_FALSE(en.library.empty());
            EXPECT_EQ(en.ia_name.find('\0'), std::string::npos);
        }
        for (const auto &d : r.diagnostics) EXPECT_GT(d.line, 0);
    }
}

TEST(ConfigFile, ParserChosenByExtension) {
    EXPECT_TRUE(is_yaml_path("/etc/dat.yaml"));
    EXPECT_TRUE(is_yaml_path("x.yml"));
    EXPECT_FALSE(is_yaml_path("/etc/dat.conf"));
    EXPECT_FALSE(is_yaml_path("yaml"));

    FileParse conf = read_config_file(corpus("good.conf"));
    EXPECT_TRUE(conf.opened);
    EXPECT_EQ(conf.result.entries.size(), 8u);
    EXPECT_EQ(conf.result.entries[0].file, corpus("good.conf"));

    FileParse yaml = read_config_file(corpus("good.yaml"));
    EXPECT_TRUE(yaml.opened);
    EXPECT_EQ(yaml.result.entries.size(), 3u);
}

TEST(ConfigFile, MissingFile) {
    FileParse fp = read_config_file("/nonexistent/dir/dat.conf");
    EXPECT_FALSE(fp.opened);
    ASSERT_EQ(fp.result.diagnostics.size(), 1u);
    EXPECT_EQ(fp.result.diagnostics[0].field, "file");
    EXPECT_NE(fp.result.diagnostics[0].message.find("cannot open"), std::string::npos);
}

// DAT_OVERRIDE=/etc (a directory) used to give a bare "read error": say what is wrong.
TEST(ConfigFile, DirectoryIsNamedAsSuch) {
    FileParse fp = read_config_file("/");
    EXPECT_FALSE(fp.opened);
    ASSERT_EQ(fp.result.diagnostics.size(), 1u);
    EXPECT_EQ(fp.result.diagnostics[0].field, "file");
    EXPECT_NE(fp.result.diagnostics[0].message.find("is a directory"), std::string::npos)
        << fp.result.diagnostics[0].message;
}

// A file saved with a UTF-8 byte order mark: the first IA keeps its name, and a leading
// comment stays a comment (the mark used to become part of the first field).
TEST(ConfParser, Utf8ByteOrderMarkIsSkipped) {
    ParseResult r = parse_dat_conf(
        "\xEF\xBB\xBFofa-v2-ib0 u2.0 nonthreadsafe default lib.so dapl.2.0 \"ib0 0\" \"\"\n",
        "bom.conf");
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].ia_name, "ofa-v2-ib0");
    EXPECT_TRUE(r.diagnostics.empty());

    r = parse_dat_conf(
        "\xEF\xBB\xBF# a comment\n"
        "ofa-v2-ib0 u2.0 nonthreadsafe default lib.so dapl.2.0 \"ib0 0\" \"\"\n",
        "bom-comment.conf");
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].line, 2);
    EXPECT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
}
