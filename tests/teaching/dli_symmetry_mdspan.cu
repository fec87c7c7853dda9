// NVIDIA DLI "Fundamentals of Accelerated Computing with Modern CUDA C++" (accelerated-computing
// -hub, gpu-cpp-tutorial 03.02 Kernels): a 2-D temperature grid as a cuda::std::mdspan (the
// course's `temperature_grid_f` alias), each thread comparing one row with its mirror row.
#include <cuda/std/mdspan>
#include <cstdio>

using temperature_grid_f = cuda::std::mdspan<float, cuda::std::dims<2>>;

__global__ void symmetry_check_kernel(temperature_grid_f temp, int* asymmetric)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < temp.extent(0) / 2) {
        for (int column = 0; column < temp.extent(1); column++) {
            if (abs(temp(row, column) - temp(temp.extent(0) - 1 - row, column)) > 0.1) {
                atomicAdd(asymmetric, 1);
            }
        }
    }
}
