// Engine tests: state spaces, generic pointers, module globals, atomics, printf.
__device__ int counter;
__device__ int table[4] = {10, 20, 30, 40};
__constant__ float coef[3] = {0.5f, -1.25f, 2.0f};
__device__ const char* names[2] = {"alpha", "beta"};

__device__ __noinline__ int sum_generic(const int* p, int k) {
    int s = 0; for (int j = 0; j < k; j++) s += p[j]; return s;
}

extern "C" __global__ void spaces(const int* in, int* out, float* fout, int n) {
    __shared__ int sh[64];
    int loc[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    sh[t] = i < n ? in[i] : 0;
    for (int j = 0; j < 8; j++) loc[j] = (i + j) * (t + 1);
    __syncthreads();
    if (i < n) {
        int a = sum_generic(sh + (t & ~7), 8);        // generic → shared
        int b = sum_generic(loc + (t & 3), 4);        // generic → local
        int c = sum_generic(in + (i & ~3), (i & ~3) + 4 <= n ? 4 : 0);   // generic → global
        out[i] = a + b + c + table[t & 3];
        fout[i] = coef[0] * in[i] + coef[1] + coef[2];
    }
}

extern "C" __global__ void atomics(int* gi, unsigned* gu, float* gf, double* gd, unsigned long long* gl, int* res) {
    __shared__ int si[8];
    __shared__ unsigned su[4];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (t < 8) si[t] = 0;
    if (t < 4) su[t] = 0;
    __syncthreads();
    atomicAdd(&gi[0], 1);
    atomicSub(&gi[1], 2);
    atomicMax(&gi[2], i);
    atomicMin(&gi[3], -i);
    atomicAnd(&gu[0], ~(1u << (i & 31)));
    atomicOr(&gu[1], 1u << (i & 31));
    atomicXor(&gu[2], (unsigned)i);
    atomicInc(&gu[3], 100u);
    atomicDec(&gu[4], 50u);
    atomicAdd(gf, 0.5f);
    atomicAdd(gd, 0.25);
    atomicAdd(gl, (unsigned long long)i);
    atomicExch(&gi[4], 7);
    int old;
    do { old = gi[5]; } while (atomicCAS(&gi[5], old, old + 3) != old);
    atomicAdd(&si[t & 7], t);
    atomicMax(&si[7], t);
    atomicInc(&su[0], 9u);
    atomicOr(&su[1], 1u << (t & 31));
    __syncthreads();
    if (t < 8) atomicAdd(&res[t], si[t]);
    if (t < 2) atomicAdd((unsigned*)&res[8 + t], su[t]);
    atomicAdd(&counter, 1);
    if (i == 0) res[10] = 1;
}

extern "C" __global__ void read_counter(int* out) { out[0] = counter; out[1] = table[2]; }

extern "C" __global__ void prints(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        printf("i=%d u=%u x=%#x f=%.3f e=%e g=%g s=%s c=%c ll=%lld p5=%5d|%-4d|\n",
               i, (unsigned)(i * 7), i * 255, i * 0.5, i * 1e10, i / 3.0, names[i & 1], 'a' + i, (long long)i << 40, i, i);
}

extern "C" __global__ void dyn(int* out, int n) {
    extern __shared__ int buf[];
    int t = threadIdx.x;
    buf[t] = t * 3;
    buf[blockDim.x + t] = t;
    __syncthreads();
    if (t < n) out[blockIdx.x * blockDim.x + t] = buf[blockDim.x - 1 - t] + buf[blockDim.x + ((t + 1) % blockDim.x)];
}
