#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char **environ;

namespace opendat::testing {
namespace {

// The child's environment: ours, minus unset_env, with options.env applied on top.
std::vector<std::string> build_environment(const ChildOptions &options) {
    std::map<std::string, std::string> vars;
    for (char **e = environ; *e != nullptr; ++e) {
        std::string kv(*e);
        auto eq = kv.find('=');
        if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto &name : options.unset_env) vars.erase(name);
    for (const auto &[k, v] : options.env) vars[k] = v;
    std::vector<std::string> out;
    out.reserve(vars.size());
    for (const auto &[k, v] : vars) out.push_back(k + "=" + v);
    return out;
}

std::vector<char *> c_strings(std::vector<std::string> &strings) {
    std::vector<char *> out;
    for (auto &s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace

ChildResult run_child(const std::vector<std::string> &argv_in, const ChildOptions &options) {
    ChildResult result;
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

    // Own process group, so a deadline kills the program and anything it started.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);

    std::vector<std::string> argv_strings = argv_in;
    std::vector<std::string> env_strings = build_environment(options);
    auto argv = c_strings(argv_strings);
    auto envp = c_strings(env_strings);

    pid_t pid = -1;
    int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        result.exit_code = 127;
        result.err = "posix_spawnp " + argv_in.at(0) + ": " + std::strerror(rc);
        return result;
    }

    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    std::array<pollfd, 2> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
    std::string *sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            result.timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (auto &f : fds)
        if (f.fd >= 0) close(f.fd);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.exit_code = 128 + WTERMSIG(status);
    return result;
}

std::map<std::string, std::string> sanitizer_env_for_system_binaries() {
    std::map<std::string, std::string> env;
#if defined(OPENDAT_SANITIZER_ADDRESS)
    env["LD_PRELOAD"] = OPENDAT_ASAN_RUNTIME;
    // The system programs are not ours: do not fail them for their own leaks.
    env["ASAN_OPTIONS"] = "detect_leaks=0";
#elif defined(OPENDAT_SANITIZER_THREAD)
    env["LD_PRELOAD"] = OPENDAT_TSAN_RUNTIME;
#endif
    return env;
}

}  // namespace opendat::testing
