// OLCF/NERSC CUDA Training Series, homework 1 solution: naive square matrix multiply, one
// thread per element of C in 2-D blocks.
#include <stdio.h>

const int DSIZE = 256;
const int block_size = 16;

__global__ void mmul(const float *A, const float *B, float *C, int ds)
{
    int idx = threadIdx.x + blockDim.x * blockIdx.x;   // column
    int idy = threadIdx.y + blockDim.y * blockIdx.y;   // row
    if ((idx < ds) && (idy < ds)) {
        float temp = 0;
        for (int i = 0; i < ds; i++)
            temp += A[idy * ds + i] * B[i * ds + idx];
        C[idy * ds + idx] = temp;
    }
}
