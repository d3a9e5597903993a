//! `gram_schmidt` against the plain modified Gram–Schmidt loop it
//! rearranges: the same bits, for every shape around its group width.

use lingo_tensor::init::{gram_schmidt, orthogonal};
use ndarray::Array2;
use ndarray_rand::RandomExt;
use ndarray_rand::rand_distr::StandardNormal;
use rand::SeedableRng;

/// The textbook loop, column by column on ndarray views.
fn plain(a: &mut Array2<f64>) {
    for j in 0..a.ncols() {
        for k in 0..j {
            let proj = a.column(j).dot(&a.column(k));
            let qk = a.column(k).to_owned();
            a.column_mut(j).scaled_add(-proj, &qk);
        }
        let norm = a.column(j).dot(&a.column(j)).sqrt();
        a.column_mut(j).mapv_inplace(|v| v / norm.max(f64::MIN_POSITIVE));
    }
}

#[test]
fn gram_schmidt_gives_the_bits_of_the_plain_loop() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for (n, m) in [(1, 1), (7, 1), (5, 2), (8, 8), (9, 9), (17, 16), (40, 17), (64, 33), (130, 65), (96, 96)] {
        let a: Array2<f64> = Array2::random_using((n, m), StandardNormal, &mut rng);
        let (mut fast, mut slow) = (a.clone(), a);
        gram_schmidt(&mut fast);
        plain(&mut slow);
        let bits = |x: &Array2<f64>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&slow), "({n}, {m})");
    }
}

#[test]
fn the_same_bits_on_one_thread_and_on_several() {
    let draw = || orthogonal(&[200, 72], 1.0, &mut rand::rngs::StdRng::seed_from_u64(3)).unwrap();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(draw);
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap().install(draw);
    assert_eq!(one, four);
}
