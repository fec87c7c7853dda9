//! Tests of the `__global__` declaration scanner on tricky signatures.

use super::*;
use crate::gpu::Dtype;

fn sig(p: &[KernelParam]) -> Vec<(String, String, ParamKind)> {
    p.iter()
        .map(|p| (p.name.clone(), p.c_type.clone(), p.kind.clone()))
        .collect()
}

fn ptr(elem: Option<Dtype>, is_const: bool) -> ParamKind {
    ParamKind::Pointer { elem, is_const }
}

#[test]
fn scan_plain_kernel_with_comments_and_strings() {
    let src = r#"
// __global__ void commented(int* x) {}
/* __global__ void block_commented(float* y) { } */
#define STR "__global__ void inmacro()"
__device__ float helper(float x) { return x * 2.0f; }
const char* s = "__global__ void instring(int)";
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { c[i] = a[i] + b[i]; }
}
"#;
    let r = scan(src);
    assert_eq!(r.kernels.len(), 1, "{r:?}");
    let k = &r.kernels[0];
    assert_eq!(k.name, "add");
    assert_eq!(k.line, 7);
    assert_eq!(
        sig(&k.params_for(&[])),
        vec![
            (
                "a".into(),
                "const float*".into(),
                ptr(Some(Dtype::F32), true)
            ),
            (
                "b".into(),
                "const float*".into(),
                ptr(Some(Dtype::F32), true)
            ),
            ("c".into(), "float*".into(), ptr(Some(Dtype::F32), false)),
            ("n".into(), "int".into(), ParamKind::Scalar(Dtype::I32)),
        ]
    );
}

#[test]
fn scan_tricky_signatures() {
    let src = r#"
extern "C" __global__ void __launch_bounds__(256, 2)
lb(float const * __restrict__ x, unsigned int n, int32_t m = 4, size_t k = sizeof(float) * 2)
{ }
namespace outer { namespace inner {
  __global__ void nsk(double* __restrict__ out, long long big, unsigned long long ubig,
                      float2 v, const float* const p, char c, unsigned char uc, bool flag) {}
} }
static __global__ void arrays(int a[], short s, std::size_t sz, void* raw, float** pp) {}
__global__ void novoid(void) {}
__global__ void unnamed(float*, int) ;
__global__ void refs(const float& r, uint8_t u8, uint64_t u64) {}
"#;
    let r = scan(src);
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["lb", "nsk", "arrays", "novoid", "unnamed", "refs"]);
    let lb = r
        .kernel("lb")
        .map(|k| sig(&k.params_for(&[])))
        .unwrap_or_default();
    assert_eq!(
        lb,
        vec![
            (
                "x".into(),
                "float const*".into(),
                ptr(Some(Dtype::F32), true)
            ),
            (
                "n".into(),
                "unsigned int".into(),
                ParamKind::Scalar(Dtype::U32)
            ),
            ("m".into(), "int32_t".into(), ParamKind::Scalar(Dtype::I32)),
            ("k".into(), "size_t".into(), ParamKind::Scalar(Dtype::U64)),
        ]
    );
    let nsk = &r.kernels[1];
    assert_eq!(nsk.qualified, "outer::inner::nsk");
    let kinds: Vec<ParamKind> = nsk.params_for(&[]).into_iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        vec![
            ptr(Some(Dtype::F64), false),
            ParamKind::Scalar(Dtype::I64),
            ParamKind::Scalar(Dtype::U64),
            // `float2` by value: a tuple of x, y.
            ParamKind::Aggregate(crate::gpu::Aggregate {
                name: "float2".into(),
                fields: vec![
                    crate::gpu::AggregateField {
                        name: "x".into(),
                        dtype: Dtype::F32,
                        offset: 0,
                        pointer: None,
                    },
                    crate::gpu::AggregateField {
                        name: "y".into(),
                        dtype: Dtype::F32,
                        offset: 4,
                        pointer: None,
                    },
                ],
                size: 8,
                align: 8
            }),
            ptr(Some(Dtype::F32), true),
            ParamKind::Scalar(Dtype::I8),
            ParamKind::Scalar(Dtype::U8),
            ParamKind::Scalar(Dtype::U8),
        ]
    );
    let arrays = sig(&r.kernels[2].params_for(&[]));
    assert_eq!(
        arrays[0],
        ("a".into(), "int*".into(), ptr(Some(Dtype::I32), false))
    );
    assert_eq!(arrays[1].2, ParamKind::Scalar(Dtype::I16));
    assert_eq!(
        arrays[2],
        (
            "sz".into(),
            "std::size_t".into(),
            ParamKind::Scalar(Dtype::U64)
        )
    );
    assert_eq!(arrays[3].2, ptr(None, false));
    assert_eq!(arrays[4].2, ptr(None, false));
    assert!(r.kernels[3].params.is_empty());
    let unnamed = sig(&r.kernels[4].params_for(&[]));
    assert_eq!(
        unnamed[0],
        ("arg1".into(), "float*".into(), ptr(Some(Dtype::F32), false))
    );
    assert_eq!(
        unnamed[1],
        ("arg2".into(), "int".into(), ParamKind::Scalar(Dtype::I32))
    );
    let refs = sig(&r.kernels[5].params_for(&[]));
    assert_eq!(refs[0].2, ParamKind::Other);
    assert_eq!(refs[1].2, ParamKind::Scalar(Dtype::U8));
    assert_eq!(refs[2].2, ParamKind::Scalar(Dtype::U64));
}

