//! Primitive operations of the forward pass (MODEL.md §2.2, §2.4, §2.5.3, §5.7), in the
//! evaluation order the spec fixes.

/// "-infinity" sentinel for compressor scores (ds4's value; behaves as −∞ after `exp`).
pub const NEG_INF: f32 = -1.0e30;

/// Weighted RMSNorm: sum of squares in f64, scale in f32, `y = (x·s)·w`.
pub fn rmsnorm_w(x: &[f32], w: &[f32], eps: f32, y: &mut [f32]) {
    let s = rms_scale(x, eps);
    for ((y, &x), &w) in y.iter_mut().zip(x).zip(w) {
        *y = (x * s) * w;
    }
}

/// Unweighted RMSNorm in place.
pub fn rmsnorm_inplace(x: &mut [f32], eps: f32) {
    let s = rms_scale(x, eps);
    for v in x.iter_mut() {
        *v *= s;
    }
}

#[inline]
pub fn rms_scale(x: &[f32], eps: f32) -> f32 {
    let ss: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
    1.0 / (((ss / x.len() as f64) as f32) + eps).sqrt()
}

#[inline]
pub fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[inline]
pub fn silu(x: f32) -> f32 {
    x * sigmoid(x)
}

#[inline]
pub fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else if x < -20.0 {
        x.exp()
    } else {
        x.exp().ln_1p()
    }
}

/// Dot product with a fixed 8-lane accumulation order (vectorizes; deterministic).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ca.remainder().iter().zip(cb.remainder()).enumerate() {
        acc[k] += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// `y += a·x`.
#[inline]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// Exact `ceil(log2(y))` for finite `y > 0` (from the f32 bits; MODEL.md §2.2).
pub fn ceil_log2(y: f32) -> i32 {
    let bits = y.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0 {
        // Subnormal: value = man · 2^-149.
        let fl = 31 - man.leading_zeros() as i32; // floor(log2(man))
        let pow2 = man.is_power_of_two();
        return fl - 149 + if pow2 { 0 } else { 1 };
    }
    let e = exp - 127;
    if man == 0 {
        e
    } else {
        e + 1
    }
}

/// 2^k as f32 for k in the normal/subnormal range.
#[inline]
pub fn exp2i(k: i32) -> f32 {
    if k >= -126 {
        f32::from_bits(((k + 127) as u32) << 23)
    } else {
        f32::from_bits(1u32 << (k + 149))
    }
}

/// Round a value in [-448, 448] to the nearest E4M3FN value (ties to the even code).
pub fn e4m3_round(v: f32) -> f32 {
    let a = v.abs();
    if a == 0.0 || a.is_nan() {
        return v;
    }
    // Spacing of the E4M3 grid around a: subnormals (a < 2^-6) step 2^-9, else 2^(e-3).
    let step_exp = if a < exp2i(-6) { -9 } else { (a.to_bits() >> 23) as i32 - 127 - 3 };
    let step = exp2i(step_exp);
    let q = a / step; // exact: power-of-two division
    let r = q.round_ties_even();
    // Ties to even *code*: on the grid the code parity equals the parity of the mantissa
    // index, i.e. of `r` (steps align with codes within one binade; at a binade boundary
    // the upper value has mantissa 0, even).
    let out = (r * step).min(448.0);
    out.copysign(v)
}

/// FP8 E4M3 round trip of a KV row's first `n_nope` dims, in blocks of 64 (MODEL.md §2.2).
pub fn fp8_roundtrip(v: &mut [f32], n_nope: usize) {
    for blk in v[..n_nope].chunks_mut(64) {
        let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs())).max(1e-4);
        let scale = exp2i(ceil_log2(amax / 448.0));
        for x in blk.iter_mut() {
            *x = e4m3_round((*x / scale).clamp(-448.0, 448.0)) * scale;
        }
    }
}

const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// Round a value in [-6, 6] to the nearest E2M1 value, ties to the even code.
pub fn e2m1_round(v: f32) -> f32 {
    let a = v.abs();
    let mut best = 0usize;
    for c in 1..8 {
        let d = (E2M1[c] - a).abs();
        let db = (E2M1[best] - a).abs();
        if d < db || (d == db && c % 2 == 0) {
            best = c;
        }
    }
    E2M1[best].copysign(v)
}

