#!/bin/sh
# dev/gdr/build.sh — throwaway: builds dev/gdr/<name>.cpp against build-gdr/libtxops_internal.a.
set -e
cd "$(dirname "$0")/../.."
cmake --build build-gdr -j2 --target txops_internal >/dev/null 2>&1
g++ -O2 -std=c++17 -march=native -fopenmp -Iinclude -Isrc "dev/gdr/$1.cpp" build-gdr/libtxops_internal.a -lhwy \
  -o "build-gdr/dev_$1"
