//! gemm_qs's split launches (GqKernel::QsSplit) checked on the host: the device code that picks
//! each launch's tiles (matmul.cuh gq_group_of, gq_group_span, gq_split_rem, qr_class_count,
//! qr_tile_locate) is cut out of the kernel source, compiled with the system C++ compiler
//! beside a driver that lists every tile of a launch (the class prefixes summed in order, as
//! qr_class_prefix's warp scan sums them), and run for each launch of session.rs
//! qs_split_plan on many sets of group sizes. The property, independent of how the split is
//! written: every (token, weight row) of every group lies in exactly one tile of exactly one
//! launch, each tile inside one group and no wider than its kernel's token width. Why: on the
//! device a tile missed or covered twice shows only as wrong (or doubled) outputs of some
//! experts, which the kernel bench (bits against gemm_qr) and the fixtures catch only where
//! their group sizes reach the faulty band.

use super::session::{gq_tile_shape, qs_split_plan, GqKernel};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The text of the first `__device__ __forceinline__ <type> NAME(` definition in `src`, with
/// the `template <...>` line before it when there is one, through its closing brace.
fn device_fn(src: &str, name: &str) -> String {
    let pat = format!(" {name}(");
    let at = src
        .match_indices(&pat)
        .map(|(i, _)| i)
        .find(|&i| {
            let line0 = src[..i].rfind('\n').map_or(0, |p| p + 1);
            src[line0..i].starts_with("__device__ __forceinline__")
        })
        .unwrap_or_else(|| panic!("{name}: no __device__ __forceinline__ definition in matmul.cuh"));
    let mut start = src[..at].rfind('\n').map_or(0, |p| p + 1);
    let prev0 = src[..start.saturating_sub(1)].rfind('\n').map_or(0, |p| p + 1);
    if src[prev0..start].starts_with("template <") {
        start = prev0;
    }
    let open = at + src[at..].find('{').unwrap();
    src[start..=super::brace_end(src, open)].to_string()
}

/// `struct NAME { ... };` from `src`.
fn device_struct(src: &str, name: &str) -> String {
    let at = src.find(&format!("struct {name} {{")).unwrap_or_else(|| panic!("struct {name} not in matmul.cuh"));
    let end = at + src[at..].find("};").unwrap() + 2;
    src[at..end].to_string()
}

/// The host program: the device functions between shims, and a main that reads `rows ng`, the
/// ng + 1 group offsets and launches `nx bm flags`, and prints each launch's tiles as
/// `launch tb tend rb rend` (tokens [tb, tend), rows [rb, rend)).
fn host_source() -> String {
    let src = include_str!("kernels/matmul.cuh");
    let defines: String = src
        .lines()
        .filter(|l| l.starts_with("#define GQ_FLAG_") || l.starts_with("#define GQ_SPLIT_NX"))
        .map(|l| format!("{l}\n"))
        .collect();
    let fns: String = ["gq_group_of", "gq_group_span", "gq_split_rem", "qr_class_count", "qr_tile_locate"]
        .iter()
        .map(|n| device_fn(src, n) + "\n")
        .collect();
    format!(
        r#"#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
using std::max;
using std::min;
typedef int64_t i64;
typedef uint8_t u8;
#define __device__
#define __forceinline__ inline
{defines}
{wmat}
{gargs}
{fns}
template <int NX, int BM>
static void tiles(const GemmArgs& a, int ng, int launch) {{
    constexpr int CM = NX / 64;
    std::vector<int> pc(CM * (ng + 1));
    int ntt = 0;
    for (int k = 0; k < CM; k++) {{
        int run = 0;
        for (int e = 0; e < ng; e++) {{
            pc[k * (ng + 1) + e] = run;
            run += qr_class_count<NX>(a, e, k);
        }}
        pc[k * (ng + 1) + ng] = run;
        ntt += run;
    }}
    const int rtiles = (a.w.rows + BM - 1) / BM;
    for (int tile = 0; tile < ntt * rtiles; tile++) {{
        int tb, j1, rb;
        const u8 *pay, *hdr;
        qr_tile_locate<NX, BM>(a, ng, pc.data(), tile, rtiles, tb, j1, rb, pay, hdr);
        printf("%d %d %d %d %d\n", launch, tb, min(j1, tb + NX), rb, min(rb + BM, a.w.rows));
    }}
}}
int main() {{
    int rows, ng, nl;
    if (scanf("%d %d", &rows, &ng) != 2) return 2;
    std::vector<int> off(ng + 1);
    for (int& o : off)
        if (scanf("%d", &o) != 1) return 2;
    if (scanf("%d", &nl) != 1) return 2;
    GemmArgs a{{}};
    a.w.rows = rows;
    a.grp_off = off.data();
    a.T = off[ng];
    for (int l = 0; l < nl; l++) {{
        int nx, bm, flags;
        if (scanf("%d %d %d", &nx, &bm, &flags) != 3) return 2;
        a.flags = flags;
        if (nx == 256 && bm == 128) tiles<256, 128>(a, ng, l);
        else if (nx == 128 && bm == 256) tiles<128, 256>(a, ng, l);
        else if (nx == 64 && bm == 512) tiles<64, 512>(a, ng, l);
        else return 3;
    }}
    return 0;
}}
"#,
        wmat = device_struct(src, "WMat"),
        gargs = device_struct(src, "GemmArgs"),
    )
}

