// OLCF/NERSC CUDA Training Series, homework 1 solution: vector add, one thread per element.
#include <stdio.h>

const int DSIZE = 4096;
const int block_size = 256;

__global__ void vadd(const float *A, const float *B, float *C, int ds)
{
    int idx = threadIdx.x + blockDim.x * blockIdx.x;
    if (idx < ds)
        C[idx] = A[idx] + B[idx];
}
