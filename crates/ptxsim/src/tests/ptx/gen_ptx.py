#!/usr/bin/env python3
"""Regenerate half_conf_80.ptx and half_conf_90.ptx from half_conf.cu with NVRTC 12.9.

    python3 gen_ptx.py [path/to/libnvrtc.so.12]

libnvrtc is taken from the argument, $NBCUDA_NVRTC_LIB, or the pip package
nvidia-cuda-nvrtc-cu12==12.9.* of the running Python; cuda_fp16.h(pp) and cuda_bf16.h(pp) from
$NBCUDA_CUDA_INCLUDE or the pip package nvidia-cuda-runtime-cu12==12.9.* (12.9.79), passed to
NVRTC as in-memory headers. Options: --gpu-architecture=<arch> -lineinfo --std=c++17;
program name /ptxsim/half_conf.cu (absolute, so the .file directive is the same everywhere).
"""
import ctypes
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# NVRTC 12.9 does not have cuda_fp16.h/cuda_bf16.h built in: they are given to it as in-memory
# headers (by bare name, so that the PTX's .file directives name no folder of this machine).
HEADERS = ["cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"]
SOURCES = {"half_conf.cu": [("compute_80", "half_conf_80.ptx"), ("compute_90", "half_conf_90.ptx")]}


def find_lib():
    if len(sys.argv) > 1:
        return sys.argv[1]
    if os.environ.get("NBCUDA_NVRTC_LIB"):
        return os.environ["NBCUDA_NVRTC_LIB"]
    import nvidia.cuda_nvrtc  # pip install nvidia-cuda-nvrtc-cu12==12.9.*

    return str(Path(list(nvidia.cuda_nvrtc.__path__)[0]) / "lib" / "libnvrtc.so.12")


def include_dir():
    """The include folder of the pip package nvidia-cuda-runtime-cu12==12.9.*."""
    if os.environ.get("NBCUDA_CUDA_INCLUDE"):
        return Path(os.environ["NBCUDA_CUDA_INCLUDE"])
    import nvidia.cuda_runtime

    return Path(list(nvidia.cuda_runtime.__path__)[0]) / "include"


def main():
    lib = ctypes.CDLL(find_lib())
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    if (major.value, minor.value) != (12, 9):
        sys.exit(f"NVRTC {major.value}.{minor.value}, need 12.9")
    for src, outs in SOURCES.items():
        text = (HERE / src).read_bytes()
        for arch, out in outs:
            prog = ctypes.c_void_p()
            name = f"/ptxsim/{src}".encode()
            inc = include_dir()
            hdrs = [(inc / h).read_bytes() for h in HEADERS]
            names = [h.encode() for h in HEADERS]
            hv = (ctypes.c_char_p * len(hdrs))(*hdrs)
            nv = (ctypes.c_char_p * len(names))(*names)
            rc = lib.nvrtcCreateProgram(ctypes.byref(prog), text, name, len(hdrs), hv, nv)
            assert rc == 0
            opts = [f"--gpu-architecture={arch}".encode(), b"-lineinfo", b"--std=c++17"]
            arr = (ctypes.c_char_p * len(opts))(*opts)
            rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            if log.value.strip():
                print(log.value.decode(), file=sys.stderr)
            if rc != 0:
                sys.exit(f"{src} ({arch}): compilation failed")
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, ptx)
            lib.nvrtcDestroyProgram(ctypes.byref(prog))
            (HERE / out).write_bytes(ptx.value)
            print(f"{out}: {len(ptx.value)} bytes")


if __name__ == "__main__":
    main()