/// Group sizes: uniform (8K tokens, 6 of 256 experts each), skewed, every band edge, random.
fn size_sets() -> Vec<Vec<usize>> {
    let mut seed = 0x5eed_1234_u64;
    let mut rnd = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m) as usize
    };
    let edges = [0usize, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257, 320, 383, 384, 385, 511, 512, 513, 640, 700];
    vec![
        vec![192; 256],
        (0..256).map(|e| 4000 / (e + 1) + e % 3).collect(),
        edges.to_vec(),
        (0..256).map(|_| rnd(1000)).collect(),
        (0..64).map(|_| rnd(300)).collect(),
        vec![0; 8],
    ]
}

/// Every tile of each launch of `plan` for groups of `sizes` and `rows` weight rows, checked.
fn check(exe: &PathBuf, plan: &[(GqKernel, i32)], sizes: &[usize], rows: usize) -> Result<(), String> {
    let mut off = vec![0usize];
    for s in sizes {
        off.push(off.last().unwrap() + s);
    }
    let t = *off.last().unwrap();
    let shapes: Vec<(usize, usize)> = plan.iter().map(|&(k, _)| gq_tile_shape(k).expect("a gemm_qs kernel")).collect();
    let mut input = format!("{rows} {}\n", sizes.len());
    input += &off.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(" ");
    input += &format!("\n{}\n", plan.len());
    for (&(_, flags), &(nx, bm)) in plan.iter().zip(&shapes) {
        input += &format!("{nx} {bm} {flags}\n");
    }
    let mut child = Command::new(exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("tile lister exited with {}", out.status));
    }
    // per token: the launch covering it and the row ranges of its tiles there
    let mut cover: Vec<Option<(usize, Vec<(usize, usize)>)>> = vec![None; t];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Vec<usize> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        let (l, tb, te, rb, re) = (v[0], v[1], v[2], v[3], v[4]);
        let nx = shapes[l].0;
        let e = off.partition_point(|&o| o <= tb) - 1;
        if te <= tb || te - tb > nx || te > off[e + 1] || re <= rb {
            return Err(format!("launch {l}: tile tokens [{tb}, {te}) rows [{rb}, {re}) (group {e} [{}, {}), width {nx})", off[e], off[e + 1]));
        }
        for (j, c) in cover.iter_mut().enumerate().take(te).skip(tb) {
            match c {
                None => *c = Some((l, vec![(rb, re)])),
                Some((l0, r)) if *l0 == l => r.push((rb, re)),
                Some((l0, _)) => return Err(format!("token {j} in launches {l0} and {l}")),
            }
        }
    }
    for (j, c) in cover.iter_mut().enumerate() {
        let Some((l, r)) = c else { return Err(format!("token {j} in no tile")) };
        r.sort_unstable();
        let mut at = 0;
        for &(rb, re) in r.iter() {
            if rb != at {
                return Err(format!("token {j}, launch {l}: rows from {at} {} ({r:?})", if rb < at { "twice" } else { "missing" }));
            }
            at = re;
        }
        if at != rows {
            return Err(format!("token {j}, launch {l}: rows {at}..{rows} missing"));
        }
    }
    Ok(())
}

#[test]
fn split_plan_covers_each_token_once() {
    let dir = std::env::temp_dir().join(format!("ds4-split-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cpp, exe) = (dir.join("split.cpp"), dir.join("split"));
    std::fs::write(&cpp, host_source()).unwrap();
    let cc = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = match Command::new(&cc).args(["-std=c++17", "-O1", "-w", "-o"]).arg(&exe).arg(&cpp).output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => panic!("{cc} failed on the cut-out tile code:\n{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            eprintln!("SKIPPED split_plan_covers_each_token_once: no C++ compiler ({cc}: {e}); install g++ or set CXX");
            false
        }
    };
    if built {
        use ds4_gguf::GgmlType;
        let mut runs = 0;
        for mode in [2usize, 3] {
            for ty in [GgmlType::Iq2Xxs, GgmlType::Q2K, GgmlType::Q4K, GgmlType::Q8_0] {
                let plan = qs_split_plan(ty.id() as i32, mode);
                for sizes in size_sets() {
                    for rows in [4096usize, 2048, 1000] {
                        if let Err(e) = check(&exe, &plan, &sizes, rows) {
                            panic!("mode {mode}, {ty:?}, {rows} rows, plan {plan:?}, sizes {sizes:?}: {e}");
                        }
                        runs += 1;
                    }
                }
            }
        }
        eprintln!("split plans: {runs} cases, every token and row in exactly one tile");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
