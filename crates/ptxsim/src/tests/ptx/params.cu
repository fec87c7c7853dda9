// Engine tests: addresses of kernel parameters and of device-function parameters.
struct P3 { float x, y, z; int k; };
__device__ __noinline__ float dot_ptr(const P3* p, const P3* q) { return p->x * q->x + p->y * q->y + p->z * q->z + p->k; }
__device__ __noinline__ float byval(P3 p, int i) {
    const P3* pp = &p;
    volatile const float* v = (volatile const float*)pp;
    return v[i % 3] + dot_ptr(pp, pp);
}
extern "C" __global__ void params(P3 s, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const P3* ps = &s;
    volatile const float* v = (volatile const float*)ps;
    out[i] = dot_ptr(ps, ps) + byval(s, i) + v[(i + 1) % 3];
}