/// FP4 E2M1 round trip in blocks of 32 (MODEL.md §2.2).
pub fn fp4_roundtrip(v: &mut [f32]) {
    const FLOOR: f32 = 6.0 * 1.1754943508222875e-38; // 6·2^-126
    for blk in v.chunks_mut(32) {
        let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs())).max(FLOOR);
        let scale = exp2i(ceil_log2(amax / 6.0));
        for x in blk.iter_mut() {
            *x = e2m1_round((*x / scale).clamp(-6.0, 6.0)) * scale;
        }
    }
}

/// The decision of a block rounding step closest to its boundary (what [`fp8_margin`] /
/// [`fp4_margin`] measure), taken the other way: used to test whether one rounding flip explains
/// the difference between two runs (verification only; never in inference).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Decision {
    /// the block's scale exponent (its maximum sits next to a power of two)
    Scale { block: usize },
    /// one value's rounding (it sits next to a midpoint of the grid)
    Value { index: usize },
}

/// The nearest decision of `v` (blocks of `bl`) and its relative margin, given each value's
/// rounding margin `value_margin(a) -> Option<margin>` (a = |x| / scale) and the scale rule.
fn nearest_decision(v: &[f32], bl: usize, floor: f32, top: f32, value_margin: impl Fn(f32) -> Option<f32>) -> Option<(Decision, f32)> {
    let mut best: Option<(Decision, f32)> = None;
    let mut consider = |d: Decision, m: f32| {
        if best.is_none_or(|(_, b)| m < b) {
            best = Some((d, m));
        }
    };
    for (bi, blk) in v.chunks(bl).enumerate() {
        let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs()));
        if amax > floor {
            consider(Decision::Scale { block: bi }, pow2_margin(amax / top));
        }
        let scale = exp2i(ceil_log2(amax.max(floor) / top));
        for (i, &x) in blk.iter().enumerate() {
            if let Some(m) = value_margin((x / scale).abs()) {
                consider(Decision::Value { index: bi * bl + i }, m);
            }
        }
    }
    best
}

fn fp8_value_margin(a: f32) -> Option<f32> {
    if a == 0.0 || a >= 448.0 {
        return None;
    }
    let step = exp2i(if a < exp2i(-6) { -9 } else { (a.to_bits() >> 23) as i32 - 127 - 3 });
    let q = a / step;
    Some(((q - q.floor()) - 0.5).abs() * step / a)
}

fn fp4_value_margin(a: f32) -> Option<f32> {
    const MIDS: [f32; 7] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0];
    MIDS.iter().map(|&m| (a - m).abs() / m).reduce(f32::min)
}

/// [`fp8_roundtrip`] with its nearest decision (smallest [`fp8_margin`]) taken the other way.
/// Returns that decision's margin (None when the row has no decision to flip).
pub fn fp8_roundtrip_flipped(v: &mut [f32], n_nope: usize) -> Option<f32> {
    let (d, m) = nearest_decision(&v[..n_nope], 64, 1e-4, 448.0, fp8_value_margin)?;
    let orig: Vec<f32> = v[..n_nope].to_vec();
    fp8_roundtrip(v, n_nope);
    match d {
        Decision::Value { index } => {
            let blk = &orig[index / 64 * 64..(index / 64 * 64 + 64).min(n_nope)];
            let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs())).max(1e-4);
            let scale = exp2i(ceil_log2(amax / 448.0));
            let x = (orig[index] / scale).clamp(-448.0, 448.0);
            let a = x.abs();
            let step = exp2i(if a < exp2i(-6) { -9 } else { (a.to_bits() >> 23) as i32 - 127 - 3 });
            let rounded = v[index].abs() / scale;
            // the other neighbour on the grid around a
            let other = if rounded > a { (a / step).floor() * step } else { ((a / step).floor() + 1.0) * step };
            v[index] = other.min(448.0).copysign(x) * scale;
        }
        Decision::Scale { block } => {
            let (lo, hi) = (block * 64, (block * 64 + 64).min(n_nope));
            let amax = orig[lo..hi].iter().fold(0f32, |m, &x| m.max(x.abs())).max(1e-4);
            let scale = other_pow2_scale(amax / 448.0);
            for i in lo..hi {
                v[i] = e4m3_round((orig[i] / scale).clamp(-448.0, 448.0)) * scale;
            }
        }
    }
    Some(m)
}

