// Double-precision math: IEEE-exact operations (sqrt, fma, division) and libdevice functions
// (exp, log, sin, cos, pow) compiled into the PTX.

extern "C" __global__ void f64Exact(const double* a, const double* b, const double* c,
                                    double* sq, double* fm, double* dv, double* mm, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = a[i], y = b[i], z = c[i];
        sq[i] = sqrt(fabs(x));
        fm[i] = fma(x, y, z);
        dv[i] = x / y;
        mm[2 * i] = fmin(x, y);
        mm[2 * i + 1] = fmax(x, z);
    }
}

extern "C" __global__ void f64Libdevice(const double* a, double* ex, double* lg, double* sn, double* cs,
                                        double* pw, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = a[i];
        ex[i] = exp(x * 0.25);
        lg[i] = log(fabs(x) + 1.0);
        sn[i] = sin(x);
        cs[i] = cos(x);
        pw[i] = pow(fabs(x) + 0.5, 1.75);
    }
}

// A small numerical integrator: n steps of a damped oscillator per thread (f64 loop).
extern "C" __global__ void f64Oscillator(const double* x0, const double* v0, double* xout, int n, int steps, double dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = x0[i];
        double v = v0[i];
        for (int s = 0; s < steps; ++s) {
            double a = -x - 0.1 * v;
            v = v + dt * a;
            x = x + dt * v;
        }
        xout[i] = x;
    }
}

// Single precision: correctly rounded operations and the fast approximate intrinsics.
extern "C" __global__ void f32Math(const float* a, const float* b, float* exact, float* approx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i], y = b[i];
        exact[4 * i + 0] = sqrtf(fabsf(x));
        exact[4 * i + 1] = x / y;
        exact[4 * i + 2] = fmaf(x, y, 1.0f);
        exact[4 * i + 3] = fminf(x, y) + fmaxf(x, y);
        approx[6 * i + 0] = __sinf(x);
        approx[6 * i + 1] = __cosf(x);
        approx[6 * i + 2] = __expf(x * 0.125f);
        approx[6 * i + 3] = __logf(fabsf(x) + 1.0f);
        approx[6 * i + 4] = rsqrtf(fabsf(x) + 1.0f);
        approx[6 * i + 5] = __fdividef(x, y);
    }
}

// libdevice single precision (sinf, expf, powf) compiled as full-accuracy sequences.
extern "C" __global__ void f32Libdevice(const float* a, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        out[4 * i + 0] = sinf(x);
        out[4 * i + 1] = expf(x * 0.25f);
        out[4 * i + 2] = logf(fabsf(x) + 1.0f);
        out[4 * i + 3] = tanhf(x * 0.1f);
    }
}
