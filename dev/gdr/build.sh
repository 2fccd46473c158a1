#!/bin/sh
# dev/gdr/build.sh — throwaway: builds dev/gdr/<name>.cpp against build/libtxops_internal.a (BUILD_DIR overrides).
set -e
cd "$(dirname "$0")/../.."
B=${BUILD_DIR:-build}
cmake --build "$B" -j2 --target txops_internal >/dev/null 2>&1
g++ -O2 -std=c++17 -march=native -fopenmp -Iinclude -Isrc "dev/gdr/$1.cpp" "$B/libtxops_internal.a" -lhwy \
  -o "$B/dev_$1"
