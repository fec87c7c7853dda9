// GPU Teaching Kit - Accelerated Computing, module 8 lab (tiled 2-D convolution): a 5x5 mask
// over a multi-channel float image, each block loading its tile with halo (zeros outside the
// image) into shared memory, the output clamped to [0, 1].
#include <algorithm>

#define Mask_width 5
#define Mask_radius Mask_width / 2
#define TILE_WIDTH 16
#define w (TILE_WIDTH + Mask_width - 1)
#define clamp(x) (min(max((x), 0.0f), 1.0f))

__global__ void convolution(float *I, const float *__restrict__ M, float *P,
                            int channels, int width, int height)
{
    __shared__ float N_ds[w][w];
    int k;
    for (k = 0; k < channels; k++) {
        // first batch: the first TILE_WIDTH^2 elements of the w x w tile
        int dest = threadIdx.y * TILE_WIDTH + threadIdx.x,
            destY = dest / w, destX = dest % w,
            srcY = blockIdx.y * TILE_WIDTH + destY - Mask_radius,
            srcX = blockIdx.x * TILE_WIDTH + destX - Mask_radius,
            src = (srcY * width + srcX) * channels + k;
        if (srcY >= 0 && srcY < height && srcX >= 0 && srcX < width)
            N_ds[destY][destX] = I[src];
        else
            N_ds[destY][destX] = 0;

        // second batch: the rest
        dest = threadIdx.y * TILE_WIDTH + threadIdx.x + TILE_WIDTH * TILE_WIDTH;
        destY = dest / w, destX = dest % w;
        srcY = blockIdx.y * TILE_WIDTH + destY - Mask_radius;
        srcX = blockIdx.x * TILE_WIDTH + destX - Mask_radius;
        src = (srcY * width + srcX) * channels + k;
        if (destY < w) {
            if (srcY >= 0 && srcY < height && srcX >= 0 && srcX < width)
                N_ds[destY][destX] = I[src];
            else
                N_ds[destY][destX] = 0;
        }
        __syncthreads();

        float accum = 0;
        int y, x;
        for (y = 0; y < Mask_width; y++)
            for (x = 0; x < Mask_width; x++)
                accum += N_ds[threadIdx.y + y][threadIdx.x + x] * M[y * Mask_width + x];
        y = blockIdx.y * TILE_WIDTH + threadIdx.y;
        x = blockIdx.x * TILE_WIDTH + threadIdx.x;
        if (y < height && x < width)
            P[(y * width + x) * channels + k] = clamp(accum);
        __syncthreads();
    }
}
