// NVIDIA developer blog, "An Even Easier Introduction to CUDA": add y = x + y with a
// grid-stride loop, launched as add<<<numBlocks, blockSize>>>(N, x, y).
#include <math.h>

__global__
void add(int n, float *x, float *y)
{
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  for (int i = index; i < n; i += stride)
    y[i] = x[i] + y[i];
}
