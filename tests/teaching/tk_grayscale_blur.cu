// GPU Teaching Kit - Accelerated Computing (UIUC/NVIDIA), module 3 labs: RGB float image to
// grayscale (0.21 r + 0.71 g + 0.07 b), and a (2 BLUR_SIZE + 1)^2 box blur that averages the
// pixels inside the image.
#define BLUR_SIZE 1

__global__ void colorConvert(float *grayImage, float *rgbImage, int width, int height)
{
    int x = threadIdx.x + blockIdx.x * blockDim.x;
    int y = threadIdx.y + blockIdx.y * blockDim.y;
    if (x < width && y < height) {
        int idx = y * width + x;
        float r = rgbImage[3 * idx];
        float g = rgbImage[3 * idx + 1];
        float b = rgbImage[3 * idx + 2];
        grayImage[idx] = (0.21f * r + 0.71f * g + 0.07f * b);
    }
}

__global__ void blurKernel(float *out, float *in, int w, int h)
{
    int Col = blockIdx.x * blockDim.x + threadIdx.x;
    int Row = blockIdx.y * blockDim.y + threadIdx.y;
    if (Col < w && Row < h) {
        float pixVal = 0;
        int pixels = 0;
        for (int blurRow = -BLUR_SIZE; blurRow < BLUR_SIZE + 1; ++blurRow) {
            for (int blurCol = -BLUR_SIZE; blurCol < BLUR_SIZE + 1; ++blurCol) {
                int curRow = Row + blurRow;
                int curCol = Col + blurCol;
                if (curRow > -1 && curRow < h && curCol > -1 && curCol < w) {
                    pixVal += in[curRow * w + curCol];
                    pixels++;
                }
            }
        }
        out[Row * w + Col] = pixVal / pixels;
    }
}
