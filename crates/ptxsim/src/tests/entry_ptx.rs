//! Hand-written test kernels built from their bodies: the module header, the `.entry` line
//! with its parameters, the register declarations, the parameter loads and the thread's index
//! in the grid are written once here, so that a test's PTX says only what its kernel does.
//!
//! It must not decide anything a test is about: the body keeps every instruction under test,
//! and the prologue is the plain form NVRTC emits (`ld.param`, `cvta.to.global`, `mad.lo`).

/// The header every hand-written test module starts with.
const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// A module of several entries (`Entry::ptx` for one).
pub fn module(entries: &[Entry]) -> String {
    let mut out = HEADER.to_string();
    for e in entries {
        out.push_str(&e.text());
    }
    out
}

/// A kernel `name(params…)` of one `.entry`, for `Device::load_module(&entry.ptx())`.
pub struct Entry<'a> {
    pub name: &'a str,
    /// Each parameter with the register it is loaded into, in order: a `%rd` register takes a
    /// global pointer (`.u64`, converted with `cvta.to.global` in place), a `%r` register a
    /// `.u32`.
    pub params: &'a [(&'a str, &'a str)],
    /// Bytes of the block's `.shared .align 4 .b8 s[…]` array (0: none).
    pub shared: u32,
    /// `Some(k)`: `%r{k}` = `%tid.x`, `%r{k+1}` = `%ctaid.x`, `%r{k+2}` = `%ntid.x` and
    /// `%r{k+3}` = the thread's index in the grid, `ctaid.x * ntid.x + tid.x`, after the
    /// parameters (None: the body computes what it needs).
    pub index_at: Option<u32>,
    /// The kernel's instructions after the prologue, `ret` included.
    pub body: &'a str,
}

impl Entry<'_> {
    /// A module of this entry alone.
    pub fn ptx(&self) -> String {
        module(std::slice::from_ref(self))
    }

    /// The `.entry`, with the registers `%r`, `%rd`, `%p`, `%f`, `%fd` declared up to the
    /// highest number it uses.
    fn text(&self) -> String {
        let mut code = String::new();
        for (name, reg) in self.params {
            let ty = if reg.starts_with("%rd") { "u64" } else { "u32" };
            code.push_str(&format!("  ld.param.{ty} {reg}, [{name}];\n"));
        }
        for (_, reg) in self.params.iter().filter(|(_, r)| r.starts_with("%rd")) {
            code.push_str(&format!("  cvta.to.global.u64 {reg}, {reg};\n"));
        }
        if let Some(k) = self.index_at {
            let (tid, ctaid, ntid, i) = (k, k + 1, k + 2, k + 3);
            code.push_str(&format!(
                "  mov.u32 %r{tid}, %tid.x;\n  mov.u32 %r{ctaid}, %ctaid.x;\n  \
                 mov.u32 %r{ntid}, %ntid.x;\n  mad.lo.s32 %r{i}, %r{ctaid}, %r{ntid}, %r{tid};\n"
            ));
        }
        code.push_str(self.body.trim_start_matches('\n'));
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, reg)| {
                let ty = if reg.starts_with("%rd") { "u64" } else { "u32" };
                format!(".param .{ty} {name}")
            })
            .collect();
        let mut decls = String::new();
        if self.shared > 0 {
            decls.push_str(&format!("  .shared .align 4 .b8 s[{}];\n", self.shared));
        }
        for (prefix, ty) in [
            ("r", "u32"),
            ("rd", "u64"),
            ("p", "pred"),
            ("f", "f32"),
            ("fd", "f64"),
        ] {
            if let Some(top) = highest_register(&code, prefix) {
                decls.push_str(&format!("  .reg .{ty} %{prefix}<{}>;\n", top + 1));
            }
        }
        format!(
            ".visible .entry {}({}) {{\n{decls}{code}}}\n",
            self.name,
            params.join(", ")
        )
    }
}

/// The highest `n` of the registers `%{prefix}{n}` in `code`.
fn highest_register(code: &str, prefix: &str) -> Option<u32> {
    code.split('%')
        .skip(1)
        .filter_map(|word| {
            let letters = word.len()
                - word
                    .trim_start_matches(|c: char| c.is_ascii_lowercase())
                    .len();
            let digits: String = word[letters..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            (&word[..letters] == prefix && !digits.is_empty())
                .then(|| digits.parse().ok())
                .flatten()
        })
        .max()
}

#[test]
fn the_prologue_loads_parameters_and_declares_the_registers_used() {
    let e = Entry {
        name: "k",
        params: &[("pin", "%rd1"), ("pn", "%r1")],
        shared: 64,
        index_at: Some(4),
        body: "  @%p3 add.u32 %r12, %r7, %r1;\n  ret;\n",
    };
    let ptx = e.ptx();
    assert!(ptx.starts_with(".version 7.0\n.target sm_80\n.address_size 64\n"));
    for line in [
        ".visible .entry k(.param .u64 pin, .param .u32 pn) {",
        "  .shared .align 4 .b8 s[64];",
        "  .reg .u32 %r<13>;",
        "  .reg .u64 %rd<2>;",
        "  .reg .pred %p<4>;",
        "  ld.param.u64 %rd1, [pin];",
        "  ld.param.u32 %r1, [pn];",
        "  cvta.to.global.u64 %rd1, %rd1;",
        "  mad.lo.s32 %r7, %r5, %r6, %r4;",
    ] {
        assert!(ptx.lines().any(|l| l == line), "{line} in\n{ptx}");
    }
    assert!(!ptx.contains(".f32"));
    crate::Device::new().load_module(&ptx).unwrap();
}
