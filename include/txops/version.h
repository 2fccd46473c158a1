// version.h — the version of the txops library: the VERSION of project() in the top CMakeLists.txt, the one
// place it is defined (the Python package's version and txops.__version__ are read from there too).
#ifndef TXOPS_VERSION_H_
#define TXOPS_VERSION_H_

#include "txops/txops.h"

namespace txops {

TXOPS_CPP_API const char* version();  // "MAJOR.MINOR.PATCH" of the library that is linked

}  // namespace txops

#endif  // TXOPS_VERSION_H_
