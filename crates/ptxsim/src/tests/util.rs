//! Helpers for the engine tests: a tiny deterministic RNG and typed device buffers.

use crate::{Device, DevicePtr};

/// xorshift64*: deterministic "fresh random" inputs without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1
}

pub fn upload_f32(dev: &Device, v: &[f32]) -> DevicePtr {
    let p = dev.alloc(v.len() * 4).unwrap();
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, 0, &bytes).unwrap();
    p
}

pub fn upload_u32(dev: &Device, v: &[u32]) -> DevicePtr {
    let p = dev.alloc(v.len() * 4).unwrap();
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, 0, &bytes).unwrap();
    p
}

pub fn download_f32(dev: &Device, p: DevicePtr, n: usize) -> Vec<f32> {
    let mut b = vec![0u8; n * 4];
    dev.read(p, 0, &mut b).unwrap();
    b.chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn download_u32(dev: &Device, p: DevicePtr, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; n * 4];
    dev.read(p, 0, &mut b).unwrap();
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn p64(p: DevicePtr) -> [u8; 8] {
    p.to_le_bytes()
}
