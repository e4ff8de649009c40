#include "datinfo_run.hpp"

#include <atomic>
#include <fstream>

#include <unistd.h>

namespace datinfo_test {

std::string write_conf(const std::string &name, const std::string &text) {
    static std::atomic<int> counter{0};
    // pid + counter: test cases may run in parallel processes (ctest -j).
    const std::string path = std::string(DATINFO_TEST_DIR) + "/" + std::to_string(getpid()) + "-" +
                             std::to_string(counter++) + "-" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
}

opendat::testing::ChildResult run_datinfo(const std::string &conf,
                                          const std::vector<std::string> &args,
                                          const std::map<std::string, std::string> &env) {
    opendat::testing::ChildOptions o;
    o.unset_env = {"DAT_OVERRIDE",    "DAT_TRACE_LEVEL", "DAPL_TRACE_LEVEL",
                   "DAT_DBG_TYPE",    "DAPL_DBG_TYPE",   "DAT_TRACE_DEST",
                   "DAPL_TRACE_DEST", "DAT_DBG_DEST",    "DAPL_DBG_DEST"};
    if (!conf.empty()) o.env["DAT_OVERRIDE"] = conf;
    for (const auto &[k, v] : env) o.env[k] = v;
    o.timeout = std::chrono::seconds(60);
    std::vector<std::string> argv{DATINFO_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    return opendat::testing::run_child(argv, o);
}

std::string fake_line(const std::string &name, const std::string &ia_params,
                      const std::string &flags) {
    return name + " " + flags + " " DATINFO_FAKE_PROVIDER " fake.1.0 \"" + ia_params + "\" \"\"\n";
}

opendat::testing::ChildResult python(const std::string &script, const std::string &file) {
    return opendat::testing::run_child({"python3", "-c", script, file});
}

}  // namespace datinfo_test
