//! CUDA backend: the whole DeepSeek V4 Flash forward pass on one NVIDIA GPU.
//!
//! * **Loading**: cudarc with `dynamic-loading`: libcuda and libnvrtc are dlopen'ed at run
//!   time, so this crate builds, tests and runs on machines without CUDA (the CPU path), and
//!   [`available`] just says no there.
//! * **NVRTC rather than embedded PTX/cubin**: the kernels are compiled at start-up for the
//!   exact architecture of the device found (`sm_90a` on an H200: the "a" features include wgmma), so they use that chip's own
//!   instructions without a build-time CUDA toolkit or a per-architecture artifact matrix in
//!   the repository; the build stays pure Rust. The cost is ~1-2 s of compilation at start,
//!   negligible next to uploading the weights. CI compiles every kernel through NVRTC on a
//!   CPU-only machine (`libnvrtc` from the PyPI wheel `nvidia-cuda-nvrtc`), so a broken kernel
//!   cannot land (see the `nvrtc_compiles_all_kernels` test).
//! * **Weights** live in device memory, uploaded once from the GGUF mmap and repacked into an
//!   aligned block layout ([`weights`]).
//! * **Determinism**: no floating-point atomics anywhere; every reduction has a fixed order,
//!   so the same input gives the same output bits run to run.
//! * **Precision** ([`Precision`]): `Reference` keeps f32 activations in every product (it is
//!   what the fixtures are checked against); `Fast` runs prefill GEMMs on tensor cores with f16
//!   inputs and f32 accumulation. Decode is memory-bound and identical in both (f32
//!   activations against dequantized weights).

/// A run-time A/B switch, read once per process (per call site): true unless environment
/// variable `$name` holds `$off`.
macro_rules! env_unless {
    ($name:literal, $off:literal) => {{
        static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *V.get_or_init(|| !std::env::var($name).is_ok_and(|v| v == $off))
    }};
}
/// A run-time A/B switch, read once per process (per call site): whether environment variable
/// `$name` holds `$on`.
macro_rules! env_is {
    ($name:literal, $on:literal) => {{
        static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *V.get_or_init(|| std::env::var($name).is_ok_and(|v| v == $on))
    }};
}
/// A numeric run-time setting, read once per process (per call site): environment variable
/// `$name` parsed as `$t`, else (unset or not a number) `$default`.
macro_rules! env_num {
    ($name:literal, $t:ty, $default:expr) => {{
        static V: std::sync::OnceLock<$t> = std::sync::OnceLock::new();
        *V.get_or_init(|| std::env::var($name).ok().and_then(|v| v.parse::<$t>().ok()).unwrap_or($default))
    }};
}

pub mod backend;
pub mod blas;
pub mod dims;
pub mod kbench;
pub mod driver;
pub mod session;
pub mod weights;
#[cfg(test)]
mod split_test;

