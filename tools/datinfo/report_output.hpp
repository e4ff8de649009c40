// Keeps the report on stdout clean: providers print diagnostics of their own to stdout
// (Debian's DAPL providers do, at their default debug level), which would break the YAML
// or JSON a script reads. While datinfo runs, file descriptor 1 points at stderr; the report
// goes to a private duplicate of the original stdout.
#pragma once

#include <string>

namespace datinfo {

class ReportOutput {
  public:
    ReportOutput() noexcept;  // moves fd 1 aside (if that fails, reports go to fd 1 as usual)
    ~ReportOutput();          // puts it back
    ReportOutput(const ReportOutput &) = delete;
    ReportOutput &operator=(const ReportOutput &) = delete;

    // Writes all of `text`; false on a write error (e.g. a closed pipe).
    bool write(const std::string &text) noexcept;

  private:
    int saved_stdout_ = -1;
};

}  // namespace datinfo
