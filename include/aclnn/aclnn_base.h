/* aclnn_base.h — the name CANN's operator headers include for the tensor API: txops keeps it in acl_meta.h. */
#ifndef TXOPS_ACLNN_ACLNN_BASE_H_
#define TXOPS_ACLNN_ACLNN_BASE_H_
#include "aclnn/acl_meta.h"
#endif
