// Test driver. libdat2 reads dat.conf in its constructor, before main() runs, so the test
// configuration has to be in the environment when the process starts: on first start we
// write the configuration and re-execute ourselves with DAT_OVERRIDE pointing at it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

std::string write_conf() {
    const std::string path = std::string(FE_TEST_BINARY_DIR) + "/frontend-dat.conf";
    const std::string tmp = path + "." + std::to_string(getpid());
    {
        std::ofstream out(tmp);
        const std::string lib = FE_FAKE_PROVIDER;
        out << "# written by frontend_tests: the fake provider only\n"
            << "fe-good u2.0 nonthreadsafe default " << lib << " fe.2.0 \"good\" \"\"\n"
            << "fe-good2 u2.0 nonthreadsafe default " << lib << " fe.2.0 \"good\" \"\"\n"
            << "fe-noext u2.0 nonthreadsafe default " << lib << " fe.2.0 \"noext\" \"\"\n"
            << "fe-fail u2.0 nonthreadsafe default " << lib << " fe.2.0 \"fail\" \"\"\n"
            << "fe-ts u2.0 threadsafe default " << lib << " fe.2.0 \"good\" \"\"\n"
            << "fe-slow u2.0 nonthreadsafe default " << lib << " fe.2.0 \"slow\" \"\"\n"
            << "fe-kernel k2.0 nonthreadsafe default " << lib << " fe.2.0 \"good\" \"\"\n"
            << "fe-nondefault u2.0 nonthreadsafe nondefault " << lib << " fe.2.0 \"good\" \"\"\n";
    }
    std::rename(tmp.c_str(), path.c_str());  // atomic: parallel test processes share the file
    return path;
}

}  // namespace

int main(int argc, char **argv) {
    if (std::getenv("FE_TEST_CONFIGURED") == nullptr) {
        const std::string conf = write_conf();
        setenv("DAT_OVERRIDE", conf.c_str(), 1);
        setenv("FE_TEST_CONF", conf.c_str(), 1);
        setenv("FE_TEST_CONFIGURED", "1", 1);
        execv("/proc/self/exe", argv);
        std::perror("frontend_tests: re-exec");
        return 2;
    }
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
