//! Pseudo-words with Zipf frequencies: the text pages are made of, so shingle statistics
//! look like text, not noise.

use super::Rng;

/// Pseudo-words with Zipf frequencies.
pub(super) struct Vocabulary {
    pub(super) words: Vec<String>,
    pub(super) cdf: Vec<f64>,
}

impl Vocabulary {
    pub(super) fn new(rng: &mut Rng, size: usize) -> Vocabulary {
        const ONSETS: &[&str] = &[
            "", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "br",
            "st", "tr", "pl", "gr", "ch", "sh", "th",
        ];
        const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"];
        const CODAS: &[&str] = &["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"];
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(size);
        while words.len() < size {
            // Frequent words are short, as in natural text.
            let rank = words.len();
            let syllables = if rank < 100 {
                1
            } else if rank < 3000 {
                rng.range(1, 2)
            } else {
                rng.range(2, 4)
            };
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(ONSETS[rng.below(ONSETS.len())]);
                w.push_str(VOWELS[rng.below(VOWELS.len())]);
                w.push_str(CODAS[rng.below(CODAS.len())]);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut cdf = Vec::with_capacity(size);
        let mut acc = 0.0;
        for r in 0..size {
            acc += 1.0 / ((r + 1) as f64).powf(1.07);
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= acc;
        }
        Vocabulary { words, cdf }
    }

    pub(super) fn word(&self, rng: &mut Rng) -> u32 {
        let u = rng.unit();
        self.cdf
            .partition_point(|c| *c < u)
            .min(self.words.len() - 1) as u32
    }

    pub(super) fn sentence(&self, rng: &mut Rng) -> Vec<u32> {
        let n = rng.range(6, 22);
        (0..n).map(|_| self.word(rng)).collect()
    }
}
