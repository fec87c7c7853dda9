// Engine tests: calls through function pointers (device function tables, virtual functions).
typedef float (*op_t)(float, float);
__device__ float addf(float a, float b) { return a + b; }
__device__ float mulf(float a, float b) { return a * b; }
__device__ float subf(float a, float b) { return a - b; }
__device__ op_t table[3] = {addf, mulf, subf};

struct Shape { __device__ virtual float area() const = 0; };
struct Sq : Shape { float s; __device__ Sq(float s) : s(s) {} __device__ float area() const override { return s * s; } };
struct Ci : Shape { float r; __device__ Ci(float r) : r(r) {} __device__ float area() const override { return 3.0f * r * r; } };

extern "C" __global__ void fptr(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    op_t f = table[i % 3];
    Sq sq(a[i]); Ci ci(b[i]);
    const Shape* s = (i & 1) ? (const Shape*)&sq : (const Shape*)&ci;
    out[i] = f(a[i], b[i]) + s->area();
}
