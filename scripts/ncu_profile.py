"""`%profile --ncu` on a GPU for one tutorial launch (the GPU check of issue 34's last point):
run by scripts/gpu-check.sh where ncu is installed, with the nbcuda kernelspec installed.

    python scripts/ncu_profile.py [NOTEBOOK LABEL]      # default: 02-matrix-multiply tiled

It sets the notebook up at the ptxsim sizes, moves to the GPU backend and runs
`%profile --ncu LAUNCH`: the Jupyter kernel starts a GPU worker under ncu, replays the launch
into it and shows ncu's values beside ptxsim's. Prints the display's text, the one-line
message if ncu could not measure (ERR_NVGPUCTRPERM in containers), and last a line
`ncu-profile: N metrics from ncu` or `ncu-profile: <kind>: <message>`. Exits 0 unless the cell
itself failed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from tutorial_kernels import MAIN_KERNELS, Session, setup_cells  # noqa: E402


def main() -> int:
    name, label = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("02-matrix-multiply", "tiled")
    launch = next(l for lab, l, _ in MAIN_KERNELS[name] if lab == label)
    s = Session()
    run = s.run
    try:
        run("%backend sim")
        for cell in setup_cells(name):
            run(cell)
        if os.environ.get("NBCUDA_NCU_SIM") != "1":  # test-only: a fake ncu, no GPU
            run("%backend gpu")
        print(f"$ %profile --ncu {launch}", flush=True)
        outs = run(f"%profile --ncu {launch}")
        for m in outs:
            if m["msg_type"] == "stream":
                print(m["content"]["text"], end="")
        shown = [m for m in outs if m["msg_type"] == "display_data"]
        data = shown[0]["content"]["data"]
        print(data["text/plain"])
        j = data["application/json"]
        if j.get("ncu"):
            print(f"ncu-profile: {len(j['ncu'])} metrics from ncu")
        else:
            err = j.get("ncu_error") or {}
            print(f"ncu-profile: {err.get('kind')}: {err.get('message')}")
        return 0
    except Exception as e:  # noqa: BLE001
        print(f"ncu-profile: the cell failed: {e}")
        return 1
    finally:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
