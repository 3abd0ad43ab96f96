//! The sketch estimators against exact Jaccard on generated documents.
//!
//! - resemblance: |estimate − r| ≤ 0.05 for 95% of pairs whose smaller doc has ≥ 500
//!   shingles, over r from 0 to 1;
//! - containment of a page inside a page up to 8 times larger: within 0.1 for 90%;
//! - invariants of every sketch and estimate (proptest).

use proptest::prelude::*;
use tidemark::sketch::{estimate, shingles, Sketch, SketchParams};
use tidemark::synth::{exact_jaccard, Rng};

fn word(rng: &mut Rng) -> String {
    // 50,000 distinct words: repeated shingles are rare, as in real text.
    format!("w{}", rng.below(50_000))
}

fn doc(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n).map(|_| word(rng)).collect()
}

fn shingle_set(tokens: &[String], p: &SketchParams) -> Vec<u64> {
    let mut out = Vec::new();
    shingles(tokens.iter().map(|s| s.as_str()), p, &mut out);
    out
}

/// B from A: `edits` random operations (replace, insert, delete a token).
fn mutate(rng: &mut Rng, a: &[String], edits: usize) -> Vec<String> {
    let mut b = a.to_vec();
    for _ in 0..edits {
        let i = rng.below(b.len());
        match rng.below(3) {
            0 => b[i] = word(rng),
            1 => b.insert(i, word(rng)),
            _ if b.len() > 20 => {
                b.remove(i);
            }
            _ => b[i] = word(rng),
        }
    }
    b
}

#[test]
fn resemblance_within_005_for_95_percent_of_pairs() {
    let p = SketchParams::default();
    let mut rng = Rng::new(42);
    let mut errs: Vec<(f64, f64, f64, usize)> = Vec::new();
    let mut scratch = Vec::new();
    let mut by_band = [0usize; 10];
    while errs.len() < 600 {
        let n = rng.range(500, 8000);
        let a = doc(&mut rng, n);
        // Spread r over [0, 1]: edits from none to about one per 3 tokens.
        let edits = match rng.below(6) {
            0 => 0,
            1 => rng.range(1, n / 100 + 1),
            _ => rng.below(n / 3 + 1),
        };
        let b = mutate(&mut rng, &a, edits);
        let (sa, sb) = (shingle_set(&a, &p), shingle_set(&b, &p));
        let (exact, min_sh) = exact_jaccard(&sa, &sb);
        if min_sh < 500 {
            continue;
        }
        let ka = Sketch::of_tokens(a.iter().map(|s| s.as_str()), &p, &mut scratch);
        let kb = Sketch::of_tokens(b.iter().map(|s| s.as_str()), &p, &mut scratch);
        let est = estimate(&ka, &kb).resemblance;
        by_band[((exact * 10.0) as usize).min(9)] += 1;
        errs.push(((est - exact).abs(), exact, est, min_sh));
    }
    let within = errs.iter().filter(|e| e.0 <= 0.05).count();
    let share = within as f64 / errs.len() as f64;
    let mean = errs.iter().map(|e| e.0).sum::<f64>() / errs.len() as f64;
    let worst = errs
        .iter()
        .cloned()
        .fold((0.0, 0.0, 0.0, 0), |m, e| if e.0 > m.0 { e } else { m });
    println!(
        "resemblance: {} pairs, {:.1}% within 0.05, mean |err| {:.4}, worst {:.4} (exact {:.3}, est {:.3}, {} shingles); pairs per r band 0.0–1.0: {:?}",
        errs.len(),
        share * 100.0,
        mean,
        worst.0,
        worst.1,
        worst.2,
        worst.3,
        by_band
    );
    assert!(
        by_band.iter().filter(|c| **c >= 10).count() >= 8,
        "r is not spread over [0,1]: {by_band:?}"
    );
    assert!(
        share >= 0.95,
        "only {:.1}% of estimates within 0.05",
        share * 100.0
    );
}

