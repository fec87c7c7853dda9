// NVIDIA developer blog, "Finite Difference Methods in CUDA C/C++, Part 1": the x derivative of
// a 64^3 periodic grid with an eighth-order stencil, one (y, z) pencil of x per block row held
// in shared memory with 4-point halos; the coefficients live in constant memory.
#include <cassert>

#define mx 64
#define my 64
#define mz 64
#define sPencils 4

__constant__ float c_ax, c_bx, c_cx, c_dx;

__global__ void derivative_x(float *f, float *df)
{
  __shared__ float s_f[sPencils][mx+8];   // 4 halo points each side

  int i   = threadIdx.x;
  int j   = blockIdx.x*blockDim.y + threadIdx.y;
  int k  = blockIdx.y;
  int si = i + 4;         // x inside the pencil, past the halo
  int sj = threadIdx.y;   // which pencil of the block
  assert(blockDim.x == mx && blockDim.y == sPencils);

  int globalIdx = k * mx * my + j * mx + i;

  s_f[sj][si] = f[globalIdx];

  __syncthreads();

  // periodic boundary: the halos are copies of the far end of the pencil
  if (i < 4) {
    s_f[sj][si-4]  = s_f[sj][si+mx-5];
    s_f[sj][si+mx] = s_f[sj][si+1];
  }

  __syncthreads();

  df[globalIdx] =
    ( c_ax * ( s_f[sj][si+1] - s_f[sj][si-1] )
    + c_bx * ( s_f[sj][si+2] - s_f[sj][si-2] )
    + c_cx * ( s_f[sj][si+3] - s_f[sj][si-3] )
    + c_dx * ( s_f[sj][si+4] - s_f[sj][si-4] ) );
}
