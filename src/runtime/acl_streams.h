// acl_streams.h — what the runtime (acl_runtime.cpp) tells the rest of src/runtime about its streams, so that
// events and the Async memory calls can refuse a destroyed or foreign stream without owning the stream table.
#ifndef TXOPS_RUNTIME_ACL_STREAMS_H_
#define TXOPS_RUNTIME_ACL_STREAMS_H_

namespace txops {

// True for the default stream (null) and for a stream aclrtCreateStream made and aclrtDestroyStream has not
// destroyed.
bool stream_is_live_or_default(const void* stream);

}  // namespace txops

#endif  // TXOPS_RUNTIME_ACL_STREAMS_H_
