//! Real resources of CUDA kernels without a GPU: NVRTC builds a CUBIN for a chosen architecture
//! offline (`-arch=sm_XX`, no driver needed), and this module reads, per kernel, what the driver
//! would report after loading it: registers per thread, static shared memory, local memory per
//! thread (stack frame, spills) and the maximum threads per block of `__launch_bounds__`.
//!
//! The CUBIN is an ELF file (read with the `object` crate's ELF reader, already in the
//! dependency tree; no driver, no `cuobjdump`). What it reads, as NVRTC 12.9 writes it:
//! - kernels: `FUNC` symbols marked as CUDA entries (`st_other & 0x10`), each with `.text.<name>`;
//! - registers: the `EIATTR_REGCOUNT` (0x2f) record of the global `.nv.info` section, keyed by
//!   the symbol index; the high byte of `.text.<name>`'s `sh_info` as a fallback (sm_75 CUBINs
//!   fill both, sm_90 ones only the record);
//! - local memory: `EIATTR_FRAME_SIZE` (0x11) in `.nv.info` (bytes per thread);
//! - static shared memory: the size of `.nv.shared.<name>`. On sm_90 every such section starts
//!   with the 1 KiB the driver reserves per block (the CUBIN then has `.nv.shared.reserved.0`;
//!   measured: a kernel without `__shared__` gets a 1024-byte section, `float[32][33]` 5248 bytes),
//!   which is subtracted, so the figure is the kernel's own, as the occupancy rules expect;
//! - max threads: `EIATTR_MAX_THREADS` (0x05, `__launch_bounds__`) or `EIATTR_REQNTID` (0x10),
//!   three u32 in `.nv.info.<name>`.
//!
//! `.nv.info` records are `format: u8, attribute: u8` then, for format 4 (`EIFMT_SVAL`), a u16
//! size and that many bytes, else a 2-byte value. This module compiles through [`Compiler`]
//! (so CUBINs are cached per source, options and architecture like PTX) and knows nothing of
//! cells, backends or occupancy.

use super::{CompileInput, Compiled, Compiler, Target};
use crate::types::{CudaOptions, GpuError};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use std::collections::HashMap;

/// What one kernel of a CUBIN uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelResources {
    /// The lowered (mangled) name.
    pub name: String,
    pub registers: u32,
    /// The kernel's own `__shared__` bytes (without the driver's reserved KiB).
    pub static_shared_bytes: u32,
    /// Local memory per thread: stack frame, spilled registers, dynamically indexed arrays.
    pub local_bytes: u32,
    /// `__launch_bounds__` / `__reqntid__` limit, if the kernel has one.
    pub max_threads: Option<u32>,
}

/// Everything read from one CUBIN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubinResources {
    /// The architecture in the ELF header, e.g. 90 for sm_90.
    pub arch: Option<u32>,
    pub kernels: Vec<KernelResources>,
}

impl CubinResources {
    pub fn kernel(&self, lowered: &str) -> Option<&KernelResources> {
        self.kernels.iter().find(|k| k.name == lowered)
    }
}

const EIFMT_SVAL: u8 = 4;
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_REQNTID: u8 = 0x10;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;
/// `st_other` bit of a CUDA entry function (`STO_CUDA_ENTRY`).
const STO_CUDA_ENTRY: u8 = 0x10;
/// Shared memory the driver reserves per block on sm_80+, laid out at the start of sm_90's
/// per-kernel shared sections.
const RESERVED_SHARED: u64 = 1024;