#[test]
fn scan_templates_and_instantiations() {
    let src = r#"
template <typename T>
__global__ void scale(T* x, T a, int n) { if (threadIdx.x < n) x[threadIdx.x] *= a; }

template <typename T, int BLOCK = 128, typename Acc = float>
__global__ void __launch_bounds__(BLOCK) reduce(const T* __restrict__ in, Acc* out, unsigned n) {
    __shared__ Acc tile[BLOCK];
}
template __global__ void scale<double>(double*, double, int);
template <> __global__ void scale<int>(int* x, int a, int n) {}
"#;
    let r = scan(src);
    assert_eq!(r.kernels.len(), 2, "{r:?}");
    let scale = &r.kernels[0];
    assert_eq!(scale.template_params.as_ref().map(|t| t.len()), Some(1));
    assert_eq!(
        sig(&scale.params_for(&["float".into()])),
        vec![
            ("x".into(), "float*".into(), ptr(Some(Dtype::F32), false)),
            ("a".into(), "float".into(), ParamKind::Scalar(Dtype::F32)),
            ("n".into(), "int".into(), ParamKind::Scalar(Dtype::I32)),
        ]
    );
    assert_eq!(
        scale.params_for(&["unsigned int".into()])[1].kind,
        ParamKind::Scalar(Dtype::U32)
    );
    // Without arguments the template parameter stays unknown.
    assert_eq!(scale.params_for(&[])[1].kind, ParamKind::Other);
    assert_eq!(
        scale.display(),
        "template <typename T> scale(T* x, T a, int n)"
    );
    let reduce = &r.kernels[1];
    let p = reduce.params_for(&["double".into()]);
    assert_eq!(p[0].kind, ptr(Some(Dtype::F64), true));
    assert_eq!(
        p[1].kind,
        ptr(Some(Dtype::F32), false),
        "default Acc = float"
    );
    assert_eq!(p[2].kind, ParamKind::Scalar(Dtype::U32));
    assert_eq!(r.instantiations, vec!["scale<double>", "scale<int>"]);
}

#[test]
fn scan_names_and_overloads() {
    assert_eq!(normalize_kernel_name("scale< float >"), "scale<float>");
    assert_eq!(
        normalize_kernel_name("f<unsigned  int,3>"),
        "f<unsigned int, 3>"
    );
    assert_eq!(
        split_template_name("f< unsigned int , 4 >"),
        ("f".into(), Some(vec!["unsigned int".into(), "4".into()]))
    );
    assert_eq!(split_template_name("add"), ("add".into(), None));
    let r = scan(
        "__global__ void k(float* x);\n__global__ void k(float* x) {}\n\
         __global__ void o(float* x) {}\n__global__ void o(double* x) {}\n",
    );
    assert_eq!(r.kernels.len(), 2);
    assert!(!r.kernels[0].overloaded);
    assert!(r.kernels[1].overloaded);
    assert_eq!(r.kernels[1].overloads, ["o(float* x)", "o(double* x)"]);
    // Garbage never panics.
    for src in [
        "__global__",
        "__global__ void (",
        "template <",
        "__global__ void f(int a[",
        "}}}{{",
    ] {
        let _ = scan(src);
    }
}

