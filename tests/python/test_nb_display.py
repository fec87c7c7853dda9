"""What Rust cells show (issues 6 and 7): an `nb::Array` as a cell's value or through
`Array::show`/`show_with` (2-D floats → the heatmap of `%show`, short 1-D → a table, anything else
→ a summary), `nb::show` (exactly `%show`), and `nb::Frames` (the animated GIF of `%%animate`).

Images are decoded here in plain Python (zlib + struct; no imaging library in .venv): PNG sizes
are checked against the display metadata, pixel colours against the colormap (gray is an exact
ramp; viridis' end colours are #440154 and #fde725), and the GIF's blocks are walked to count its
frames. Sizes and values are random per run; Rust cells are few, since each compiles through
evcxr."""

from __future__ import annotations

import base64
import html
import math
import random
import re
import struct
import zlib

import numpy as np
import pytest

from nbkernel import execute, ok
from pngio import decode_png

VIRIDIS_LO = (0x44, 0x01, 0x54)
VIRIDIS_HI = (0xFD, 0xE7, 0x25)
WHITE = (255, 255, 255)
PAD = 8  # left margin of a heatmap's image area (src/display/image.rs)

BUMP = r"""%%cuda
__global__ void bump(float* u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] += 1.0f + 0.25f * (i % 3);
}
"""


def displays(ex, mime: str) -> list[dict]:
    """Contents of display_data / update_display_data / execute_result carrying `mime`, in order."""
    return [
        m["content"]
        for m in ex.outputs
        if m["msg_type"] in ("display_data", "update_display_data", "execute_result") and mime in m["content"]["data"]
    ]


# ---------- PNG and GIF in plain Python ----------

