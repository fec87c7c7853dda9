// Tutorial: element-wise vector operations, one thread per element.

extern "C" __global__ void vecAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// Grid-stride loop: any grid size covers any n.
extern "C" __global__ void saxpyGridStride(float alpha, const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = alpha * x[i] + y[i];
    }
}

// Vectorised loads and stores (ld.global.v4.f32 / st.global.v4.f32).
extern "C" __global__ void scaleFloat4(const float4* in, float4* out, float s, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        out[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
    }
}

// f64 and 64-bit integer element-wise work with double2 / longlong2 vectors.
extern "C" __global__ void addDouble2(const double2* a, const double2* b, double2* c, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        double2 x = a[i];
        double2 y = b[i];
        c[i] = make_double2(x.x + y.x, x.y - y.y);
    }
}
