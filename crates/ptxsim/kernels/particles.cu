// Tutorial: particles in the unit square, binned into a G x G uniform grid with atomics,
// then moved one explicit Euler step with reflecting walls.

extern "C" __global__ void binParticles(const float2* pos, int n, int G, int maxPerCell,
                                        int* cellCount, int* cellItems, int* overflow)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float2 p = pos[i];
    int cx = min(max((int)(p.x * G), 0), G - 1);
    int cy = min(max((int)(p.y * G), 0), G - 1);
    int cell = cy * G + cx;
    int slot = atomicAdd(&cellCount[cell], 1);
    if (slot < maxPerCell) {
        cellItems[cell * maxPerCell + slot] = i;
    } else {
        atomicAdd(overflow, 1);
    }
}

extern "C" __global__ void moveParticles(float2* pos, float2* vel, int n, float dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float2 p = pos[i];
    float2 v = vel[i];
    p.x += v.x * dt;
    p.y += v.y * dt;
    if (p.x < 0.0f) { p.x = -p.x; v.x = -v.x; }
    if (p.x > 1.0f) { p.x = 2.0f - p.x; v.x = -v.x; }
    if (p.y < 0.0f) { p.y = -p.y; v.y = -v.y; }
    if (p.y > 1.0f) { p.y = 2.0f - p.y; v.y = -v.y; }
    pos[i] = p;
    vel[i] = v;
}
