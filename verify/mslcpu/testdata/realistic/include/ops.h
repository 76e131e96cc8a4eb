// A header found through -I: the helpers a project keeps apart from its kernels.
#pragma once
#include <metal_stdlib>
using namespace metal;

template <typename T> struct Scale {
  METAL_FUNC T operator()(T x, T s) const { return x * s; }
};
