/* aclnn_util.h — the export macro CANN's operator headers (op_api/aclnn_*.h) use, so they compile against txops. */
#ifndef TXOPS_ACLNN_UTIL_H_
#define TXOPS_ACLNN_UTIL_H_
#include "aclnn/acl_meta.h"
#ifndef ACLNN_API
#define ACLNN_API TXOPS_API
#endif
#endif