/// The block scale a round trip would pick for `r` = amax / format max (2^ceil(log2 r)) taken
/// the other way: the power of two on the other side of the one nearest to r.
fn other_pow2_scale(r: f32) -> f32 {
    let k = ceil_log2(r);
    let near = ((r as f64).log2().round()) as i32;
    exp2i(if k == near { near + 1 } else { near })
}

/// [`fp4_roundtrip`] with its nearest decision taken the other way (input already rotated).
pub fn fp4_roundtrip_flipped(v: &mut [f32]) -> Option<f32> {
    const FLOOR: f32 = 6.0 * 1.1754943508222875e-38;
    let (d, m) = nearest_decision(v, 32, FLOOR, 6.0, fp4_value_margin)?;
    let orig = v.to_vec();
    fp4_roundtrip(v);
    match d {
        Decision::Value { index } => {
            let lo = index / 32 * 32;
            let amax = orig[lo..(lo + 32).min(orig.len())].iter().fold(0f32, |m, &x| m.max(x.abs())).max(FLOOR);
            let scale = exp2i(ceil_log2(amax / 6.0));
            let x = (orig[index] / scale).clamp(-6.0, 6.0);
            let a = x.abs();
            let rounded = v[index].abs() / scale;
            // the grid value on the other side of a
            let other = if rounded > a {
                E2M1.iter().copied().filter(|&g| g <= a).fold(0.0, f32::max)
            } else {
                E2M1.iter().copied().filter(|&g| g >= a).fold(6.0, f32::min)
            };
            v[index] = other.copysign(x) * scale;
        }
        Decision::Scale { block } => {
            let (lo, hi) = (block * 32, (block * 32 + 32).min(orig.len()));
            let amax = orig[lo..hi].iter().fold(0f32, |m, &x| m.max(x.abs())).max(FLOOR);
            let scale = other_pow2_scale(amax / 6.0);
            for i in lo..hi {
                v[i] = e2m1_round((orig[i] / scale).clamp(-6.0, 6.0)) * scale;
            }
        }
    }
    Some(m)
}

/// Relative distance of `r > 0` to the nearest power of two (where `ceil(log2 r)` jumps).
fn pow2_margin(r: f32) -> f32 {
    let k = (r as f64).log2().round();
    ((r as f64 - k.exp2()).abs() / k.exp2()) as f32
}

/// Diagnostics for the rounding steps: the smallest relative distance of any input of
/// [`fp8_roundtrip`] to a rounding boundary (a midpoint between E4M3 values, or a block maximum
/// at a power-of-two scale change). Values closer than float noise may round either way in
/// two correct implementations.
pub fn fp8_margin(v: &[f32], n_nope: usize) -> f32 {
    let mut best = f32::INFINITY;
    for blk in v[..n_nope].chunks(64) {
        let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs()));
        if amax > 1e-4 {
            best = best.min(pow2_margin(amax / 448.0));
        }
        let scale = exp2i(ceil_log2(amax.max(1e-4) / 448.0));
        for &x in blk {
            let a = (x / scale).abs();
            if a == 0.0 || a >= 448.0 {
                continue;
            }
            let step = exp2i(if a < exp2i(-6) { -9 } else { (a.to_bits() >> 23) as i32 - 127 - 3 });
            let q = a / step;
            best = best.min(((q - q.floor()) - 0.5).abs() * step / a);
        }
    }
    best
}

/// Like [`fp8_margin`] for [`fp4_roundtrip`] (input already Hadamard-rotated).
pub fn fp4_margin(v: &[f32]) -> f32 {
    const MIDS: [f32; 7] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0];
    let mut best = f32::INFINITY;
    for blk in v.chunks(32) {
        let amax = blk.iter().fold(0f32, |m, &x| m.max(x.abs()));
        if amax == 0.0 {
            continue;
        }
        best = best.min(pow2_margin(amax / 6.0));
        let scale = exp2i(ceil_log2(amax / 6.0));
        for &x in blk {
            let a = (x / scale).abs();
            for m in MIDS {
                best = best.min((a - m).abs() / m);
            }
        }
    }
    best
}

/// Orthonormal Sylvester Walsh–Hadamard transform (length a power of two), MODEL.md §2.2.1.
pub fn hadamard(v: &mut [f32]) {
    let n = v.len();
    debug_assert!(n.is_power_of_two());
    let mut stride = 1;
    while stride < n {
        for base in (0..n).step_by(2 * stride) {
            for i in base..base + stride {
                let (a, b) = (v[i], v[i + stride]);
                v[i] = a + b;
                v[i + stride] = a - b;
            }
        }
        stride *= 2;
    }
    let s = (1.0 / (n as f64).sqrt()) as f32;
    for x in v.iter_mut() {
        *x *= s;
    }
}