def png_decode(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG → (h, w, channels) uint8."""
    img = decode_png(data)
    assert img.ndim == 3 and img.shape[2] in (3, 4), img.shape
    return img


def png_of(content: dict) -> np.ndarray:
    img = png_decode(base64.b64decode(content["data"]["image/png"]))
    meta = content.get("metadata", {}).get("image/png")
    if meta is not None:
        assert (img.shape[1], img.shape[0]) == (meta["width"], meta["height"]), meta
    return img


def gif_frames(data: bytes) -> tuple[tuple[int, int], list[tuple[int, int, int, int]]]:
    """(logical screen size, [(x, y, w, h) of every image]) by walking the GIF's blocks."""
    assert data[:6] in (b"GIF87a", b"GIF89a"), data[:6]
    w, h, flags = struct.unpack("<HHB", data[6:11])
    pos = 13
    if flags & 0x80:
        pos += 3 * (2 << (flags & 7))

    def skip_sub_blocks(p: int) -> int:
        while data[p]:
            p += data[p] + 1
        return p + 1

    frames = []
    while True:
        b = data[pos]
        if b == 0x3B:
            break
        if b == 0x21:
            pos = skip_sub_blocks(pos + 2)
        elif b == 0x2C:
            x, y, fw, fh, fl = struct.unpack("<HHHHB", data[pos + 1 : pos + 10])
            pos += 10
            if fl & 0x80:
                pos += 3 * (2 << (fl & 7))
            pos = skip_sub_blocks(pos + 1)
            frames.append((x, y, fw, fh))
        else:
            raise AssertionError(f"unexpected GIF block 0x{b:02x} at {pos}")
    return (w, h), frames


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def image_top(img: np.ndarray, x: int) -> int:
    """The first row whose pixel in column `x` is not white (the top of the image area)."""
    for y in range(img.shape[0]):
        if tuple(img[y, x, :3]) != WHITE:
            return y
    raise AssertionError("no image area found")


# ---------- tests ----------


def test_2d_arrays_display_as_the_heatmap_of_show(kernel):
    _, kc = kernel
    h, w = random.randrange(4, 10), random.randrange(8, 20)
    bh, bw = random.randrange(3, 9), random.randrange(3, 9)
    lo, hi = random.uniform(-5, 0), random.uniform(1, 5)
    vmax = (w - 1) * 0.5
    ex = ok(kc, f"""
let ramp = nb::Array::new((0..{h * w}usize).map(|i| (i % {w}) as f32 * 0.5).collect::<Vec<f32>>(), vec![{h}, {w}]).unwrap();
nb::put_shaped("ramp", &ramp.data, &ramp.shape).unwrap();
ramp.show_with(&nb::Style::new().title("ramp")).unwrap();
ramp.show_with(&nb::Style::new().cmap("gray").vmin(0.0).vmax({vmax!r}).scale(6)).unwrap();
nb::show("ramp --cmap magma").unwrap();
let board = nb::Array::new((0..{bh * bw}usize).map(|i| if (i / {bw} + i % {bw}) % 2 == 0 {{ {lo!r}f64 }} else {{ {hi!r}f64 }}).collect::<Vec<f64>>(), vec![{bh}, {bw}]).unwrap();
board.show_with(&nb::Style::new().scale(5)).unwrap();
ramp
""")
    shown = displays(ex, "image/png")
    assert len(shown) == 5, ex.describe()
    titled, gray, magma, board, value = shown
    show_plain = ok(kc, "%show ramp")
    show_magma = ok(kc, "%show ramp --cmap magma")
    (m1,) = displays(show_plain, "image/png")
    (m3,) = displays(show_magma, "image/png")

    # Style::title("ramp") draws exactly what `%show ramp` draws; nb::show is %show.
    assert titled["data"] == m1["data"]
    assert magma["data"] == m3["data"] and magma["metadata"] == m3["metadata"]
    assert m1["data"]["text/plain"] == f"ramp: {h}×{w} f32, min 0, max {vmax:g}"

    # The cell's value is the same heatmap without the title band.
    plain, with_title = png_of(value), png_of(m1)
    assert plain.shape[1] == with_title.shape[1] and plain.shape[0] < with_title.shape[0]
    assert np.array_equal(plain, with_title[with_title.shape[0] - plain.shape[0] :])
    assert value["data"]["text/plain"] == f"{h}×{w} f32, min 0, max {vmax:g}"

    # Gray with vmin 0 and vmax = the largest value: element (r, c) is 255 (c / 2) / vmax, rounded
    # half away from zero.
    img = png_of(gray)
    top = image_top(img, PAD + 3)
    for r in range(h):
        for c in range(w):
            g = math.floor((c * 0.5) / vmax * 255 + 0.5)
            assert tuple(img[top + 6 * r + 3, PAD + 6 * c + 3, :3]) == (g, g, g), (r, c)

    # A checkerboard of two values: viridis' two end colours, alternating.
    img = png_of(board)
    top = image_top(img, PAD + 2)
    for r in range(bh):
        for c in range(bw):
            want = VIRIDIS_LO if (r + c) % 2 == 0 else VIRIDIS_HI
            assert tuple(img[top + 5 * r + 2, PAD + 5 * c + 2, :3]) == want, (r, c)


def test_short_1d_arrays_are_tables_and_the_rest_summaries(kernel):
    _, kc = kernel
    n = random.randrange(17, 65)
    values = [f32(random.uniform(-100, 100)) for _ in range(n)]
    literal = ", ".join(f"{v!r}f32" for v in values)
    ex = ok(kc, f"""
let t = nb::Array::new(vec![{literal}], vec![{n}]).unwrap();
let cube = nb::Array::new((0..60).map(|i| i as i32 - 7).collect::<Vec<i32>>(), vec![3, 4, 5]).unwrap();
cube.show().unwrap();
let long = nb::Array::new((0..1000).map(|i| i as f64 * 0.5).collect::<Vec<f64>>(), vec![1000]).unwrap();
long.show().unwrap();
println!("STYLE {{}}", t.show_with(&nb::Style::new().cmap("jet")).unwrap_err());
let mut f = nb::Frames::new();
println!("FRAME {{}}", f.push(&cube).unwrap_err());
t
""")
    summaries = [c["data"]["text/plain"] for c in displays(ex, "text/plain") if "text/html" not in c["data"]]
    assert summaries[:2] == [
        "Array<i32> (3, 4, 5): min -7  max 52  mean 22.5\n[-7, -6, -5, -4, -3, -2, -1, 0, …]",
        "Array<f64> (1000,): min 0.0  max 499.5  mean 249.75  NaN 0\n[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, …]",
    ], ex.describe()
    out = ex.stream()
    assert "STYLE ArgumentError: unknown colormap 'jet'" in out, out
    assert "FRAME ArgumentError: a frame is a 2-D array" in out, out

    (table,) = [c for c in displays(ex, "text/html")]
    page = table["data"]["text/html"]
    body = page.split("<tbody>")[1]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", body)]
    assert len(rows) == -(-n // 16)
    cells = []
    for k, row in enumerate(rows):
        assert int(row[0]) == 16 * k  # the index of the row's first value
        cells += [html.unescape(x) for x in row[1:] if x]
    assert [f32(float(x)) for x in cells] == values
    caption = re.search(r"<caption[^>]*>(.*?)</caption>", page).group(1)
    assert caption.startswith(f"Array&lt;f32&gt; ({n},): min "), caption
    assert f32(float(caption.split("min ")[1].split()[0])) == min(values)
    assert f32(float(caption.split("max ")[1].split()[0])) == max(values)
    plain = table["data"]["text/plain"]
    assert all(x in plain for x in cells[:5]), plain


def test_frames_make_the_gif_of_animate(kernel):
    _, kc = kernel
    h, w, n = random.randrange(4, 12), random.randrange(4, 16), random.randrange(3, 9)
    ok(kc, BUMP)
    ok(kc, f"%array u = zeros(({h}, {w}), f32)")
    ex = ok(kc, f"""
let mut f = nb::Frames::new().fps(5.0).cmap("gray");
for _ in 0..{n} {{
    nb::exec("%launch bump[auto](u, len(u))").unwrap();
    f.push_array("u").unwrap();
}}
println!("FRAMES {{}}", f.len());
f.show().unwrap();
let mut g = f.clone();
println!("MISMATCH {{}}", g.push(&nb::Array::new(vec![0.0f32; 6], vec![2, 3]).unwrap()).unwrap_err());
f
""")
    assert f"FRAMES {n}" in ex.stream()
    assert "MISMATCH ArgumentError: frame " in ex.stream() and "first frame was f32" in ex.stream()
    gifs = displays(ex, "image/gif")
    assert len(gifs) == 2, ex.describe()
    shown, value = gifs
    assert shown["data"] == value["data"]
    data = base64.b64decode(shown["data"]["image/gif"])
    (sw, sh), frames = gif_frames(data)
    assert len(frames) == n
    assert all(f == (0, 0, sw, sh) for f in frames), frames
    assert shown["metadata"]["image/gif"] == {"width": sw, "height": sh}
    # Element i ends at n * (1 + 0.25 (i % 3)): min n, max 1.5 n over all frames; first frame min 1.
    assert shown["data"]["text/plain"] == (
        f"animation of {n} frames ({h}×{w} f32) at 5 fps, min 1, max {1.5 * n:g}"
    ), shown["data"]["text/plain"]

    # The same steps through %%animate draw the same GIF (same titles `u   frame i/N`).
    ok(kc, f"%array u = zeros(({h}, {w}), f32)")
    anim = ok(kc, f"%%animate --frames {n} --show u --fps 5 --cmap gray\n%launch bump[auto](u, len(u))")
    final = [c for c in displays(anim, "image/gif")][-1]
    assert final["data"]["image/gif"] == shown["data"]["image/gif"]
