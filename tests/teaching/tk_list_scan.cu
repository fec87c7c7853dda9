// GPU Teaching Kit - Accelerated Computing, module 11 lab (list scan): a Brent-Kung inclusive
// scan of 2 BLOCK_SIZE elements per block in shared memory, the blocks' totals scanned by a
// second launch of the same kernel, and a third kernel adding them back.
#define BLOCK_SIZE 512

__global__ void scan(float *input, float *output, float *aux, int len)
{
    __shared__ float T[BLOCK_SIZE << 1];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_SIZE;
    T[t] = start + t < len ? input[start + t] : 0;
    T[t + BLOCK_SIZE] = start + BLOCK_SIZE + t < len ? input[start + BLOCK_SIZE + t] : 0;

    // reduction (up-sweep)
    for (int stride = 1; stride <= BLOCK_SIZE; stride <<= 1) {
        __syncthreads();
        int index = (t + 1) * stride * 2 - 1;
        if (index < 2 * BLOCK_SIZE)
            T[index] += T[index - stride];
    }
    // distribution (down-sweep)
    for (int stride = BLOCK_SIZE >> 1; stride > 0; stride >>= 1) {
        __syncthreads();
        int index = (t + 1) * stride * 2 - 1;
        if (index + stride < 2 * BLOCK_SIZE)
            T[index + stride] += T[index];
    }
    __syncthreads();
    if (start + t < len) output[start + t] = T[t];
    if (start + BLOCK_SIZE + t < len) output[start + BLOCK_SIZE + t] = T[BLOCK_SIZE + t];
    if (aux && t == 0) aux[blockIdx.x] = T[2 * BLOCK_SIZE - 1];
}

__global__ void fixup(float *input, float *aux, int len)
{
    unsigned int t = threadIdx.x, start = 2 * blockIdx.x * BLOCK_SIZE;
    if (blockIdx.x) {
        if (start + t < len) input[start + t] += aux[blockIdx.x - 1];
        if (start + BLOCK_SIZE + t < len) input[start + BLOCK_SIZE + t] += aux[blockIdx.x - 1];
    }
}