/// The indexer's quantization-aware step: Hadamard then FP4 round trip.
pub fn indexer_qat(v: &mut [f32]) {
    hadamard(v);
    fp4_roundtrip(v);
}

/// RoPE frequency table of one kind (per pair `k`), computed as MODEL.md §2.5.3 prescribes.
#[derive(Clone, Debug)]
pub struct Rope {
    pub freqs: Vec<f32>,
}

impl Rope {
    /// Plain RoPE: `ω_k = base^(−2k/dim)`.
    pub fn plain(base: f32, dim: usize) -> Rope {
        Rope { freqs: (0..dim / 2).map(|k| 1.0 / base.powf((2 * k) as f32 / dim as f32)).collect() }
    }

    /// DeepSeek YaRN: blend of `ω_ext/factor` and `ω_ext` with a linear ramp, no mscale.
    pub fn yarn(base: f32, dim: usize, factor: f32, orig_ctx: u64, beta_fast: f32, beta_slow: f32) -> Rope {
        let mut r = Rope::plain(base, dim);
        if factor <= 1.0 {
            return r;
        }
        let corr = |beta: f64| {
            dim as f64 * (orig_ctx as f64 / (beta * 2.0 * std::f64::consts::PI)).ln() / (2.0 * (base as f64).ln())
        };
        let low = corr(beta_fast as f64).floor().max(0.0);
        let high = corr(beta_slow as f64).ceil().min(dim as f64 - 1.0);
        let span = (high - low).max(0.001) as f32;
        let low = low as f32;
        for (k, w) in r.freqs.iter_mut().enumerate() {
            let ramp = 1.0 - ((k as f32 - low) / span).clamp(0.0, 1.0);
            *w = (*w / factor) * (1.0 - ramp) + *w * ramp;
        }
        r
    }

    /// cos/sin per pair at `pos` (θ = f32(pos)·ω_k, one f32 multiply).
    pub fn cos_sin(&self, pos: usize, out: &mut Vec<(f32, f32)>) {
        out.clear();
        let p = pos as f32;
        out.extend(self.freqs.iter().map(|&w| {
            let t = p * w;
            (t.cos(), t.sin())
        }));
    }
}

/// Rotate the trailing `2·cs.len()` dims of `x` as interleaved pairs; `inverse` negates sin.
#[inline]
pub fn rope_tail(x: &mut [f32], cs: &[(f32, f32)], inverse: bool) {
    let n = x.len();
    let tail = &mut x[n - 2 * cs.len()..];
    for (k, &(c, s)) in cs.iter().enumerate() {
        let s = if inverse { -s } else { s };
        let (a, b) = (tail[2 * k], tail[2 * k + 1]);
        tail[2 * k] = a * c - b * s;
        tail[2 * k + 1] = a * s + b * c;
    }
}

/// Output of `hc_pre`: the collapsed input and the mixing parameters for `hc_post`.
#[derive(Clone, Debug, Default)]
pub struct HcMix {
    pub post: Vec<f32>,
    /// `comb[a·n + b]`: weight of old stream `a` in new stream `b`.
    pub comb: Vec<f32>,
}

/// Sinkhorn normalization of the `n×n` logits `z` (row-major) into `c` (MODEL.md §2.4.2).
pub fn sinkhorn(z: &[f32], n: usize, iters: usize, eps: f32, c: &mut [f32]) {
    for a in 0..n {
        let row = &z[a * n..(a + 1) * n];
        let m = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut sum = 0f32;
        for b in 0..n {
            let e = (row[b] - m).exp();
            c[a * n + b] = e;
            sum += e;
        }
        let inv = 1.0 / sum;
        for b in 0..n {
            c[a * n + b] = c[a * n + b] * inv + eps;
        }
    }
    let cols = |c: &mut [f32]| {
        for b in 0..n {
            let mut s = 0f32;
            for a in 0..n {
                s += c[a * n + b];
            }
            let inv = 1.0 / (s + eps);
            for a in 0..n {
                c[a * n + b] *= inv;
            }
        }
    };
    cols(c);
    for _ in 1..iters {
        for a in 0..n {
            let s: f32 = c[a * n..(a + 1) * n].iter().sum();
            let inv = 1.0 / (s + eps);
            for v in &mut c[a * n..(a + 1) * n] {
                *v *= inv;
            }
        }
        cols(c);
    }
}

