// Integer intrinsics: bit counts, bit reversal, byte permutes, high multiplies, funnel shifts,
// and carry chains / bit-field instructions through inline PTX.

extern "C" __global__ void bitIntrinsics(const unsigned* a, const unsigned long long* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = a[i];
        unsigned long long y = b[i];
        unsigned* o = out + 10 * i;
        o[0] = __popc(x);
        o[1] = __popcll(y);
        o[2] = __clz(x);
        o[3] = __clzll(y);
        o[4] = __brev(x);
        o[5] = (unsigned)(__brevll(y) >> 32);
        o[6] = __ffs(x);
        o[7] = __ffsll(y);
        o[8] = __byte_perm(x, (unsigned)y, (unsigned)(y >> 32) & 0xffffu);
        o[9] = __byte_perm(x, 0x01234567u, 0x3210u ^ (x & 0x7777u));
    }
}

extern "C" __global__ void mulIntrinsics(const int* a, const int* b, const unsigned long long* c,
                                         const unsigned long long* d, int* out, unsigned long long* out64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        out[4 * i + 0] = __mulhi(x, y);
        out[4 * i + 1] = (int)__umulhi((unsigned)x, (unsigned)y);
        out[4 * i + 2] = __mul24(x, y);
        out[4 * i + 3] = x * y + (x >> 3);
        out64[3 * i + 0] = __umul64hi(c[i], d[i]);
        out64[3 * i + 1] = (unsigned long long)__mul64hi((long long)c[i], (long long)d[i]);
        out64[3 * i + 2] = (unsigned long long)x * (unsigned long long)(unsigned)y;
    }
}

extern "C" __global__ void funnelShifts(const unsigned* lo, const unsigned* hi, const unsigned* sh, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned l = lo[i], h = hi[i], s = sh[i];
        out[4 * i + 0] = __funnelshift_l(l, h, s);
        out[4 * i + 1] = __funnelshift_r(l, h, s);
        out[4 * i + 2] = __funnelshift_lc(l, h, s);
        out[4 * i + 3] = __funnelshift_rc(l, h, s);
    }
}

// 128-bit addition with add.cc / addc.cc / addc and 96-bit multiply-add with mad.lo.cc / madc.hi.
extern "C" __global__ void carryChains(const unsigned* a, const unsigned* b, unsigned* sum, unsigned* borrow, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const unsigned* x = a + 4 * i;
        const unsigned* y = b + 4 * i;
        unsigned r0, r1, r2, r3, c;
        asm("add.cc.u32 %0, %5, %9;\n\t"
            "addc.cc.u32 %1, %6, %10;\n\t"
            "addc.cc.u32 %2, %7, %11;\n\t"
            "addc.cc.u32 %3, %8, %12;\n\t"
            "addc.u32 %4, 0, 0;"
            : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3), "=r"(c)
            : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
        sum[5 * i + 0] = r0;
        sum[5 * i + 1] = r1;
        sum[5 * i + 2] = r2;
        sum[5 * i + 3] = r3;
        sum[5 * i + 4] = c;
        unsigned d0, d1, bo;
        asm("sub.cc.u32 %0, %3, %5;\n\t"
            "subc.cc.u32 %1, %4, %6;\n\t"
            "subc.u32 %2, 0, 0;"
            : "=r"(d0), "=r"(d1), "=r"(bo)
            : "r"(x[0]), "r"(x[1]), "r"(y[0]), "r"(y[1]));
        borrow[3 * i + 0] = d0;
        borrow[3 * i + 1] = d1;
        borrow[3 * i + 2] = bo;
    }
}

// bfe / bfi / prmt / slct / mad.hi / mul.wide / sad through inline PTX.
extern "C" __global__ void bitfieldAsm(const unsigned* a, const unsigned* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = a[i], y = b[i];
        unsigned pos = y & 31u, len = (y >> 8) & 31u;
        unsigned r0, r1, r2, r3, r4, r5;
        int s0;
        unsigned long long w;
        asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r0) : "r"(x), "r"(pos), "r"(len));
        asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s0) : "r"(x), "r"(pos), "r"(len));
        asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r1) : "r"(y), "r"(x), "r"(pos), "r"(len));
        asm("slct.u32.s32 %0, %1, %2, %3;" : "=r"(r2) : "r"(x), "r"(y), "r"((int)(x ^ y)));
        asm("mad.hi.u32 %0, %1, %2, %3;" : "=r"(r3) : "r"(x), "r"(y), "r"(x ^ 0x5a5a5a5au));
        asm("mul.wide.u32 %0, %1, %2;" : "=l"(w) : "r"(x), "r"(y));
        asm("sad.u32 %0, %1, %2, %3;" : "=r"(r4) : "r"(x), "r"(y), "r"(7u));
        asm("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r5) : "r"(x), "r"(y), "r"(0xffffffffu));
        unsigned* o = out + 9 * i;
        o[0] = r0;
        o[1] = (unsigned)s0;
        o[2] = r1;
        o[3] = r2;
        o[4] = r3;
        o[5] = (unsigned)w;
        o[6] = (unsigned)(w >> 32);
        o[7] = r4;
        o[8] = r5;
    }
}

// Integer division, remainder, shifts, min/max/abs in signed and unsigned 32/64-bit arithmetic.
extern "C" __global__ void intArith(const int* a, const int* b, const long long* c, const long long* d,
                                    int* out, long long* out64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        long long p = c[i], q = d[i];
        int* o = out + 9 * i;
        o[0] = (y != 0) ? x / y : 0;
        o[1] = (y != 0) ? x % y : 0;
        o[2] = (y != 0) ? (int)((unsigned)x / (unsigned)y) : 0;
        o[3] = (y != 0) ? (int)((unsigned)x % (unsigned)y) : 0;
        o[4] = x >> (y & 31);
        o[5] = (int)((unsigned)x >> (y & 31));
        o[6] = (int)((unsigned)x << (y & 31));
        o[7] = min(x, y) ^ max(x, y);
        o[8] = abs(x) + __sad(x, y, 3);
        long long* o64 = out64 + 5 * i;
        o64[0] = (q != 0) ? p / q : 0;
        o64[1] = (q != 0) ? p % q : 0;
        o64[2] = (q != 0) ? (long long)((unsigned long long)p / (unsigned long long)q) : 0;
        o64[3] = p >> (q & 63);
        o64[4] = (long long)((unsigned long long)p << (q & 63)) + llabs(p) + llmin(p, q);
    }
}
