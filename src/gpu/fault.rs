//! Turns ptxsim's check reports into messages for the user: which CUDA kernel, block and
//! thread, which of the user's arrays the address is in or near (by name), and the line of the
//! `%%cuda` cell (PTX `.loc` line → cell line through the cell's first line).
//!
//! Pure text work; it must not touch a device.

use super::Dtype;
use ptxsim::{CheckKind, CheckReport};

/// A live or freed array at a device address, for naming addresses.
#[derive(Debug, Clone)]
pub struct NamedAlloc {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub ptr: u64,
    pub bytes: usize,
    pub freed: bool,
}

/// The cell a CUDA kernel came from.
#[derive(Debug, Clone, Copy)]
pub struct CellText<'a> {
    pub source: &'a str,
    pub first_line: usize,
    /// NVRTC program name (`cell.cu`), as in the PTX `.file`.
    pub program: &'a str,
}

/// Addresses further than this from every array are not attributed to one.
const NEAR_BYTES: u64 = 1 << 20;

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("{n}"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Which array `address` is in or near, e.g. "4 bytes past the end of array `c` (f32, shape
/// 1000, 4000 bytes)".
/// `size` is the access size (0 if unknown).
pub fn name_address(address: u64, size: u32, allocs: &[NamedAlloc]) -> Option<String> {
    let mut best: Option<(u64, String)> = None;
    for a in allocs {
        let end = a.ptr.saturating_add(a.bytes as u64);
        let (distance, text) = if address >= a.ptr && address < end {
            let off = address - a.ptr;
            let elem = off / a.dtype.size().max(1) as u64;
            (0, format!("element {elem} (byte offset {off}) of"))
        } else if address >= end {
            let d = address + size as u64 - end;
            let elem = (address - a.ptr) / a.dtype.size().max(1) as u64;
            (d, format!("element {elem}, {d} bytes past the end of"))
        } else {
            let d = a.ptr - address;
            (d, format!("{d} bytes before the start of"))
        };
        if distance > NEAR_BYTES || best.as_ref().is_some_and(|(b, _)| *b <= distance) {
            continue;
        }
        let freed = if a.freed { "freed " } else { "" };
        best = Some((
            distance,
            format!(
                "{text} {freed}array `{}` ({}, shape {}, {} bytes)",
                a.name,
                a.dtype.name(),
                shape_text(&a.shape),
                a.bytes
            ),
        ));
    }
    best.map(|(_, t)| t)
}

/// A header's path from its include folder on: `cooperative_groups/details/sync.h` for
/// `/…/site-packages/nvidia/cuda_runtime/include/cooperative_groups/details/sync.h`.
fn short_path(file: &str) -> &str {
    file.rsplit_once("/include/").map_or(file, |(_, p)| p)
}

/// "%%cuda cell line 4: `c[i] = a[i] + b[i];`" for the report's source position. A position in
/// a header (a shim's or CCCL's helper, cooperative groups' grid sync) inlined into cell code is
/// reported at the innermost cell line of its call sites, with the header's line as context:
/// "%%cuda cell line 7: grid.sync(); (at cooperative_groups/details/sync.h:94, inlined here)".
pub fn cell_location(report: &CheckReport, cell: Option<CellText<'_>>) -> Option<String> {
    let line = report.line.as_ref()?;
    if let Some(c) = cell {
        let is_cell = |l: &ptxsim::SourceLine| {
            l.file == c.program || l.file.ends_with(&format!("/{}", c.program))
        };
        let frames = std::iter::once(line).chain(line.inlined_at.iter());
        if let Some(at) = frames.into_iter().find(|l| is_cell(l) && l.line >= 1) {
            let cell_line = c.first_line + at.line as usize - 1;
            let text = c
                .source
                .lines()
                .nth(at.line as usize - 1)
                .map(str::trim)
                .unwrap_or("");
            let mut out = format!("%%cuda cell line {cell_line}: {text}");
            if !is_cell(line) {
                out.push_str(&format!(
                    " (at {}:{}, inlined here)",
                    short_path(&line.file),
                    line.line
                ));
            }
            return Some(out);
        }
    }
    Some(format!("{}:{}", line.file, line.line))
}

fn dim(d: (u32, u32, u32)) -> String {
    format!("({}, {}, {})", d.0, d.1, d.2)
}

/// The checker's message without the address details we render ourselves.
fn headline(message: &str) -> &str {
    message.split(" at 0x").next().unwrap_or(message)
}

/// The body of a report: thread, block, address and line.
fn details(report: &CheckReport, allocs: &[NamedAlloc], cell: Option<CellText<'_>>) -> Vec<String> {
    let mut out = Vec::new();
    if !matches!(
        report.kind,
        CheckKind::Cancelled | CheckKind::BudgetExceeded
    ) {
        out.push(format!(
            "block {}, thread {}",
            dim(report.block),
            dim(report.thread)
        ));
    }
    if report.address != 0 {
        let space = if report.space.is_empty() {
            String::new()
        } else {
            format!("{} ", report.space)
        };
        let named = if report.space == "global" || report.space.is_empty() {
            name_address(report.address, report.size, allocs)
        } else {
            None
        };
        match named.or_else(|| report.allocation.clone()) {
            Some(n) => out.push(format!("{space}address 0x{:x}: {n}", report.address)),
            None => out.push(format!("{space}address 0x{:x}", report.address)),
        }
    }
    if let Some(l) = cell_location(report, cell) {
        out.push(l);
    }
    out
}

/// The message of a `DeviceFault`.
pub fn render_fault(
    kernel: &str,
    report: &CheckReport,
    allocs: &[NamedAlloc],
    cell: Option<CellText<'_>>,
    printf: &str,
) -> String {
    let head = match report.kind {
        CheckKind::Cancelled => format!("launch of CUDA kernel `{kernel}` interrupted"),
        CheckKind::BudgetExceeded => {
            format!(
                "launch of CUDA kernel `{kernel}` stopped: {}",
                report.message
            )
        }
        _ => format!("{} in CUDA kernel `{kernel}`", headline(&report.message)),
    };
    let mut msg = head;
    for d in details(report, allocs, cell) {
        msg.push_str("\n  ");
        msg.push_str(&d);
    }
    if report.kind == CheckKind::StackOverflow {
        msg.push_str("\n  set a larger call stack per thread with %limit stack BYTES");
    }
    msg.push_str(
        "\nStores that would have faulted were not performed; arrays this CUDA kernel was not \
         given are unchanged.",
    );
    if !printf.is_empty() {
        msg.push_str("\nprintf output before the fault:\n");
        msg.push_str(printf.trim_end());
    }
    msg
}

/// One non-fatal finding (race, inactive-lane shuffle) as one paragraph.
pub fn render_finding(
    kernel: &str,
    report: &CheckReport,
    allocs: &[NamedAlloc],
    cell: Option<CellText<'_>>,
) -> String {
    let mut msg = format!("{} in CUDA kernel `{kernel}`", headline(&report.message));
    for d in details(report, allocs, cell) {
        msg.push_str("; ");
        msg.push_str(&d);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_names_nearest_array_and_cell_line() {
        let allocs = vec![
            NamedAlloc {
                name: "a".into(),
                dtype: Dtype::F32,
                shape: vec![1000],
                ptr: 0x10000,
                bytes: 4000,
                freed: false,
            },
            NamedAlloc {
                name: "c".into(),
                dtype: Dtype::F32,
                shape: vec![10, 100],
                ptr: 0x20000,
                bytes: 4000,
                freed: false,
            },
        ];
        assert_eq!(
            name_address(0x20000 + 4000, 4, &allocs).as_deref(),
            Some("element 1000, 4 bytes past the end of array `c` (f32, shape (10, 100), 4000 bytes)")
        );
        assert_eq!(
            name_address(0x10000 + 8, 4, &allocs).as_deref(),
            Some("element 2 (byte offset 8) of array `a` (f32, shape 1000, 4000 bytes)")
        );
        assert_eq!(name_address(0x9000_0000, 4, &allocs), None);
        let report = CheckReport {
            kind: CheckKind::OutOfBounds,
            kernel: "_Z1kPf".into(),
            block: (3, 0, 0),
            thread: (17, 0, 0),
            address: 0x20000 + 4000,
            size: 4,
            space: "global",
            allocation: None,
            line: Some(ptxsim::SourceLine {
                file: "/tmp/cell.cu".into(),
                line: 2,
                column: 5,
                inlined_at: Vec::new(),
            }),
            message: "out-of-bounds global store of 4 bytes at 0x20fa0: 4 bytes past the end"
                .into(),
        };
        let src = "__global__ void k(float* c) {\n    c[threadIdx.x + 1000] = 1.0f;\n}\n";
        let cell = CellText {
            source: src,
            first_line: 3,
            program: "cell.cu",
        };
        let m = render_fault("k", &report, &allocs, Some(cell), "hello\n");
        assert!(
            m.starts_with("out-of-bounds global store of 4 bytes in CUDA kernel `k`"),
            "{m}"
        );
        assert!(m.contains("block (3, 0, 0), thread (17, 0, 0)"), "{m}");
        assert!(m.contains("past the end of array `c`"), "{m}");
        assert!(
            m.contains("%%cuda cell line 4: c[threadIdx.x + 1000] = 1.0f;"),
            "{m}"
        );
        assert!(m.ends_with("printf output before the fault:\nhello"), "{m}");
    }

    #[test]
    fn a_fault_in_a_header_is_reported_at_the_cell_line_that_called_it() {
        let at = |file: &str, line: u32| ptxsim::SourceLine {
            file: file.into(),
            line,
            column: 1,
            inlined_at: Vec::new(),
        };
        let sync = "/v/site-packages/nvidia/cuda_runtime/include/cooperative_groups/details/sync.h";
        let mut line = at(sync, 94);
        // sync.h:94 inlined into grid.h:40 (another header), inlined into the cell's line 3.
        line.inlined_at = vec![
            at("/x/include/cooperative_groups/details/grid.h", 40),
            at("cell.cu", 3),
        ];
        let report = CheckReport {
            kind: CheckKind::Trap,
            kernel: "k".into(),
            block: (0, 0, 0),
            thread: (0, 0, 0),
            address: 0,
            size: 0,
            space: "",
            allocation: None,
            line: Some(line.clone()),
            message: "trap instruction executed".into(),
        };
        let src = "__global__ void k() {\n    auto g = cg::this_grid();\n    g.sync();\n}\n";
        let cell = CellText {
            source: src,
            first_line: 2,
            program: "cell.cu",
        };
        assert_eq!(
            cell_location(&report, Some(cell)).as_deref(),
            Some("%%cuda cell line 4: g.sync(); (at cooperative_groups/details/sync.h:94, inlined here)")
        );
        // Without a cell frame: the header's own position.
        let mut alone = report.clone();
        alone.line = Some(at(sync, 94));
        assert_eq!(
            cell_location(&alone, Some(cell)).as_deref(),
            Some(&format!("{sync}:94")[..])
        );
    }
}
