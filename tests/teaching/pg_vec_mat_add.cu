// CUDA C++ Programming Guide, "Kernels" and "Thread Hierarchy": one thread per element, one
// block of N threads for vectors, a 2-D grid of 16x16 blocks for N x N matrices.
#include <cstdio>

#define N 64

__global__ void VecAdd(float* A, float* B, float* C)
{
    int i = threadIdx.x;
    C[i] = A[i] + B[i];
}

__global__ void MatAdd(float A[N][N], float B[N][N], float C[N][N])
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < N && j < N)
        C[i][j] = A[i][j] + B[i][j];
}
