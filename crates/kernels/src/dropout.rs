//! Dropout masks from a counter-based hash: a few integer operations per
//! element, where one draw of a seeded generator per element made dropout
//! the slowest op of a Transformer layer.

/// Element `i`'s draw under `key`: two rounds of Wellons's `lowbias32`
/// integer hash, keyed by each half of `key`. 32-bit multiplies, so a loop
/// of them vectorizes (8 lanes with AVX2).
#[inline(always)]
fn draw(key: u64, i: u32) -> u32 {
    let mix = |mut x: u32| {
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    };
    mix(mix(i ^ key as u32) ^ (key >> 32) as u32)
}

/// Fills `mask` for inverted dropout with probability `p` under `key`:
/// element `i` is `0` when the top 24 bits of its draw fall below `p·2²⁴`,
/// and `1 / (1 - p)` otherwise, so that the expected value is unchanged. A
/// mask of 2³² elements or more repeats draws. The fast version and the
/// reference are the same loop (the fast one compiled for AVX2), so they
/// give the same bits.
///
/// ```
/// let mut mask = vec![0.0_f32; 1000];
/// lingo_kernels::dropout::mask(7, 0.5, &mut mask);
/// let kept = mask.iter().filter(|&&m| m == 2.0).count();
/// assert!((400..600).contains(&kept) && mask.iter().all(|&m| m == 0.0 || m == 2.0));
/// ```
pub fn mask(key: u64, p: f32, mask: &mut [f32]) {
    let scale = 1.0 / (1.0 - p);
    let cut = (f64::from(p) * 16_777_216.0).ceil() as u32; // drop when the top 24 bits are below p·2²⁴
    let fill = |mask: &mut [f32]| {
        for (i, m) in mask.iter_mut().enumerate() {
            *m = f32::from(u8::from(draw(key, i as u32) >> 8 >= cut)) * scale; // branch-free: it vectorizes
        }
    };
    if crate::reference() { fill(mask) } else { crate::math::vectorized(|| fill(mask)) }
}
