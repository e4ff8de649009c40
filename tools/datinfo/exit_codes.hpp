// datinfo's exit statuses (documented in datinfo --help and datinfo(1)).
#pragma once

namespace datinfo {

enum ExitCode : int {
    kExitOk = 0,            // everything asked for was shown (and -P NAME opened)
    kExitEntryFailed = 1,   // -P NAME: the IA could not be opened, or --trace could not be applied
    kExitUsage = 2,         // bad command line
    kExitNoConfig = 3,      // no configuration file could be read (e.g. a bad DAT_OVERRIDE)
    kExitUnknownEntry = 4,  // -P NAME: no entry of that name, or one that is never loaded
    kExitInternal = 5,      // unexpected internal error (out of memory, ...)
};

}  // namespace datinfo