#[test]
fn containment_of_a_page_in_a_larger_page_within_01_for_90_percent() {
    let p = SketchParams::default();
    let mut rng = Rng::new(7);
    let mut scratch = Vec::new();
    let mut errs = Vec::new();
    for _ in 0..300 {
        let n_small = rng.range(300, 3000);
        let factor = rng.range(1, 8);
        let small = doc(&mut rng, n_small);
        // The small page, a little edited, inside a page up to 8 times its size.
        let k = rng.below(n_small / 20 + 1);
        let edited = mutate(&mut rng, &small, k);
        let before_len = rng.below(n_small * (factor - 1) + 1);
        let before = doc(&mut rng, before_len);
        let after_len = n_small * factor - before.len().min(n_small * factor);
        let after = doc(&mut rng, after_len);
        let big: Vec<String> = before.into_iter().chain(edited).chain(after).collect();
        let (ss, sb) = (shingle_set(&small, &p), shingle_set(&big, &p));
        let common = ss.iter().filter(|v| sb.binary_search(v).is_ok()).count();
        let exact = common as f64 / ss.len() as f64;
        let ks = Sketch::of_tokens(small.iter().map(|s| s.as_str()), &p, &mut scratch);
        let kb = Sketch::of_tokens(big.iter().map(|s| s.as_str()), &p, &mut scratch);
        let est = estimate(&ks, &kb).containment_a_in_b;
        errs.push((est - exact).abs());
    }
    let within = errs.iter().filter(|e| **e <= 0.1).count() as f64 / errs.len() as f64;
    println!(
        "containment: {} pairs, {:.1}% within 0.1, mean |err| {:.4}",
        errs.len(),
        within * 100.0,
        errs.iter().sum::<f64>() / errs.len() as f64
    );
    assert!(within >= 0.90);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sketches_and_estimates_are_well_formed(seed in any::<u64>(), n in 1usize..6000, edits in 0usize..400, w in 1u32..=12) {
        let p = SketchParams { shingle_width: w, ..SketchParams::default() };
        let mut rng = Rng::new(seed);
        let a = doc(&mut rng, n);
        let b = mutate(&mut rng, &a, edits);
        let mut scratch = Vec::new();
        let ka = Sketch::of_tokens(a.iter().map(|s| s.as_str()), &p, &mut scratch);
        let kb = Sketch::of_tokens(b.iter().map(|s| s.as_str()), &p, &mut scratch);
        for k in [&ka, &kb] {
            prop_assert!(k.values.windows(2).all(|x| x[0] < x[1]));
            let mask = (1u64 << k.level) - 1;
            prop_assert!(k.values.iter().all(|v| v & mask == 0));
            prop_assert!(k.shingles >= 1);
            if k.shingles < 2 * p.sample_target {
                prop_assert_eq!(k.values.len() as u32, k.shingles);
            } else {
                // A sample of about T..2T values.
                prop_assert!(k.values.len() > p.sample_target as usize / 2 && k.values.len() < 3 * p.sample_target as usize);
            }
        }
        let e = estimate(&ka, &kb);
        let r = estimate(&kb, &ka);
        prop_assert_eq!(e.resemblance, r.resemblance);
        prop_assert_eq!(e.containment_a_in_b, r.containment_b_in_a);
        prop_assert!((0.0..=1.0).contains(&e.resemblance));
        prop_assert!(e.resemblance <= e.containment_a_in_b + 1e-12 && e.resemblance <= e.containment_b_in_a + 1e-12);
        prop_assert_eq!(estimate(&ka, &ka).resemblance, 1.0);
        // Small docs keep every shingle: the estimate is exact.
        if ka.level == 0 && kb.level == 0 {
            let (sa, sb) = (shingle_set(&a, &p), shingle_set(&b, &p));
            prop_assert!((exact_jaccard(&sa, &sb).0 - e.resemblance).abs() < 1e-12);
        }
    }
}
