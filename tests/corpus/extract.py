"""Regenerates the corpus files from a checkout of NVIDIA/cuda-samples (for maintainers; the
test suite reads the checked-in .cu files only). Usage: python extract.py PATH_TO_CUDA_SAMPLES.

Each output file is the original's licence comment, a line naming its origin, and line ranges
of the original copied verbatim (device code as written; host code left out)."""

import subprocess
import sys
from pathlib import Path

COMMIT = "c94ff366aed18c797b8a85dfaac7817b0228b420"
URL = f"https://github.com/NVIDIA/cuda-samples/blob/{COMMIT}/"

# output name: (path in cuda-samples, [line ranges, 1-based inclusive], extra lines before)
FILES = {
    "nvidia_transpose.cu": (
        "Samples/6_Performance/transpose/transpose.cu",
        [(41, 43), (56, 57), (81, 297)],
        [],
    ),
    "nvidia_reduction.cu": (
        "Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu",
        [(35, 36), (39, 39), (43, 626)],
        [],
    ),
    "nvidia_convolution_separable.cu": (
        "Samples/2_Concepts_and_Techniques/convolutionSeparable/convolutionSeparable.cu",
        [(29, 29), (32, 32), (38, 38), (48, 104), (122, 179)],
        # from convolutionSeparable_common.h, lines 31-32
        ["#define KERNEL_RADIUS 8", "#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)"],
    ),
    "nvidia_vector_add.cu": ("Samples/0_Introduction/vectorAdd/vectorAdd.cu", [(47, 54)], []),
    "nvidia_scalar_prod.cu": (
        "Samples/2_Concepts_and_Techniques/scalarProd/scalarProd_kernel.cuh",
        [(28, 30), (40, 97)],
        [],
    ),
    "nvidia_simple_vote.cu": (
        "Samples/0_Introduction/simpleVoteIntrinsics/simpleVote_kernel.cuh",
        [(41, 79)],
        [],
    ),
    "nvidia_shfl_scan.cu": ("Samples/2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu", [(55, 148)], []),
    "nvidia_fast_walsh_transform.cu": (
        "Samples/5_Domain_Specific/fastWalshTransform/fastWalshTransform_kernel.cuh",
        [(33, 35), (41, 148), (172, 181)],
        [],
    ),
}


def main(root: str) -> None:
    out_dir = Path(__file__).parent
    for name, (path, ranges, extra) in FILES.items():
        text = subprocess.run(
            ["git", "-C", root, "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True
        ).stdout.splitlines()
        licence_end = next(i for i, line in enumerate(text) if line.rstrip() == " */")
        body = text[: licence_end + 1]
        body.append(f"// Origin: {URL}{path}")
        body.append(
            "// lines " + ", ".join(f"{a}-{b}" for a, b in ranges) + " of it, as written (host code left out)."
        )
        body.append("// Licence: BSD-3-Clause, the notice above.")
        body.extend(extra)
        for a, b in ranges:
            body.extend(text[a - 1 : b])
        (out_dir / name).write_text("\n".join(body) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
