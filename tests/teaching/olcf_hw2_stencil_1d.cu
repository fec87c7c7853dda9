// OLCF/NERSC CUDA Training Series, homework 2 solution: 1-D stencil of radius RADIUS through
// shared memory with a halo on each side; the host launches it on `in + RADIUS` and
// `out + RADIUS` so that the halo reads stay inside the arrays.
#include <stdio.h>
#include <algorithm>
#include <cassert>

using namespace std;

#define N 4096
#define RADIUS 3
#define BLOCK_SIZE 16

__global__ void stencil_1d(int *in, int *out)
{
    __shared__ int temp[BLOCK_SIZE + 2 * RADIUS];
    int gindex = threadIdx.x + blockIdx.x * blockDim.x;
    int lindex = threadIdx.x + RADIUS;
    assert(blockDim.x == BLOCK_SIZE);

    // the block's elements, and the halos read by the first RADIUS threads
    temp[lindex] = in[gindex];
    if (threadIdx.x < RADIUS) {
        temp[lindex - RADIUS] = in[gindex - RADIUS];
        temp[lindex + BLOCK_SIZE] = in[gindex + BLOCK_SIZE];
    }
    __syncthreads();

    int result = 0;
    for (int offset = -RADIUS; offset <= RADIUS; offset++)
        result += temp[lindex + offset];
    out[gindex] = result;
}
