// Every atomic operation on shared memory; each block writes its results to out[blockIdx.x * K + j].

#define K 16

extern "C" __global__ void sharedAtomicsInt(const int* v, int* out, unsigned* uout, unsigned* oldInc, int n)
{
    __shared__ int s[6];
    __shared__ unsigned u[5];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid == 0) {
        s[0] = 0;            // add
        s[1] = 0x7fffffff;   // min
        s[2] = -0x7fffffff - 1; // max
        s[3] = -1;           // exch
        s[4] = 0;            // cas counter
        s[5] = 0;            // ticket
        u[0] = 0xffffffffu;  // and
        u[1] = 0;            // or
        u[2] = 0;            // xor
        u[3] = 0;            // inc
        u[4] = 0;            // dec
    }
    __syncthreads();
    if (i < n) {
        int x = v[i];
        atomicAdd(&s[0], x);
        atomicMin(&s[1], x);
        atomicMax(&s[2], x);
        atomicExch(&s[3], x);
        int cur = s[4];
        while (true) {
            int seen = atomicCAS(&s[4], cur, cur + 1);
            if (seen == cur) {
                break;
            }
            cur = seen;
        }
        atomicAnd(&u[0], (unsigned)x | 0x80000001u);
        atomicOr(&u[1], (unsigned)x & 0x0ff0ff00u);
        atomicXor(&u[2], (unsigned)x);
        oldInc[i] = atomicInc(&u[3], 9u);
        atomicDec(&u[4], 5u);
    }
    __syncthreads();
    if (tid == 0) {
        int* o = out + blockIdx.x * K;
        o[0] = s[0];
        o[1] = s[1];
        o[2] = s[2];
        o[3] = s[3];
        o[4] = s[4];
        unsigned* q = uout + blockIdx.x * K;
        q[0] = u[0];
        q[1] = u[1];
        q[2] = u[2];
        q[3] = u[3];
        q[4] = u[4];
    }
}

extern "C" __global__ void sharedAtomicsWide(const float* f, const double* d, const unsigned long long* w,
                                             float* fout, double* dout, unsigned long long* wout, int n)
{
    __shared__ float fs;
    __shared__ double ds;
    __shared__ unsigned long long ws[3];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid == 0) {
        fs = 0.0f;
        ds = 0.0;
        ws[0] = 0;
        ws[1] = ~0ull;
        ws[2] = 0;
    }
    __syncthreads();
    if (i < n) {
        atomicAdd(&fs, f[i]);
        atomicAdd(&ds, d[i]);
        atomicAdd(&ws[0], w[i]);
        atomicMin(&ws[1], w[i]);
        atomicMax(&ws[2], w[i]);
    }
    __syncthreads();
    if (tid == 0) {
        fout[blockIdx.x] = fs;
        dout[blockIdx.x] = ds;
        wout[blockIdx.x * 3 + 0] = ws[0];
        wout[blockIdx.x * 3 + 1] = ws[1];
        wout[blockIdx.x * 3 + 2] = ws[2];
    }
}
