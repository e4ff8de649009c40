#include "config_file.hpp"

#include "conf_parser.hpp"
#include "yaml_parser.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace opendat::registry {

bool is_yaml_path(const std::string &path) noexcept {
    auto ends = [&](const char *suffix) {
        const std::size_t n = std::strlen(suffix);
        return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
    };
    return ends(".yaml") || ends(".yml");
}

FileParse read_config_file(const std::string &path) noexcept {
    FileParse fp;
    try {
        // A directory opens as a stream on Linux and only fails on the first read; name it
        // for what it is rather than report a bare read error.
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            fp.result.diagnostics.push_back(
                ConfigDiagnostic{path, 0, "file", "is a directory, not a configuration file"});
            return fp;
        }
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            fp.result.diagnostics.push_back(ConfigDiagnostic{
                path, 0, "file", std::string("cannot open: ") + std::strerror(errno)});
            return fp;
        }
        // Bounded read: a config file is small; refusing a huge one beats exhausting memory.
        std::string text;
        char buf[65536];
        while (in.read(buf, sizeof buf) || in.gcount() > 0) {
            text.append(buf, static_cast<std::size_t>(in.gcount()));
            if (text.size() > kMaxConfigFileSize) {
                fp.result.diagnostics.push_back(ConfigDiagnostic{
                    path, 0, "file",
                    "file larger than " + std::to_string(kMaxConfigFileSize) + " bytes, ignored"});
                return fp;
            }
        }
        if (in.bad()) {
            fp.result.diagnostics.push_back(ConfigDiagnostic{path, 0, "file", "read error"});
            return fp;
        }
        fp.opened = true;
        fp.result = is_yaml_path(path) ? parse_yaml_conf(text, path) : parse_dat_conf(text, path);
    } catch (const std::exception &ex) {
        fp.result.diagnostics.push_back(
            ConfigDiagnostic{path, 0, "file", std::string("internal error: ") + ex.what()});
    } catch (...) {
        fp.result.diagnostics.push_back(ConfigDiagnostic{path, 0, "file", "internal error"});
    }
    return fp;
}

}  // namespace opendat::registry
