// OpenDAT ABI tests: our include/dat2 against the reference DAT 2.0 headers.
//
// * ReferenceComparison runs gen_abi_probe.py, which enumerates every struct, member,
//   typedef, enumerator, macro and function of the reference headers (clang AST + -dM),
//   builds one probe program against each header set and runs both, and expands every
//   macro with both header sets; here the two outputs are compared item by item so that a
//   failure names exactly what differs.
// * The compile tests build api_sample.c and every header on its own as C99, C11 and
//   C++20 with -Wall -Wextra -Werror -pedantic, and check that only our dat2 headers were
//   read (a missing file must not silently resolve to /usr/include/dat2).

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kHeaders = {
    "dat.h",
    "dat_error.h",
    "dat_ib_extensions.h",
    "dat_platform_specific.h",
    "dat_redirection.h",
    "dat_registry.h",
    "dat_vendor_specific.h",
    "udat.h",
    "udat_config.h",
    "udat_redirection.h",
    "udat_vendor_specific.h",
};

struct Result {
    int rc;
    std::string out;
};

// Runs a shell command, capturing stdout and stderr together.
Result run(const std::string &cmd) {
    Result r{-1, {}};
    FILE *p = popen((cmd + " 2>&1").c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string quote(const std::string &s) {
    std::string q = "'";
    for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

bool have_program(const std::string &prog) {
    return !prog.empty() && run("command -v " + quote(prog) + " >/dev/null").rc == 0;
}

fs::path work_dir(const std::string &name) {
    fs::path d = fs::path(ABI_WORK_DIR) / name;
    fs::create_directories(d);
    return d;
}

// key=value lines of a probe output, in file order.
std::vector<std::pair<std::string, std::string>> read_items(const fs::path &file) {
    std::vector<std::pair<std::string, std::string>> items;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        auto eq = line.find('=');
        if (eq != std::string::npos) items.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
    return items;
}

// Every dat2 header listed in a make-style dependency file must live under our include/dat2.
std::vector<std::string> foreign_dat2_headers(const fs::path &depfile) {
    std::ifstream in(depfile);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = std::regex_replace(ss.str(), std::regex("\\\\\n"), " ");
    const std::string ours = fs::weakly_canonical(fs::path(ABI_OURS_INCLUDE) / "dat2").string();
    std::vector<std::string> foreign;
    std::istringstream words(text.substr(text.find(':') + 1));
    std::string w;
    while (words >> w) {
        if (w.find("/dat2/") == std::string::npos) continue;
        std::string real = fs::weakly_canonical(w).string();
        if (real.rfind(ours + "/", 0) != 0) foreign.push_back(real);
    }
    return foreign;
}

std::string ref_dat2() {
    return std::string(ABI_REF_INCLUDE) + "/dat2";
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Same header file names as the reference.
// ---------------------------------------------------------------------------------------
TEST(AbiHeaders, SameFileNamesAsReference) {
    for (const auto &h : kHeaders)
        EXPECT_TRUE(fs::is_regular_file(fs::path(ABI_OURS_INCLUDE) / "dat2" / h)) << h;
    if (!fs::is_directory(ref_dat2()))
        GTEST_SKIP() << "reference headers not installed (" << ref_dat2()
                     << "; package libdapl-dev)";
    for (const auto &e : fs::directory_iterator(ref_dat2())) {
        if (e.path().extension() != ".h") continue;
        EXPECT_TRUE(fs::is_regular_file(fs::path(ABI_OURS_INCLUDE) / "dat2" / e.path().filename()))
            << "reference header without counterpart: " << e.path().filename();
    }
}

// ---------------------------------------------------------------------------------------
// Item-by-item comparison with the reference.
// ---------------------------------------------------------------------------------------
TEST(AbiHeaders, ReferenceComparison) {
    if (!fs::is_regular_file(ref_dat2() + "/udat.h"))
        GTEST_SKIP() << "reference headers not installed (" << ref_dat2()
                     << "/udat.h; package libdapl-dev)";
    if (!have_program(ABI_PYTHON)) GTEST_SKIP() << "python3 not found (" << ABI_PYTHON << ")";
    if (!have_program(ABI_CLANG))
        GTEST_SKIP() << "clang not found; it is needed for the AST dump of the reference";

    const fs::path work = work_dir("compare");
    const std::string cmd = quote(ABI_PYTHON) + " " + quote(ABI_SCRIPT) + " --ref-include " +
                            quote(ABI_REF_INCLUDE) + " --ours-include " + quote(ABI_OURS_INCLUDE) +
                            " --work " + quote(work.string()) + " --clang " + quote(ABI_CLANG);
    Result r = run(cmd);
    ASSERT_EQ(r.rc, 0) << "generator failed:\n" << cmd << "\n" << r.out;
    std::cout << r.out;

    // The counts prove the comparison is broad, not a hand-picked list.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m,
                                  std::regex("COUNTS structs=(\\d+) members=(\\d+) typedefs=(\\d+) "
                                             "enums=(\\d+) enumerators=(\\d+) functions=(\\d+) "
                                             "macros=(\\d+) macro_values=(\\d+) "
                                             "expansions=(\\d+) items=(\\d+)")))
        << r.out;
    EXPECT_GE(std::stoi(m[1]), 35) << "structs/unions";
    EXPECT_GE(std::stoi(m[2]), 300) << "members";
    EXPECT_GE(std::stoi(m[3]), 200) << "typedefs";
    EXPECT_GE(std::stoi(m[5]), 550) << "enumerators";
    EXPECT_GE(std::stoi(m[6]), 80) << "functions";
    EXPECT_GE(std::stoi(m[7]), 280) << "macros";
    EXPECT_GE(std::stoi(m[8]), 150) << "macro values";
    EXPECT_GE(std::stoi(m[9]), 280) << "macro expansions";
    EXPECT_GE(std::stoi(m[10]), 2800) << "compared items";

    auto ref = read_items(work / "ref.txt");
    auto ours = read_items(work / "ours.txt");
    ASSERT_EQ(std::to_string(ref.size()), m[10].str()) << "reference probe output incomplete";
    std::map<std::string, std::string> ours_map(ours.begin(), ours.end());

    int differences = 0;
    for (const auto &[key, value] : ref) {
        auto it = ours_map.find(key);
        std::string got = it == ours_map.end() ? "<absent>" : it->second;
        if (got != value) {
            if (++differences <= 200)
                ADD_FAILURE() << key << ": reference " << value << ", ours " << got;
        }
    }
    EXPECT_EQ(differences, 0) << differences << " of " << ref.size() << " items differ";
    EXPECT_EQ(ours.size(), ref.size());
}

// ---------------------------------------------------------------------------------------
// Compile tests.
// ---------------------------------------------------------------------------------------
namespace {

struct Lang {
    const char *name;
    std::string compiler;
    const char *flags;
};

std::vector<Lang> languages() {
    std::vector<Lang> v = {
        {"c99", ABI_C_COMPILER, "-x c -std=c99"},
        {"c11", ABI_C_COMPILER, "-x c -std=c11"},
        {"cxx20", ABI_CXX_COMPILER, "-x c++ -std=c++20"},
    };
    // The other compiler family too, when it is there: the two warn differently.
    if (have_program("clang") && std::string(ABI_C_COMPILER).find("clang") == std::string::npos) {
        v.push_back({"clang_c99", "clang", "-x c -std=c99"});
        v.push_back({"clang_cxx20", "clang++", "-x c++ -std=c++20"});
    }
    if (have_program("gcc") && std::string(ABI_C_COMPILER).find("clang") != std::string::npos) {
        v.push_back({"gcc_c99", "gcc", "-x c -std=c99"});
        v.push_back({"gcc_cxx20", "g++", "-x c++ -std=c++20"});
    }
    return v;
}

// Compiles src strictly against our headers; checks no other dat2 header was read.
void compile_strict(const Lang &lang, const fs::path &src, const fs::path &dir,
                    const std::string &what) {
    const fs::path dep = dir / (src.stem().string() + "." + lang.name + ".d");
    const std::string cmd = quote(lang.compiler) + " " + lang.flags +
                            " -Wall -Wextra -Werror -pedantic -fsyntax-only -I" +
                            quote(ABI_OURS_INCLUDE) + " -MD -MF " + quote(dep.string()) + " " +
                            quote(src.string());
    Result r = run(cmd);
    EXPECT_EQ(r.rc, 0) << what << " (" << lang.name << ") does not compile cleanly:\n"
                       << cmd << "\n"
                       << r.out;
    if (r.rc == 0) {
        auto foreign = foreign_dat2_headers(dep);
        EXPECT_TRUE(foreign.empty())
            << what << " (" << lang.name << ") read " << (foreign.empty() ? "" : foreign.front());
    }
}

}  // namespace

TEST(AbiCompile, ApiSample) {
    const fs::path dir = work_dir("api_sample");
    for (const auto &lang : languages()) compile_strict(lang, ABI_SAMPLE, dir, "api_sample.c");
}

TEST(AbiCompile, EachHeaderOnItsOwn) {
    const fs::path dir = work_dir("headers");
    std::vector<std::string> headers = kHeaders;
    headers.push_back("dat_trace.h");  // OpenDAT's own addition
    for (const auto &h : headers) {
        const std::string stem = h.substr(0, h.size() - 2);
        // Alone: our headers pull in what they need.
        const fs::path alone = dir / ("alone_" + stem + ".c");
        // (The typedef keeps a header that declares nothing from leaving an empty TU.)
        std::ofstream(alone) << "#include <dat2/" << h << ">\ntypedef int abi_not_empty;\n";
        // After udat.h, the order the reference requires for provider headers.
        const fs::path after = dir / ("after_udat_" + stem + ".c");
        std::ofstream(after) << "#include <dat2/udat.h>\n#include <dat2/" << h << ">\n"
                             << "#include <dat2/udat.h>\ntypedef int abi_not_empty;\n";
        for (const auto &lang : languages()) {
            compile_strict(lang, alone, dir, h + " alone");
            compile_strict(lang, after, dir, h + " after udat.h");
        }
    }
}
