// NVIDIA DLI "Fundamentals of Accelerated Computing with Modern CUDA C++" (accelerated-computing
// -hub, gpu-cpp-tutorial 03.05 Shared Memory): a histogram of temperatures in 10-degree bins,
// cuda::std::span parameters, block-scope atomic_ref into shared memory, then device scope.
#include <cuda/std/span>
#include <cuda/atomic>
#include <cstdio>

__global__ void histogram_kernel(cuda::std::span<float> temperatures,
                                 cuda::std::span<int> histogram)
{
    __shared__ int block_histogram[10];
    if (threadIdx.x < 10) block_histogram[threadIdx.x] = 0;
    __syncthreads();

    int cell = blockIdx.x * blockDim.x + threadIdx.x;
    int bin = static_cast<int>(temperatures[cell] / 10);
    cuda::atomic_ref<int, cuda::thread_scope_block> block_ref(block_histogram[bin]);
    block_ref.fetch_add(1);
    __syncthreads();

    if (threadIdx.x < 10) {
        cuda::atomic_ref<int, cuda::thread_scope_device> ref(histogram[threadIdx.x]);
        ref.fetch_add(block_histogram[threadIdx.x]);
    }
}