/// From the mixer output `mix` (already `fn·rmsnorm(flat)`), build pre weights, post weights and
/// the Sinkhorn combine matrix (MODEL.md §2.4.1). Returns `pre`.
pub fn hc_split(mix: &[f32], scale: &[f32], base: &[f32], n: usize, iters: usize, eps: f32, out: &mut HcMix) -> Vec<f32> {
    let pre: Vec<f32> = (0..n).map(|i| sigmoid(mix[i] * scale[0] + base[i]) + eps).collect();
    out.post = (0..n).map(|i| 2.0 * sigmoid(mix[n + i] * scale[1] + base[n + i])).collect();
    let z: Vec<f32> = (0..n * n).map(|j| mix[2 * n + j] * scale[2] + base[2 * n + j]).collect();
    out.comb = vec![0f32; n * n];
    sinkhorn(&z, n, iters, eps, &mut out.comb);
    pre
}

/// `x[d] = Σ_s pre[s]·S[s][d]`, streams accumulated in order.
pub fn hc_collapse(state: &[f32], pre: &[f32], x: &mut [f32]) {
    let d = x.len();
    x.fill(0.0);
    for (s, &p) in pre.iter().enumerate() {
        axpy(p, &state[s * d..(s + 1) * d], x);
    }
}

/// `S_out[b][d] = post[b]·y[d] + Σ_a comb[a][b]·S_in[a][d]` (MODEL.md §2.4.3).
pub fn hc_post(state: &[f32], y: &[f32], mix: &HcMix, out: &mut [f32]) {
    let n = mix.post.len();
    let d = y.len();
    for b in 0..n {
        let o = &mut out[b * d..(b + 1) * d];
        for (o, &y) in o.iter_mut().zip(y) {
            *o = mix.post[b] * y;
        }
        for a in 0..n {
            axpy(mix.comb[a * n + b], &state[a * d..(a + 1) * d], o);
        }
    }
}