#[test]
fn scan_finds_structs_and_module_variables() {
    let src = "struct __align__(16) P { float a; int b[2]; };\n\
               typedef struct { double d; char c; } Q;\n\
               struct Bad { float* p; };\n\
               __constant__ float taps[5], gain = 2.0f;\n\
               static __device__ unsigned int hits;\n\
               __constant__ float2 lut[3] = {{1, 2}, {3, 4}, {5, 6}};\n\
               namespace ns { __device__ int t[N][2]; }\n\
               extern __constant__ float other[4];\n\
               __device__ float helper(float x) { return x; }\n\
               __shared__ float s[4];\n\
               __global__ void k(P p, Q q, Bad b, float4 v) {}\n";
    let r = scan(src);
    let vars: Vec<(String, String, &str, Vec<Option<usize>>)> = r
        .variables
        .iter()
        .map(|v| (v.name.clone(), v.qualified.clone(), v.space, v.dims.clone()))
        .collect();
    assert_eq!(
        vars,
        vec![
            ("taps".into(), "taps".into(), "__constant__", vec![Some(5)]),
            ("gain".into(), "gain".into(), "__constant__", vec![]),
            ("hits".into(), "hits".into(), "__device__", vec![]),
            ("lut".into(), "lut".into(), "__constant__", vec![Some(3)]),
            (
                "t".into(),
                "ns::t".into(),
                "__device__",
                vec![None, Some(2)]
            ),
        ]
    );
    let params = r.kernels[0].params_for(&[]);
    let layout = |i: usize| match &params[i].kind {
        ParamKind::Aggregate(a) => Some((a.size, a.align, a.fields.len())),
        _ => None,
    };
    assert_eq!(
        layout(0),
        Some((16, 16, 3)),
        "P: a, b[0], b[1], aligned to 16"
    );
    assert_eq!(layout(1), Some((16, 8, 2)), "Q: d, c");
    assert_eq!(layout(2), Some((8, 8, 1)), "a struct with a pointer member");
    assert_eq!(layout(3), Some((16, 16, 4)), "float4");
}

#[test]
fn a_forward_declaration_and_the_definition_are_one_kernel() {
    // The CUDA Programming Guide's shared-memory matmul declares its kernel with unnamed,
    // `const` by-value parameters before defining it.
    let src = "typedef struct { int width; int height; int stride; float* elements; } Matrix;\n\
               __global__ void MatMulKernel(const Matrix, const Matrix, Matrix);\n\
               void host(Matrix A) {}\n\
               __global__ void MatMulKernel(Matrix A, Matrix B, Matrix C) {}\n\
               __global__ void f(float* const p);\n\
               __global__ void f(float* q) {}\n\
               __global__ void g(const float* p);\n\
               __global__ void g(float* p) {}\n";
    let r = scan(src);
    let names: Vec<(&str, bool)> = r
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.overloaded))
        .collect();
    assert_eq!(names, [("MatMulKernel", false), ("f", false), ("g", true)]);
    let mm = &r.kernels[0];
    let params = mm.params_for(&[]);
    let named: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(named, ["A", "B", "C"]);
    assert_eq!(mm.line, 4);
    assert!(params
        .iter()
        .all(|p| matches!(&p.kind, ParamKind::Aggregate(a) if a.size == 24)));
    assert_eq!(r.kernels[1].params_for(&[])[0].name, "q");
    // True overloads: both signatures, as written.
    assert_eq!(r.kernels[2].overloads, ["g(const float* p)", "g(float* p)"]);
}

