// version.cpp — txops::version(): TXOPS_VERSION_STRING is set on this file alone by CMakeLists.txt from
// project(txops VERSION ...), so a version change recompiles nothing else.
#include "txops/version.h"

#ifndef TXOPS_VERSION_STRING
#error "TXOPS_VERSION_STRING must be defined by the build (CMakeLists.txt: the project VERSION)"
#endif

namespace txops {

const char* version() { return TXOPS_VERSION_STRING; }

}  // namespace txops
