// OLCF/NERSC CUDA Training Series, homework 2 solution: square matrix multiply that stages
// block_size x block_size tiles of A and B in shared memory.
#include <stdio.h>

const int DSIZE = 256;
const int block_size = 32;

__global__ void mmul(const float *A, const float *B, float *C, int ds)
{
    __shared__ float As[block_size][block_size];
    __shared__ float Bs[block_size][block_size];

    int idx = threadIdx.x + blockDim.x * blockIdx.x;   // column of C
    int idy = threadIdx.y + blockDim.y * blockIdx.y;   // row of C

    if ((idx < ds) && (idy < ds)) {
        float temp = 0;
        for (int i = 0; i < ds / block_size; i++) {
            // this thread's element of each tile
            As[threadIdx.y][threadIdx.x] = A[idy * ds + (i * block_size + threadIdx.x)];
            Bs[threadIdx.y][threadIdx.x] = B[(i * block_size + threadIdx.y) * ds + idx];
            __syncthreads();
            for (int k = 0; k < block_size; k++)
                temp += As[threadIdx.y][k] * Bs[k][threadIdx.x];
            __syncthreads();
        }
        C[idy * ds + idx] = temp;
    }
}
