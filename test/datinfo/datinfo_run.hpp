// Helpers of the datinfo tests: write a configuration file, run datinfo on it.
#pragma once

#include "child_process.hpp"

#include <map>
#include <string>
#include <vector>

namespace datinfo_test {

// Writes `text` to a fresh file under the test's binary directory and returns its path.
std::string write_conf(const std::string &name, const std::string &text);

// Runs datinfo with DAT_OVERRIDE=conf (unless conf is empty: then DAT_OVERRIDE is unset)
// and the other DAT_/DAPL_ trace variables cleared, plus `env`.
opendat::testing::ChildResult run_datinfo(const std::string &conf,
                                          const std::vector<std::string> &args,
                                          const std::map<std::string, std::string> &env = {});

// A dat.conf line for the fake provider.
std::string fake_line(const std::string &name, const std::string &ia_params = "fake 0",
                      const std::string &flags = "u2.0 nonthreadsafe default");

// Runs python3 on a script with the file as argv[1]; returns its stdout (exit code checked by
// caller).
opendat::testing::ChildResult python(const std::string &script, const std::string &file);

}  // namespace datinfo_test