#[test]
fn aliases_classes_and_pointer_members_classify() {
    let src = "typedef float ft;\n\
               using real_ptr = float*;\n\
               typedef const double* cdp;\n\
               class Grid {\n\
               public:\n\
                 int nx, ny;\n\
                 ft *data, scale;\n\
                 static const int dims = 2;\n\
                 __device__ ft at(int i, int j) const { return data[i * nx + j]; }\n\
                 __host__ __device__ Grid() : nx(0), ny(0), data(nullptr), scale(1) {}\n\
               private:\n\
                 cdp lut = nullptr;\n\
               };\n\
               struct Virtual { virtual void f(); int a; };\n\
               struct Bits { int a : 3; };\n\
               using G = Grid;\n\
               __global__ void k(const ft mean, ft* out, real_ptr p, const real_ptr q, G g,\n\
                                 Virtual v, Bits b, cdp c) {}\n";
    let r = scan(src);
    let p = r.kernels[0].params_for(&[]);
    assert_eq!(p[0].kind, ParamKind::Scalar(Dtype::F32));
    assert_eq!(p[1].kind, ptr(Some(Dtype::F32), false));
    assert_eq!(p[2].kind, ptr(Some(Dtype::F32), false));
    // `const real_ptr` is a const pointer to (writable) float.
    assert_eq!(p[3].kind, ptr(Some(Dtype::F32), false));
    let ParamKind::Aggregate(g) = &p[4].kind else {
        panic!("Grid: {:?}", p[4].kind);
    };
    let fields: Vec<(&str, usize, bool)> = g
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.pointer.is_some()))
        .collect();
    assert_eq!(
        fields,
        [
            ("nx", 0, false),
            ("ny", 4, false),
            ("data", 8, true),
            ("scale", 16, false),
            ("lut", 24, true)
        ]
    );
    assert_eq!((g.name.as_str(), g.size), ("Grid", 32));
    let lut = g.fields[4].pointer.expect("pointer");
    assert_eq!((lut.elem, lut.is_const), (Some(Dtype::F64), true));
    assert_eq!(p[5].kind, ParamKind::Other, "a virtual class");
    assert_eq!(p[6].kind, ParamKind::Other, "a bit-field");
    assert_eq!(p[7].kind, ptr(Some(Dtype::F64), true));
}

#[test]
fn spans_and_mdspans_classify_as_views() {
    let src = "#include <cuda/std/span>\n\
               using fspan = cuda::std::span<float>;\n\
               __global__ void k(cuda::std::span<float> x, cuda::std::span<const int, 4> y,\n\
                 cuda::std::mdspan<float, cuda::std::dextents<int, 2>> m, fspan z,\n\
                 cuda::std::mdspan<float, cuda::std::dextents<int, 2>, cuda::std::layout_left> l) {}\n";
    let r = scan(src);
    let p = r.kernels[0].params_for(&[]);
    let view = |i: usize| match &p[i].kind {
        ParamKind::View(v) => Some((v.what, v.elem, v.is_const, v.extents.len(), v.size)),
        _ => None,
    };
    assert_eq!(view(0), Some(("span", Dtype::F32, false, 1, 16)));
    assert_eq!(view(1), Some(("span", Dtype::I32, true, 1, 8)));
    assert_eq!(view(2), Some(("mdspan", Dtype::F32, false, 2, 16)));
    assert_eq!(view(3), Some(("span", Dtype::F32, false, 1, 16)));
    assert_eq!(view(4), None, "layout_left is not C order");
    assert_eq!(
        p[2].c_type,
        "cuda::std::mdspan<float, cuda::std::dextents<int, 2>>"
    );
}

#[test]
fn hostile_struct_and_view_text_never_panics() {
    for src in [
        "struct __align__(9223372036854775808) A { char c; }; __global__ void k(A a) {}",
        "struct B { float w[18446744073709551615]; }; __global__ void k(B b) {}",
        "struct C { float w[4294967296]; float* p[4294967296]; }; __global__ void k(C c) {}",
        "class D { public: public: private: }; __global__ void k(D d) {}",
        "class E { E() : { } int a; }; __global__ void k(E e) {}",
        "struct F { int a = ; int b = (1, ; }; __global__ void k(F f) {}",
        "struct G { int *, *; }; __global__ void k(G g) {}",
        "typedef G G2; using G3 = G2 ; __global__ void k(G3 g, G3* h) {}",
        "__global__ void k(cuda::std::span<float, 18446744073709551615> s) {}",
        "__global__ void k(cuda::std::mdspan<float, cuda::std::extents<int, 99999999999999999999>> m) {}",
        "__global__ void k(cuda::std::mdspan<float, cuda::std::dextents<int, 2>>>> m) {}",
        "__global__ void k(cuda::std::mdspan<<<float>> m) {}",
        "__global__ void k(span<> s, mdspan<,> m, span s2) {}",
    ] {
        let r = scan(src);
        for k in &r.kernels {
            let _ = k.params_for(&[]);
            let _ = k.display();
        }
    }
    // A huge alignment or array is not laid out.
    let r = scan("struct __align__(8192) A { char c; }; __global__ void k(A a) {}");
    assert_eq!(r.kernels[0].params_for(&[])[0].kind, ParamKind::Other);
}
