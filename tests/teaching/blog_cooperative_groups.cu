// NVIDIA developer blog, "Cooperative Groups: Flexible CUDA Thread Programming": each thread
// sums four ints (read as an int4), then a thread_group reduction in shared memory, and one
// atomicAdd per block.
#include <cooperative_groups.h>
using namespace cooperative_groups;

__device__ int reduce_sum(thread_group g, int *temp, int val)
{
    int lane = g.thread_rank();

    // halve the adding threads each round: lane adds lane + i's value
    for (int i = g.size() / 2; i > 0; i /= 2)
    {
        temp[lane] = val;
        g.sync();
        if(lane<i) val += temp[lane + i];
        g.sync();
    }
    return val;   // the whole sum in rank 0 only
}

__device__ int thread_sum(int *input, int n)
{
    int sum = 0;

    for(int i = blockIdx.x * blockDim.x + threadIdx.x;
        i < n / 4;
        i += blockDim.x * gridDim.x)
    {
        int4 in = ((int4*)input)[i];
        sum += in.x + in.y + in.z + in.w;
    }
    return sum;
}

__global__ void sum_kernel_block(int *sum, int *input, int n)
{
    int my_sum = thread_sum(input, n);

    extern __shared__ int temp[];
    auto g = this_thread_block();
    int block_sum = reduce_sum(g, temp, my_sum);

    if (g.thread_rank() == 0) atomicAdd(sum, block_sum);
}
