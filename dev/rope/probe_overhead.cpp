// probe_overhead.cpp — dev probe (not built): per-call overhead of the RoPE ops on 1-row shapes (C++ API:
// prepare + run; aclnn two-phase for interleave_rope). Build:
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/probe_overhead.cpp build-ropeops/libtxops_internal.a -lhwy -lpthread
#include "txops/txops.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "acl/acl.h"
#include <chrono>
#include <cstdio>
#include <vector>
using namespace txops;
int main(){
  set_num_threads(1);
  std::vector<uint16_t> x(64), o(64), c(64), s(64);
  TensorView xv(x.data(),DType::kBF16,{1,1,1,64}), ov(o.data(),DType::kBF16,{1,1,1,64}), cv(c.data(),DType::kBF16,{1,1,1,64}), sv(s.data(),DType::kBF16,{1,1,1,64});
  std::vector<uint16_t> q(128), k(128), c2(128), s2(128);
  TensorView qv(q.data(),DType::kBF16,{1,1,1,128}), kv(k.data(),DType::kBF16,{1,1,1,128}), c2v(c2.data(),DType::kBF16,{1,1,1,128}), s2v(s2.data(),DType::kBF16,{1,1,1,128});
  for (int round=0; round<3; ++round) {
  auto t0=std::chrono::steady_clock::now();
  const int n=200000;
  for(int i=0;i<n;i++) interleave_rope(xv,cv,sv,ov);
  auto t1=std::chrono::steady_clock::now();
  for(int i=0;i<n;i++) apply_rotary_pos_emb(qv,kv,c2v,s2v,Layout::kBSND,RotaryMode::kHalf);
  auto t2=std::chrono::steady_clock::now();
  std::vector<uint16_t> dq(128), dk(128), dc(128), ds(128);
  TensorView dqv(dq.data(),DType::kBF16,{1,1,1,128}), dkv(dk.data(),DType::kBF16,{1,1,1,128});
  TensorView dcv(dc.data(),DType::kBF16,{1,1,1,128}), dsv(ds.data(),DType::kBF16,{1,1,1,128});
  for(int i=0;i<n;i++) apply_rotary_pos_emb_grad(qv,kv,c2v,s2v,nullptr,nullptr,RotaryMode::kHalf,Layout::kBSND,dqv,dkv,nullptr,nullptr);
  auto t3=std::chrono::steady_clock::now();
  for(int i=0;i<n;i++) apply_rotary_pos_emb_grad(qv,kv,c2v,s2v,&qv,&kv,RotaryMode::kHalf,Layout::kBSND,dqv,dkv,&dcv,&dsv);
  auto t4=std::chrono::steady_clock::now();
  printf("C++ interleave_rope 1 row: %.3f us/call; apply_rotary_pos_emb 2 rows: %.3f us/call; grad %.3f us; grad+cos %.3f us\n", std::chrono::duration<double,std::micro>(t1-t0).count()/n, std::chrono::duration<double,std::micro>(t2-t1).count()/n, std::chrono::duration<double,std::micro>(t3-t2).count()/n, std::chrono::duration<double,std::micro>(t4-t3).count()/n);
  }
  // aclnn two-phase
  aclInit(nullptr);
  int64_t shp[4]={1,1,1,64}, st[4]={64,64,64,1};
  aclTensor* tx=aclCreateTensor(shp,4,ACL_BF16,st,0,ACL_FORMAT_ND,shp,4,x.data());
  aclTensor* to=aclCreateTensor(shp,4,ACL_BF16,st,0,ACL_FORMAT_ND,shp,4,o.data());
  aclTensor* tc=aclCreateTensor(shp,4,ACL_BF16,st,0,ACL_FORMAT_ND,shp,4,c.data());
  aclTensor* ts=aclCreateTensor(shp,4,ACL_BF16,st,0,ACL_FORMAT_ND,shp,4,s.data());
  for (int round=0; round<3; ++round) {
  auto t0=std::chrono::steady_clock::now(); const int n=200000;
  for(int i=0;i<n;i++){ uint64_t ws=0; aclOpExecutor* ex=nullptr; if(aclnnInterleaveRopeGetWorkspaceSize(tx,tc,ts,to,&ws,&ex)) {printf("err %s\n", aclGetRecentErrMsg()); return 1;} aclnnInterleaveRope(nullptr,ws,ex,nullptr);}
  auto t1=std::chrono::steady_clock::now();
  printf("aclnn two-phase interleave_rope 1 row: %.3f us/call\n", std::chrono::duration<double,std::micro>(t1-t0).count()/n);
  }
}
