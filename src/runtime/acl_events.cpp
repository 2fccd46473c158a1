// acl_events.cpp — CANN events on the CPU. Work runs synchronously, so when aclrtRecordEvent returns every task
// put on the stream before it has finished: recording stamps the event with the steady clock and marks it
// complete; synchronising on it or making a stream wait for it never blocks. Events live in a registry (a set
// under a mutex), so a destroyed or foreign event, a destroyed stream or a null out-param returns
// ACL_ERROR_INVALID_PARAM with a message instead of touching freed memory.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acl/acl.h"
#include "core/status.h"
#include "runtime/acl_streams.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kKnownFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                                 ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL;

struct Event {
  uint32_t flag = 0;
  bool recorded = false;
  Clock::time_point when;
};

struct Events {
  std::mutex mutex;
  std::unordered_map<void*, Event*> live;  // handle -> state
};

Events& events() {
  static auto* e = new Events();  // never destroyed: usable from static destructors
  return *e;
}

aclError fail(aclError code, const std::string& message) {
  txops::set_recent_error(message);
  return code;
}

// The live event behind `handle` (caller holds the mutex), or null.
Event* find(void* handle) {
  auto it = events().live.find(handle);
  return it == events().live.end() ? nullptr : it->second;
}

std::string not_live(const char* api, const char* param) {
  return std::string(api) + ": " + param + " is not a live event (destroyed, or not made by aclrtCreateEvent)";
}

aclError create(const char* api, aclrtEvent* event, uint32_t flag) {
  if (event == nullptr) return fail(ACL_ERROR_INVALID_PARAM, std::string(api) + ": event must not be null");
  if ((flag & ~kKnownFlags) != 0) {
    char bits[16];
    std::snprintf(bits, sizeof bits, "0x%x", flag & ~kKnownFlags);
    return fail(ACL_ERROR_INVALID_PARAM, std::string(api) + ": flag has bits that are no ACL_EVENT_* flag: " + bits);
  }
  auto* e = new Event();
  e->flag = flag;
  std::lock_guard<std::mutex> lock(events().mutex);
  events().live[e] = e;  // the handle is the state's address
  *event = e;
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) { return create("aclrtCreateEvent", event, ACL_EVENT_SYNC); }

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  return create("aclrtCreateEventWithFlag", event, flag);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  Event* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(events().mutex);
    e = find(event);
    if (e == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtDestroyEvent", "event"));
    events().live.erase(event);
  }
  delete e;
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  if (!txops::stream_is_live_or_default(stream)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtRecordEvent: stream is not live (destroyed, or not made by aclrtCreateStream)");
  }
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(events().mutex);
  Event* e = find(event);
  if (e == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtRecordEvent", "event"));
  e->recorded = true;
  e->when = now;
  return ACL_SUCCESS;
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  if (!txops::stream_is_live_or_default(stream)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtResetEvent: stream is not live (destroyed, or not made by aclrtCreateStream)");
  }
  std::lock_guard<std::mutex> lock(events().mutex);
  Event* e = find(event);
  if (e == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtResetEvent", "event"));
  e->recorded = false;
  return ACL_SUCCESS;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  if (status == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status must not be null");
  std::lock_guard<std::mutex> lock(events().mutex);
  Event* e = find(event);
  if (e == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtQueryEvent", "event"));
  *status = e->recorded ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  if (status == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus: status must not be null");
  std::lock_guard<std::mutex> lock(events().mutex);
  Event* e = find(event);
  if (e == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtQueryEventStatus", "event"));
  // CANN: NOT_READY = not recorded yet, or recorded and not executed; a recorded event has executed here.
  *status = e->recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  std::lock_guard<std::mutex> lock(events().mutex);
  if (find(event) == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtSynchronizeEvent", "event"));
  return ACL_SUCCESS;  // recorded: complete; not recorded: nothing to wait for (returns at once, as in CANN)
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  if (!txops::stream_is_live_or_default(stream)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtStreamWaitEvent: stream is not live (destroyed, or not made by aclrtCreateStream)");
  }
  std::lock_guard<std::mutex> lock(events().mutex);
  if (find(event) == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtStreamWaitEvent", "event"));
  return ACL_SUCCESS;
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  if (ms == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms must not be null");
  std::lock_guard<std::mutex> lock(events().mutex);
  const Event* start = find(startEvent);
  const Event* end = find(endEvent);
  if (start == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtEventElapsedTime", "startEvent"));
  if (end == nullptr) return fail(ACL_ERROR_INVALID_PARAM, not_live("aclrtEventElapsedTime", "endEvent"));
  if (!start->recorded || !end->recorded) {
    return fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                std::string("aclrtEventElapsedTime: ") + (!start->recorded ? "startEvent" : "endEvent") +
                    " has not been recorded (aclrtRecordEvent), so it has no timestamp");
  }
  if (end->when < start->when) {
    return fail(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
                "aclrtEventElapsedTime: endEvent was recorded before startEvent");
  }
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return ACL_SUCCESS;
}

}  // extern "C"
