// The unmodified Debian dapl2-utils binaries start against our libdat2 (LD_LIBRARY_PATH),
// resolve every symbol they need (BIND_NOW, version DAT_2.0) and report an unknown IA name
// the way the reference does: "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED".
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Result {
    int status = -1;
    std::string output;  // stdout and stderr together
};

Result run(const std::string &command) {
    Result r;
    FILE *p = popen((command + " 2>&1").c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    r.status = pclose(p);
    return r;
}

std::string lib_dir() {
    std::string lib = FE_LIBDAT2;
    return lib.substr(0, lib.rfind('/'));
}

// Environment for the child: our library first, our test dat.conf, and the sanitizer
// runtime when libdat2 is instrumented but the Debian binary is not.
std::string environment(std::string *skip_reason) {
    const char *conf = std::getenv("FE_TEST_CONF");
    std::string env =
        "env LD_LIBRARY_PATH='" + lib_dir() + "' DAT_OVERRIDE='" + (conf ? conf : "") + "'";
    const std::string sanitizer = FE_SANITIZER;
    if (sanitizer == "address") {
        env += " LD_PRELOAD='" + std::string(FE_ASAN_RUNTIME) + "' ASAN_OPTIONS=detect_leaks=0";
    } else if (sanitizer == "thread") {
        *skip_reason =
            "libdat2 is built with ThreadSanitizer; the uninstrumented Debian binaries cannot load "
            "it";
    } else if (!sanitizer.empty() && sanitizer != "undefined") {
        *skip_reason = "unsupported sanitizer '" + sanitizer + "' for external binaries";
    }
    return env;
}

void check_binary(const std::string &binary, const std::string &args, const std::string &expected) {
    if (access(binary.c_str(), X_OK) != 0)
        GTEST_SKIP() << binary << " not installed (Debian package dapl2-utils); CI installs it";
    std::string skip;
    const std::string env = environment(&skip);
    if (!skip.empty()) GTEST_SKIP() << skip;

    // The loader picks our libdat2, not the reference one.
    const Result ldd = run(env + " LD_TRACE_LOADED_OBJECTS=1 " + binary);
    EXPECT_NE(ldd.output.find(lib_dir() + "/libdat2.so.2"), std::string::npos) << ldd.output;

    const Result r = run(env + " timeout 60 " + binary + " " + args);
    std::printf("---- %s %s (status %d)\n%s----\n", binary.c_str(), args.c_str(), r.status,
                r.output.c_str());
    for (const char *bad :
         {"symbol lookup error", "undefined symbol", "version `", "no version information",
          "error while loading shared libraries", "AddressSanitizer", "runtime error"})
        EXPECT_EQ(r.output.find(bad), std::string::npos) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
    ASSERT_TRUE(WIFEXITED(r.status)) << "killed or timed out: " << r.status;
    EXPECT_NE(WEXITSTATUS(r.status), 124) << "timed out";
    EXPECT_NE(WEXITSTATUS(r.status), 127) << "could not start";
}

constexpr const char *kNotFound = "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED";

TEST(DaplUtils, Dtest) {
    check_binary("/usr/bin/dtest", "-P nosuch", "Error Adaptor open: " + std::string(kNotFound));
}
TEST(DaplUtils, Dtestcm) {
    check_binary("/usr/bin/dtestcm", "-P nosuch", kNotFound);
}
TEST(DaplUtils, Dtestsrq) {
    check_binary("/usr/bin/dtestsrq", "-P nosuch", kNotFound);
}
// dtestx prints "<major> : <minor>".
TEST(DaplUtils, Dtestx) {
    check_binary("/usr/bin/dtestx", "-P nosuch",
                 "DAT_PROVIDER_NOT_FOUND : DAT_NAME_NOT_REGISTERED");
}
TEST(DaplUtils, Dapltest) {
    check_binary("/usr/bin/dapltest", "-T S -D nosuch",
                 "Could not open nosuch (" + std::string(kNotFound));
}

}  // namespace
