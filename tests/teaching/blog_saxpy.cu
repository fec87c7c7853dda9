// NVIDIA developer blog, "An Easy Introduction to CUDA C and C++" (saxpy, one element per
// thread) and "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops" (the same with a
// grid-stride loop, launched with 32 blocks per SM).
#include <stdio.h>

__global__
void saxpy(int n, float a, float *x, float *y)
{
  int i = blockIdx.x*blockDim.x + threadIdx.x;
  if (i < n) y[i] = a*x[i] + y[i];
}

__global__
void saxpy_gridstride(int n, float a, float *x, float *y)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