#[cfg(test)]
mod tests {
    fn rng_rows(seed: u64, n: usize) -> Vec<f32> {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                // a few large values so blocks have different scales
                if i % 37 == 0 { u * 90.0 } else { u * 3.0 }
            })
            .collect()
    }

    /// The flipped round trip takes exactly the decision `fp8_margin` / `fp4_margin` measure the
    /// other way: same margin; one value moves to the other grid neighbour of its input, or one
    /// block is rounded with the other scale; everything else is bit-identical.
    #[test]
    fn flipped_roundtrips_change_exactly_the_nearest_decision() {
        let (mut changed, mut changed4) = (0, 0);
        for seed in 1..200u64 {
            let x = rng_rows(seed, 448);
            let (mut a, mut b) = (x.clone(), x.clone());
            fp8_roundtrip(&mut a, 448);
            let m = fp8_roundtrip_flipped(&mut b, 448).unwrap();
            assert_eq!(m, fp8_margin(&x, 448), "seed {seed}");
            let diff: Vec<usize> = (0..448).filter(|&i| a[i].to_bits() != b[i].to_bits()).collect();
            changed += !diff.is_empty() as usize;
            assert!(diff.iter().all(|&i| i / 64 == diff[0] / 64), "seed {seed}: more than one block changed");
            if diff.len() == 1 {
                let i = diff[0];
                // the other neighbour: on the other side of the input, not farther than one step
                assert!((a[i] - x[i]).signum() != (b[i] - x[i]).signum(), "seed {seed}: same side");
                assert!((b[i] - x[i]).abs() >= (a[i] - x[i]).abs());
            }

            let y = rng_rows(seed + 1000, 128);
            let (mut c, mut d) = (y.clone(), y.clone());
            fp4_roundtrip(&mut c);
            let m4 = fp4_roundtrip_flipped(&mut d).unwrap();
            assert_eq!(m4, fp4_margin(&y), "seed {seed}");
            let diff: Vec<usize> = (0..128).filter(|&i| c[i].to_bits() != d[i].to_bits()).collect();
            // a scale flip may leave a block unchanged (all its values round alike on both grids)
            changed4 += !diff.is_empty() as usize;
            assert!(diff.iter().all(|&i| i / 32 == diff[0] / 32), "seed {seed}: fp4 flip {diff:?} margin {m4}");
        }
        assert!(changed >= 190 && changed4 >= 150, "flips changed a value in {changed}/199 fp8 and {changed4}/199 fp4 rows");
    }

    /// A value just above an E4M3 midpoint rounds up normally and down when flipped.
    #[test]
    fn flipped_fp8_value_at_a_midpoint() {
        let mut x = vec![0.0f32; 64];
        x[0] = 390.0; // scale 1 (390/448 is far from a power of two, 390 far from a midpoint)
        x[5] = 1.0625 * (1.0 + 1e-6); // midpoint of 1.0 and 1.125, just above
        let mut a = x.clone();
        fp8_roundtrip(&mut a, 64);
        assert_eq!(a[5], 1.125);
        let mut b = x.clone();
        let m = fp8_roundtrip_flipped(&mut b, 64).unwrap();
        assert!(m < 2e-6);
        assert_eq!(b[5], 1.0);
        assert_eq!(b[0], a[0]);
    }

    use super::*;

    #[test]
    fn ceil_log2_exact() {
        for k in -149..128 {
            let p = exp2i(k);
            assert_eq!(ceil_log2(p), k, "2^{k}");
            if k < 127 {
                let above = f32::from_bits(p.to_bits() + 1);
                assert_eq!(ceil_log2(above), k + 1, "just above 2^{k}");
            }
        }
        assert_eq!(ceil_log2(3.0), 2);
        assert_eq!(ceil_log2(0.3), -1);
    }

    #[test]
    fn e4m3_grid() {
        // Enumerate every positive E4M3FN value and check rounding of values and midpoints.
        let vals: Vec<f32> = (0..127u32)
            .map(|c| {
                let (e, m) = (c >> 3, c & 7);
                if e == 0 {
                    m as f32 * exp2i(-9)
                } else {
                    (1.0 + m as f32 / 8.0) * exp2i(e as i32 - 7)
                }
            })
            .collect();
        for (c, &v) in vals.iter().enumerate() {
            assert_eq!(e4m3_round(v), v);
            assert_eq!(e4m3_round(-v), -v);
            if c + 1 < vals.len() {
                let mid = (v + vals[c + 1]) / 2.0;
                let want = if c % 2 == 0 { v } else { vals[c + 1] };
                assert_eq!(e4m3_round(mid), want, "midpoint after code {c}");
            }
        }
    }

    #[test]
    fn hadamard_involution() {
        let mut v: Vec<f32> = (0..128).map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.3).collect();
        let orig = v.clone();
        hadamard(&mut v);
        hadamard(&mut v);
        for (a, b) in v.iter().zip(&orig) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0));
        }
    }

    #[test]
    fn yarn_table_matches_appendix_b() {
        let r = Rope::yarn(160000.0, 64, 16.0, 65536, 32.0, 1.0);
        let want = [
            (0, 1.0000000e+00),
            (8, 5.0000001e-02),
            (16, 2.2656249e-03),
            (20, 2.9697779e-04),
            (24, 1.9531251e-05),
            (31, 5.6805294e-07),
        ];
        for (k, w) in want {
            assert!((r.freqs[k] - w).abs() <= w * 2e-7, "k={k}: {} vs {w}", r.freqs[k]);
        }
        let p = Rope::plain(10000.0, 64);
        assert!((p.freqs[1] - 7.4989420e-01).abs() < 1e-7);
        assert!((p.freqs[31] - 1.3335215e-04).abs() < 1e-10);
    }

    #[test]
    fn sinkhorn_columns_sum_to_one() {
        let z: Vec<f32> = (0..16).map(|i| ((i * 7 % 5) as f32 - 2.0) * 0.7).collect();
        let mut c = vec![0f32; 16];
        sinkhorn(&z, 4, 20, 1e-6, &mut c);
        for b in 0..4 {
            let s: f32 = (0..4).map(|a| c[a * 4 + b]).sum();
            assert!((s - 1.0).abs() < 1e-5, "col {b}: {s}");
        }
        for a in 0..4 {
            let s: f32 = c[a * 4..a * 4 + 4].iter().sum();
            assert!((s - 1.0).abs() < 1e-3, "row {a}: {s}");
        }
    }
}
