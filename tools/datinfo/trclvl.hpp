// dat_trclvl_query / dat_trclvl_modify looked up at run time: they are OpenDAT additions
// (version node OPENDAT_2.0), and datinfo must still start when it runs with another
// libdat2.so.2 (e.g. the reference one via LD_LIBRARY_PATH). Absent: DAT_NOT_IMPLEMENTED.
#pragma once

#include <dat2/dat_trace.h>

namespace datinfo {

DAT_RETURN trclvl_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) noexcept;
DAT_RETURN trclvl_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) noexcept;

}  // namespace datinfo