/// One `.nv.info` record: attribute and value bytes.
fn nv_info_records(data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0usize;
    while i + 4 <= data.len() {
        let (format, attr) = (data[i], data[i + 1]);
        if format == EIFMT_SVAL {
            let size = usize::from(u16::from_le_bytes([data[i + 2], data[i + 3]]));
            let Some(value) = data.get(i + 4..i + 4 + size) else {
                break;
            };
            out.push((attr, value));
            i += 4 + size;
        } else if (1..=3).contains(&format) {
            out.push((attr, &data[i + 2..i + 4]));
            i += 4;
        } else {
            break; // unknown format: stop rather than misread the rest
        }
    }
    out
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Reads every kernel's resources from a CUBIN.
pub fn read_cubin(cubin: &[u8]) -> Result<CubinResources, String> {
    let bad = |e: object::read::Error| format!("not a CUBIN (ELF): {e}");
    let header = elf::FileHeader64::<object::Endianness>::parse(cubin).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let sections = header.sections(endian, cubin).map_err(bad)?;
    let flags = header.e_flags(endian).0;
    let arch = Some(flags & 0xff).filter(|a| (20..=200).contains(a));
    let symbols = sections
        .symbols(endian, cubin, elf::SHT_SYMTAB)
        .map_err(bad)?;
    let mut by_name: HashMap<String, &elf::SectionHeader64<object::Endianness>> = HashMap::new();
    for s in sections.iter() {
        if let Ok(name) = sections.section_name(endian, s) {
            by_name.insert(String::from_utf8_lossy(name).into_owned(), s);
        }
    }
    let section_data = |name: &str| -> &[u8] {
        by_name
            .get(name)
            .and_then(|s| s.data(endian, cubin).ok())
            .unwrap_or(&[])
    };
    // Global `.nv.info`: (attribute, symbol index) → value.
    let mut global: HashMap<(u8, u32), u32> = HashMap::new();
    for (attr, v) in nv_info_records(section_data(".nv.info")) {
        if let (Some(sym), Some(val)) = (u32_at(v, 0), u32_at(v, 4)) {
            global.insert((attr, sym), val);
        }
    }
    let reserved_prefix = by_name.contains_key(".nv.shared.reserved.0");
    let mut kernels = Vec::new();
    for (index, sym) in symbols.iter().enumerate() {
        if sym.st_type() != elf::STT_FUNC || sym.st_other().0 & STO_CUDA_ENTRY == 0 {
            continue;
        }
        let Ok(name) = sym.name(endian, symbols.strings()) else {
            continue;
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        let text_regs = by_name
            .get(&format!(".text.{name}"))
            .map(|s| s.sh_info(endian) >> 24)
            .unwrap_or(0);
        let registers = global
            .get(&(EIATTR_REGCOUNT, index))
            .copied()
            .unwrap_or(text_regs);
        let mut local_bytes = global.get(&(EIATTR_FRAME_SIZE, index)).copied();
        let mut max_threads = None;
        for (attr, v) in nv_info_records(section_data(&format!(".nv.info.{name}"))) {
            match attr {
                EIATTR_MAX_THREADS | EIATTR_REQNTID => {
                    if let (Some(x), Some(y), Some(z)) = (u32_at(v, 0), u32_at(v, 4), u32_at(v, 8))
                    {
                        let n = x.saturating_mul(y).saturating_mul(z);
                        max_threads = Some(max_threads.map_or(n, |m: u32| m.min(n)));
                    }
                }
                // Older toolchains put the frame size in the kernel's own section.
                EIATTR_FRAME_SIZE if v.len() == 4 && local_bytes.is_none() => {
                    local_bytes = u32_at(v, 0);
                }
                _ => {}
            }
        }
        let shared_section = by_name
            .get(&format!(".nv.shared.{name}"))
            .map(|s| s.sh_size(endian))
            .unwrap_or(0);
        let shared = if reserved_prefix {
            shared_section.saturating_sub(RESERVED_SHARED)
        } else {
            shared_section
        };
        kernels.push(KernelResources {
            name,
            registers,
            static_shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
            local_bytes: local_bytes.unwrap_or(0),
            max_threads,
        });
    }
    Ok(CubinResources { arch, kernels })
}

/// Compiles `source` (as the `%%cuda` cell was compiled: same options and name expressions) to a
/// CUBIN for `arch` (`"sm_75"`), from the compile cache when possible, and reads its resources.
pub fn compile_resources(
    compiler: &Compiler,
    source: &str,
    options: &CudaOptions,
    first_line: usize,
    name_expressions: Vec<String>,
    arch: &str,
) -> Result<(CubinResources, Compiled), GpuError> {
    let compiled = compiler.compile(&CompileInput {
        source,
        options,
        first_line,
        name_expressions,
        target: Target::Cubin {
            arch: arch.to_string(),
        },
    })?;
    let Some(cubin) = compiled.cubin.as_deref() else {
        return Err(GpuError::compile(format!(
            "NVRTC returned no CUBIN for {arch}"
        )));
    };
    let res = read_cubin(cubin).map_err(GpuError::compile)?;
    Ok((res, compiled))
}

#[cfg(test)]
pub(crate) mod tests;