/// The index of the `}` matching the `{` at `open` in kernel source text (the tests that read
/// the kernels' text: every_kernel_waits_for_its_predecessor, split_test).
#[cfg(test)]
fn brace_end(src: &str, open: usize) -> usize {
    let mut depth = 0;
    for (k, c) in src[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + k;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces from byte {open}");
}

pub use backend::CudaBackend;
pub use dims::Dims;
pub use driver::{CudaError, Gpu};
pub use session::{CudaSession, Precision, SessionOptions};
pub use weights::CudaModel;

/// True when a CUDA driver with at least one device and libnvrtc can be loaded.
pub fn available() -> bool {
    driver::preload_nvrtc(&[]);
    driver::cuda_present() && driver::nvrtc_present()
}

#[cfg(test)]
mod tests {
    use super::driver;
    use std::path::PathBuf;

    /// Every (non-template) struct the kernel source defines is a kernel argument struct with a
    /// Rust mirror, so each must be in the layout list that kernel_source turns into static_asserts (a
    /// struct added on one side only would otherwise go unchecked).
    #[test]
    fn every_kernel_struct_has_its_layout_checked() {
        let src = driver::kernel_source();
        let listed: Vec<&str> = super::session::kernel_arg_layouts().iter().map(|l| l.0).collect();
        let mut n = 0;
        let mut prev = "";
        for line in src.lines() {
            // (a class template is a device-side helper, never a kernel argument; so is a
            // struct declared under a `// device-only:` comment line)
            let p = std::mem::replace(&mut prev, line);
            let helper = p.starts_with("template") || p.starts_with("// device-only:");
            if let Some(name) = line.strip_prefix("struct ").and_then(|r| r.strip_suffix(" {")).filter(|_| !helper) {
                assert!(listed.contains(&name), "kernel struct {name} has no Rust mirror in kernel_arg_layouts");
                n += 1;
            }
        }
        // (the listed instances of a template, JobSet<...>, are checked by their static_asserts)
        assert_eq!(n, listed.iter().filter(|l| !l.contains('<')).count(), "kernel_arg_layouts lists a struct the kernel source does not define");
    }

    /// mvq's IQ2_XXS decode by byte permutes (q8.cuh `iq2_sel`, `iq2_prmt`, `iq2_xperm` and
    /// the sign multiply-add of `mvq_dot`, mirrored here): for every grid entry and every stored
    /// 7-bit sign pattern, byte n of the two prmt words must be weight PI[n] (and PI[4 + n]) as
    /// the format defines it, magnitude times -1 where sign bit i (of the 7 bits plus the
    /// parity bit that makes the count even) is set; and the x permutes must put x byte PI[n]
    /// in the same places, so the dp4a pairs each weight with its own x.
    #[test]
    fn iq2_prmt_bytes_match_the_definition() {
        let inc = include_str!("kernels/iq2xxs_grid.inc");
        let grid: Vec<u64> = inc.split(|c: char| c == ',' || c.is_whitespace()).filter_map(|t| t.strip_prefix("0x")).map(|t| u64::from_str_radix(t.trim_end_matches("ull"), 16).unwrap()).collect();
        assert_eq!(grid.len(), 256);
        const PI: [usize; 8] = [0, 4, 1, 5, 2, 6, 3, 7];
        // PTX prmt.b32 (default mode): byte n = byte (sel nibble n) of {a, b}, sign-replicated
        // when the nibble's bit 3 is set
        let prmt = |a: u32, b: u32, sel: u32| -> u32 {
            let src = ((b as u64) << 32) | a as u64;
            (0..4).fold(0u32, |r, n| {
                let c = (sel >> (4 * n)) & 15;
                let byte = ((src >> (8 * (c & 7))) & 0xFF) as u32;
                let byte = if c & 8 != 0 { if byte & 0x80 != 0 { 0xFF } else { 0 } } else { byte };
                r | (byte << (8 * n))
            })
        };
        let sel_of = |g: u64| (0..8).fold(0u32, |s, n| {
            let b = ((g >> (8 * PI[n])) & 0xFF) as u32;
            s | (((b > 8) as u32 + (b > 25) as u32) << (4 * n))
        });
        let (pos, neg) = (0x002B_1908u32, 0x00D5_E7F8u32);
        for &e in &grid {
            let code = sel_of(e);
            for s7 in 0u32..128 {
                let sel = (s7.wrapping_mul(0x0081_0204).wrapping_add(s7.count_ones() << 30) & 0x4444_4444) | code;
                let (lo, hi) = (prmt(pos, neg, sel), prmt(pos, neg, sel >> 16));
                let sg = s7 | ((s7.count_ones() & 1) << 7);
                for n in 0..8 {
                    let i = PI[n];
                    let mag = ((e >> (8 * i)) & 0xFF) as i32;
                    let want = if (sg >> i) & 1 == 1 { -mag } else { mag };
                    let w = if n < 4 { lo } else { hi };
                    assert_eq!(((w >> (8 * (n % 4))) & 0xFF) as u8 as i8 as i32, want, "grid {e:#x} signs {s7} weight {i}");
                }
            }
        }
        let (x0, x1) = (0x0302_0100u32, 0x0706_0504u32);  // x byte i = i
        let (xl, xh) = (prmt(x0, x1, 0x5140), prmt(x0, x1, 0x7362));
        for n in 0..8 {
            let w = if n < 4 { xl } else { xh };
            assert_eq!((w >> (8 * (n % 4))) & 0xFF, PI[n] as u32, "x permute, place {n}");
        }
    }

    /// Where CI's virtualenv puts the PyPI libnvrtc (`nvidia-cuda-nvrtc==13.0.*`).
    fn venv_candidates() -> Vec<PathBuf> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut v = Vec::new();
        for venv in [root.join(".venv"), PathBuf::from(std::env::var("VIRTUAL_ENV").unwrap_or_default())] {
            if let Ok(rd) = std::fs::read_dir(venv.join("lib")) {
                for e in rd.flatten() {
                    v.push(e.path().join("site-packages/nvidia/cu13/lib/libnvrtc.so.13"));
                }
            }
        }
        v
    }

    /// Compiles every kernel for sm_90a (what an H100/H200 loads) through NVRTC when libnvrtc is present; without it the
    /// test says it is skipped (CI installs it, see the report for the exact step).
    #[test]
    fn nvrtc_compiles_all_kernels() {
        let pre = driver::preload_nvrtc(&venv_candidates());
        if !driver::nvrtc_present() {
            eprintln!("SKIPPED nvrtc_compiles_all_kernels: libnvrtc not found (pip install nvidia-cuda-nvrtc==13.0.* into .venv, or set DS4_NVRTC_LIB)");
            return;
        }
        eprintln!("libnvrtc: {}", pre.unwrap_or_else(|| "found on the loader path".into()));
        // The CUBIN path is what the device uses; the names must all be exported.
        let cubin = driver::compile_cubin("sm_90a").unwrap_or_else(|e| panic!("sm_90a: {e}"));
        assert!(cubin.len() > 1000 && &cubin[..4] == b"\x7fELF", "not an ELF cubin");
        for k in driver::KERNELS {
            assert!(cubin.windows(k.len() + 1).any(|w| &w[..k.len()] == k.as_bytes() && w[k.len()] == 0), "kernel {k} missing");
        }
    }

    /// Kernels are launched with programmatic dependent launch: a kernel that touched memory
    /// written by its predecessor before `griddepcontrol.wait` would race. Every kernel body
    /// must therefore start with PDL_ENTRY, or contain PDL_WAIT (after an immutable-data prologue).
    #[test]
    fn every_kernel_waits_for_its_predecessor() {
        let src = driver::kernel_source();
        let mut n = 0;
        for (i, _) in src.match_indices("extern \"C\" __global__") {
            let open = i + src[i..].find('{').unwrap();
            // the kernel body: up to the matching brace
            let end = super::brace_end(&src, open);
            let body = &src[open + 1..end];
            // the identifier before the parameter list: the first '(' not opening an attribute's
            // arguments (__launch_bounds__(...), __cluster_dims__(...))
            let head = &src[i..open];
            let name = head
                .match_indices('(')
                .map(|(p, _)| head[..p].trim_end().rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or(""))
                .find(|id| !id.starts_with("__"))
                .unwrap_or("")
                .to_string();
            let first = body.trim_start();
            assert!(first.starts_with("PDL_ENTRY") || body.contains("PDL_WAIT"), "kernel {name} lacks PDL_ENTRY / PDL_WAIT");
            // (a kernel missing from the list loads nowhere: launching it panics on the device)
            assert!(driver::KERNELS.contains(&name.as_str()), "kernel {name} is not in driver::KERNELS");
            n += 1;
        }
        assert_eq!(n, driver::KERNELS.len(), "every listed kernel found once");
    }

    /// Fills the kernel cache for sm_90a (`DS4_KERNEL_CACHE=DIR cargo test -p ds4-engine --lib
    /// prebuild_kernel_cache -- --ignored`), so that a fresh GPU machine loads the CUBIN instead
    /// of spending a minute in NVRTC at start-up.
    #[test]
    #[ignore]
    fn prebuild_kernel_cache() {
        driver::preload_nvrtc(&venv_candidates());
        assert!(driver::nvrtc_present(), "libnvrtc not found");
        assert!(std::env::var_os("DS4_KERNEL_CACHE").is_some(), "set DS4_KERNEL_CACHE");
        let c = driver::cached_cubin(driver::arch_for((9, 0))).unwrap();
        assert_eq!(&c[..4], b"\x7fELF");
    }

    /// A syntax error must be reported, not swallowed (guards the test above).
    #[test]
    fn nvrtc_reports_errors() {
        driver::preload_nvrtc(&venv_candidates());
        if !driver::nvrtc_present() {
            eprintln!("SKIPPED nvrtc_reports_errors: libnvrtc not found");
            return;
        }
        let r = cudarc::nvrtc::compile_ptx("extern \"C\" __global__ void k(float* x) { x[0] = ; }");
        match r {
            Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
                assert!(log.to_string_lossy().contains("error"), "unexpected log: {log:?}")
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}
