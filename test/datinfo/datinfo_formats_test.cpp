// --format json / yaml: the output is checked by real parsers (python3's json module,
// yaml-cpp), not by string matching.
#include "datinfo_run.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>

#include <unistd.h>

using datinfo_test::fake_line;
using datinfo_test::run_datinfo;
using datinfo_test::write_conf;

namespace {

// Every kind of entry in one file: good, missing library, malformed line (line 3), k entry,
// a quote and a non-UTF-8 byte in a value (the output must still be valid).
std::string mixed_conf() {
    return write_conf(
        "mixed.conf",
        fake_line("fake0") +
            "gone u2.0 nonthreadsafe default /nonexistent/libgone.so x.1.0 \"a\\\"b \xff\" \"\"\n"
            "broken u2.0 nonthreadsafe\n" +
            fake_line("kern", "fake 0", "k2.0 nonthreadsafe default"));
}

}  // namespace

TEST(DatinfoFormats, JsonParsesWithPython) {
    const auto conf = mixed_conf();
    const auto r = run_datinfo(conf, {"--format", "json", "-v", "-e", "--trace", "dapl=5"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto file = write_conf("out.json", r.out);
    const auto py = datinfo_test::python(
        "import json, sys\n"
        "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "c = d['configuration']\n"
        "assert c['reason'] == 'DAT_OVERRIDE', c\n"
        "p = c['problems'][0]\n"
        "print(p['line'], p['field'], p['severity'])\n"
        "e = {x['name']: x for x in d['entries']}\n"
        "print(e['fake0']['status'], e['gone']['status'], e['kern']['status'])\n"
        "print(e['gone']['diagnosis']['cause'])\n"
        "print(e['fake0']['provider']['provider_specific_attributes']['debug_modify'])\n"
        "print(e['fake0']['trace']['before'], e['fake0']['trace']['after'])\n"
        "print(type(e['fake0']['ia']['max_eps']).__name__, e['fake0']['ia']['max_eps'])\n"
        "print([v['name'] for v in d['environment']['variables']][0])\n",
        file);
    ASSERT_EQ(py.exit_code, 0) << py.err << "\n" << r.out;
    EXPECT_EQ(py.out,
              "3 default error\n"
              "ok failed not loaded\n"
              "library_not_found\n"
              "(function)\n"
              "3 5\n"
              "int 16\n"
              "DAT_OVERRIDE\n");
}

TEST(DatinfoFormats, YamlParsesWithYamlCpp) {
    const auto conf = mixed_conf();
    const auto r = run_datinfo(conf, {"--format", "yaml", "-v", "-e", "--trace"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    YAML::Node d;
    ASSERT_NO_THROW(d = YAML::Load(r.out)) << r.out;
    EXPECT_EQ(d["configuration"]["file"].as<std::string>(), conf);
    EXPECT_EQ(d["configuration"]["problems"][0]["line"].as<int>(), 3);
    const YAML::Node entries = d["entries"];
    ASSERT_TRUE(entries.IsSequence());
    ASSERT_EQ(entries.size(), 3u);  // the malformed line is a problem, not an entry
    EXPECT_EQ(entries[0]["name"].as<std::string>(), "fake0");
    EXPECT_EQ(entries[0]["status"].as<std::string>(), "ok");
    EXPECT_EQ(entries[0]["ia"]["adapter_name"].as<std::string>(), "fake-adapter");
    EXPECT_EQ(entries[0]["provider"]["provider_specific_attributes"]["vendor_extension"]
                  .as<std::string>(),
              "1.0");
    EXPECT_EQ(
        entries[0]["provider"]["provider_specific_attributes"]["debug_query"].as<std::string>(),
        "(function)");
    EXPECT_EQ(entries[0]["trace"]["level"].as<int>(), 3);
    EXPECT_TRUE(entries[0]["ia"]["zb_supported"].IsScalar());
    EXPECT_EQ(entries[1]["status"].as<std::string>(), "failed");
    EXPECT_EQ(entries[1]["diagnosis"]["cause"].as<std::string>(), "library_not_found");
    EXPECT_NE(entries[1]["ia_params"].as<std::string>().find("a\"b"), std::string::npos);
    EXPECT_EQ(entries[2]["name"].as<std::string>(), "kern");
    EXPECT_EQ(entries[2]["status"].as<std::string>(), "not loaded");
    EXPECT_TRUE(d["environment"]["variables"].IsSequence());
    EXPECT_TRUE(d["trace"]["note"].IsScalar());
}

TEST(DatinfoFormats, JsonForTheNamedEntryAndItsFailure) {
    const auto conf = mixed_conf();
    const auto r = run_datinfo(conf, {"-P", "gone", "--format=json"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto file = write_conf("gone.json", r.out);
    const auto py = datinfo_test::python(
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "print(len(d['entries']), d['entries'][0]['error']['code'])\n",
        file);
    ASSERT_EQ(py.exit_code, 0) << py.err << r.out;
    EXPECT_EQ(py.out, "1 0x800a0064\n");
}

// Debian's DAPL providers print their own diagnostics on stdout; the report must stay
// parseable (datinfo moves provider output to stderr).
TEST(DatinfoFormats, ProviderChatterDoesNotBreakJson) {
    if (access("/usr/lib/x86_64-linux-gnu/libdaplofa.so.2", R_OK) != 0)
        GTEST_SKIP() << "libdapl2 not installed";
    const auto conf = write_conf(
        "chatty.conf",
        "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n");
    const auto r = run_datinfo(conf, {"--format", "json"}, {{"DAPL_DBG_TYPE", "0xffff"}});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto file = write_conf("chatty.json", r.out);
    const auto py = datinfo_test::python(
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "print(d['entries'][0]['status'], d['entries'][0]['diagnosis']['cause'])\n",
        file);
    ASSERT_EQ(py.exit_code, 0) << py.err << r.out;
    EXPECT_EQ(py.out, "failed interface_not_present\n");
}
