// OLCF/NERSC CUDA Training Series, homework 4 solution: row and column sums of a square
// ds x ds matrix, one thread per row (each thread strides through memory) or per column
// (neighbouring threads read neighbouring addresses).
#include <stdio.h>

const size_t DSIZE = 16384;
const int block_size = 256;

__global__ void row_sums(const float *A, float *sums, size_t ds)
{
    int idx = threadIdx.x + blockDim.x * blockIdx.x;
    if (idx < ds) {
        float sum = 0.0f;
        for (size_t i = 0; i < ds; i++)
            sum += A[idx * ds + i];   // along row idx
        sums[idx] = sum;
    }
}

__global__ void column_sums(const float *A, float *sums, size_t ds)
{
    int idx = threadIdx.x + blockDim.x * blockIdx.x;
    if (idx < ds) {
        float sum = 0.0f;
        for (size_t i = 0; i < ds; i++)
            sum += A[idx + ds * i];   // down column idx
        sums[idx] = sum;
    }
}
