// 2-D and 3-D grids and blocks, and the special registers that describe them.

// Writes, for every element of a W x H array, the linear ids of its block and thread.
extern "C" __global__ void grid2d(int* blockId, int* threadId, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        blockId[y * w + x] = blockIdx.y * gridDim.x + blockIdx.x;
        threadId[y * w + x] = threadIdx.y * blockDim.x + threadIdx.x;
    }
}

// A D x H x W volume filled from a 3-D grid of 3-D blocks with a function of (x, y, z).
extern "C" __global__ void grid3d(float* vol, int w, int h, int d)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < w && y < h && z < d) {
        vol[(z * h + y) * w + x] = (float)x + 100.0f * (float)y + 10000.0f * (float)z;
    }
}

// Every dimension register for one thread per block: records (tid, ntid, ctaid, nctaid).
extern "C" __global__ void dimsRecord(unsigned* out)
{
    unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    unsigned* o = out + (b * nt + t) * 12;
    o[0] = threadIdx.x;
    o[1] = threadIdx.y;
    o[2] = threadIdx.z;
    o[3] = blockDim.x;
    o[4] = blockDim.y;
    o[5] = blockDim.z;
    o[6] = blockIdx.x;
    o[7] = blockIdx.y;
    o[8] = blockIdx.z;
    o[9] = gridDim.x;
    o[10] = gridDim.y;
    o[11] = gridDim.z;
}

// 3-D seven-point average on a volume (a 3-D stencil with a 3-D block).
extern "C" __global__ void stencil3d(const float* in, float* out, int w, int h, int d)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x <= 0 || y <= 0 || z <= 0 || x >= w - 1 || y >= h - 1 || z >= d - 1) {
        return;
    }
    int i = (z * h + y) * w + x;
    float s = in[i - 1] + in[i + 1] + in[i - w] + in[i + w] + in[i - w * h] + in[i + w * h];
    out[i] = (s + in[i]) / 7.0f;
}

// clock64 and globaltimer never go backwards within a thread.
extern "C" __global__ void clocks(const int* in, int* ok, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long c0 = clock64();
    unsigned long long g0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    int acc = 0;
    for (int k = 0; k < 16; ++k) {
        acc += (i < n) ? in[(i + k) % n] : k;
    }
    long long c1 = clock64();
    unsigned long long g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    unsigned c32 = clock();
    if (i < n) {
        ok[2 * i] = (c1 >= c0 && g1 >= g0 && c32 == c32) ? 1 : 0;
        ok[2 * i + 1] = acc;
    }
}
