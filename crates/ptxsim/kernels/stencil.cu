// Tutorial: 2-D stencils on a W x H row-major image, one thread per pixel, 2-D grid.

// 3x3 box blur with clamped borders.
extern "C" __global__ void blur3x3(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) {
        return;
    }
    float sum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
        int yy = min(max(y + dy, 0), h - 1);
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = min(max(x + dx, 0), w - 1);
            sum += in[yy * w + xx];
        }
    }
    out[y * w + x] = sum / 9.0f;
}

// One explicit step of the heat equation (5-point Laplacian); the border is held fixed.
extern "C" __global__ void heatStep(const float* u, float* next, int w, int h, float alpha)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) {
        return;
    }
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        next[i] = u[i];
        return;
    }
    float lap = u[i - 1] + u[i + 1] + u[i - w] + u[i + w] - 4.0f * u[i];
    next[i] = u[i] + alpha * lap;
}

// 3x3 blur of an 8-bit RGBA image (uchar4), integer arithmetic with rounding.
extern "C" __global__ void blurRgba(const uchar4* in, uchar4* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) {
        return;
    }
    int r = 0, g = 0, b = 0, a = 0, count = 0;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = x + dx;
            int yy = y + dy;
            if (xx < 0 || yy < 0 || xx >= w || yy >= h) {
                continue;
            }
            uchar4 p = in[yy * w + xx];
            r += p.x;
            g += p.y;
            b += p.z;
            a += p.w;
            ++count;
        }
    }
    int half = count / 2;
    out[y * w + x] = make_uchar4((r + half) / count, (g + half) / count, (b + half) / count, (a + half) / count);
}
