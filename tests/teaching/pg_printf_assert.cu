// CUDA C++ Programming Guide, "Formatted Output" (printf from every thread) and "Assertion"
// (assert in device code, which stops the kernel when it fails).
#include <cstdio>
#include <cassert>

__global__ void helloCUDA(float f)
{
    printf("Hello thread %d, f=%f\n", threadIdx.x, f);
}

__global__ void testAssert(int* flags)
{
    int is_one = flags[0];
    int should_be_one = flags[1];
    // This will have no effect
    assert(is_one);
    // This will halt kernel execution
    assert(should_be_one);
}
