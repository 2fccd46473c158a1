// probe_incache.cpp — dev probe (not built): RoPE compute cost with everything in cache (shape (1, 8, 256, 64)),
// ns per element for interleave_rope and in-place partial rotary mul (half, interleave), per ISA, 1 thread.
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/probe_incache.cpp build-ropeops/libtxops_internal.a -lhwy -lpthread
#include "txops/txops.h"
#include <chrono>
#include <cstdio>
#include <vector>
#include <cstdlib>
using namespace txops;
int main(int argc, char** argv){
  set_num_threads(1);
  const int64_t B=1,N=8,S=256,D=64;
  for (DType dt : {DType::kBF16, DType::kF32}) {
  size_t es = dtype_size(dt);
  std::vector<char> x(B*N*S*D*es), o(B*N*S*D*es), c(S*D*es), s(S*D*es);
  for (size_t i=0;i<x.size();i+=2){x[i+1]=0x3c;} for(size_t i=0;i<c.size();i+=2){c[i+1]=0x3c;s[i+1]=0x3c;}
  TensorView xv(x.data(),dt,{B,N,S,D}), ov(o.data(),dt,{B,N,S,D}), cv(c.data(),dt,{1,1,S,D}), sv(s.data(),dt,{1,1,S,D});
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) { set_max_isa(isa);
  for (int mode=0; mode<3; ++mode) {
  double best=1e9;
  for (int r=0;r<200;r++){ auto t0=std::chrono::steady_clock::now();
    if (mode==0) interleave_rope(xv,cv,sv,ov); else if (mode==1) inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kHalf, 0, 64); else inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kInterleave, 0, 64);
    double t=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count(); if(t<best)best=t;}
  printf("%s %s mode%d: %.3f ns/elem\n", dtype_name(dt), isa_name(isa), mode, best*1e9/(B*N*S*D));
  }}}
}
