#include "trace_test_util.hpp"

#include "trace/trace.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

namespace trace_test {

namespace {

bool is_trace_var(const char *entry) {
    for (const char *v : kTraceVars) {
        const std::size_t n = std::strlen(v);
        if (std::strncmp(entry, v, n) == 0 && entry[n] == '=') return true;
    }
    return false;
}

}  // namespace

CleanEnvironment::CleanEnvironment() {
    for (const char *v : kTraceVars) {
        if (const char *value = std::getenv(v)) saved_.emplace_back(v, value);
        ::unsetenv(v);
    }
    reconfigure();
}

CleanEnvironment::~CleanEnvironment() {
    for (const char *v : kTraceVars) ::unsetenv(v);
    for (const auto &[name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
    reconfigure();
}

void set_env(const char *name, const std::string &value) {
    ::setenv(name, value.c_str(), 1);
}

void reconfigure() {
    opendat::trace::dat_domain().configure_from_environment();
    opendat::trace::dapl_domain().configure_from_environment();
}

TempDir::TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/opendat-trace-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) std::abort();
    path_ = buf.data();
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

ChildResult run_helper(const std::vector<std::string> &args,
                       const std::vector<std::pair<std::string, std::string>> &env) {
    std::vector<std::string> envs;
    for (char **e = environ; *e; ++e)
        if (!is_trace_var(*e)) envs.emplace_back(*e);
    for (const auto &[name, value] : env) envs.push_back(name + "=" + value);
    std::vector<char *> envp;
    for (auto &s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);

    std::vector<std::string> argv_s{OPENDAT_TRACE_HELPER};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);

    ChildResult r;
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return r;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
        ::close(out[0]);
        ::close(err[0]);
        return r;
    }
    r.pid = pid;

    // Read both pipes until EOF (poll, so a child filling one pipe cannot deadlock us).
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string *sinks[2] = {&r.out, &r.err};
    int open_count = 2;
    const auto deadline = std::time(nullptr) + 60;
    while (open_count > 0 && std::time(nullptr) < deadline) {
        if (::poll(fds, 2, 1000) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_count;
            }
        }
    }
    if (open_count > 0) ::kill(pid, SIGKILL);
    for (auto &f : fds)
        if (f.fd >= 0) ::close(f.fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t nl = text.find('\n', start);
        if (nl == std::string::npos) {
            lines.push_back(text.substr(start));  // unterminated: a test will notice
            break;
        }
        lines.push_back(text.substr(start, nl - start));
        start = nl + 1;
    }
    return lines;
}

const std::regex &line_regex() {
    static const std::regex re(
        R"(^(DAT|DAPL) (ERR|WRN|EVT) (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z) pid=(\d+) tid=(\d+) ([^ :(]+(?:\([^ ]+:\d+\))?): (.*)$)");
    return re;
}

std::vector<std::string> warning_lines(const std::string &text) {
    std::vector<std::string> out;
    for (const auto &l : split_lines(text)) {
        std::smatch m;
        if (std::regex_match(l, m, line_regex()) && m[2] == "WRN" && m[6] == "trace")
            out.push_back(l);
    }
    return out;
}

}  // namespace trace_test
