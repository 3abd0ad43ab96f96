//! Rice codes of ascending values, for packed sketches: each value is stored as its gap
//! from the one before, the gap's high part in unary and its low `k` bits as they are,
//! with `k` chosen from the count and the range so that a gap takes about `k + 2` bits
//! (Golomb, 1966; Rice, 1979). Sketch values are uniform hashes, so the gaps of `n`
//! of them in a range of `2^u` are geometric around `2^u / n`: 27-bit values in groups
//! of a few hundred take ~21 bits instead of 32.
//!
//! The reader checks every bound: a damaged value is an error, never a panic or a huge
//! allocation.

/// Bits of the low part for `count` values spread over `2^bits`.
pub fn parameter(count: usize, bits: u32) -> u32 {
    let n = usize::BITS - count.leading_zeros();
    bits.saturating_sub(n)
}

/// Appends bits, most significant first.
pub struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
}

impl<'a> BitWriter<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> BitWriter<'a> {
        BitWriter { out, acc: 0, n: 0 }
    }

    /// The low `bits` bits of `v` (any number up to 64). Fewer than 8 bits wait in the
    /// accumulator between calls, so up to 56 go in at once.
    pub fn put(&mut self, v: u64, bits: u32) {
        if bits > 56 {
            self.put(v >> 32, bits - 32);
            self.put(v & 0xffff_ffff, 32);
            return;
        }
        if bits == 0 {
            return;
        }
        self.acc = (self.acc << bits) | (v & ((1u64 << bits) - 1));
        self.n += bits;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
    }

    /// `ascending` (distinct) as Rice-coded gaps with parameter `k`.
    pub fn ascending(&mut self, ascending: impl Iterator<Item = u64>, k: u32) {
        let mut prev = 0u64;
        for v in ascending {
            let gap = v - prev;
            prev = v;
            let mut q = gap >> k;
            let low = gap & ((1u64 << k.min(63)) - 1);
            if q + 1 + k as u64 <= 56 {
                // q ones, a zero, the low bits: one write (the usual case).
                self.put((((1u64 << q) - 1) << (k + 1)) | low, q as u32 + 1 + k);
                continue;
            }
            while q >= 32 {
                self.put(u32::MAX as u64, 32);
                q -= 32;
            }
            self.put(((1u64 << q) - 1) << 1, q as u32 + 1);
            self.put(low, k);
        }
    }

    /// Pads the last byte with zeros.
    pub fn finish(mut self) {
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
    }
}

/// Reads what a [`BitWriter`] wrote.
pub struct BitReader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader of `b` from its first bit.
    pub fn new(b: &'a [u8]) -> BitReader<'a> {
        BitReader { b, pos: 0 }
    }

    fn get(&mut self, bits: u32) -> Result<u64, String> {
        if bits > 32 {
            let hi = self.get(bits - 32)?;
            return Ok((hi << 32) | self.get(32)?);
        }
        if bits == 0 {
            return Ok(0);
        }
        if self.pos + bits as usize > self.b.len() * 8 {
            return Err("its bits end early".into());
        }
        let start = self.pos >> 3;
        let mut w = [0u8; 8];
        let avail = (self.b.len() - start).min(8);
        w[..avail].copy_from_slice(&self.b[start..start + avail]);
        let x = u64::from_be_bytes(w) << (self.pos & 7);
        self.pos += bits as usize;
        Ok(x >> (64 - bits))
    }

    /// `count` ascending values of at most `limit`, Rice-coded with parameter `k`.
    pub fn ascending(
        &mut self,
        count: usize,
        k: u32,
        limit: u64,
        mut each: impl FnMut(u64),
    ) -> Result<(), String> {
        let mut prev = 0u64;
        for i in 0..count {
            // The usual case from one 64-bit window: q ones, a zero, k low bits.
            let start = self.pos >> 3;
            if start + 8 <= self.b.len() {
                let w = u64::from_be_bytes(self.b[start..start + 8].try_into().expect("8"))
                    << (self.pos & 7);
                let q = w.leading_ones();
                if q + 1 + k <= 57 && (q as u64) <= limit >> k {
                    let low = if k == 0 {
                        0
                    } else {
                        (w << (q + 1)) >> (64 - k)
                    };
                    self.pos += (q + 1 + k) as usize;
                    let v = prev
                        .checked_add(((q as u64) << k) | low)
                        .filter(|v| *v <= limit && (i == 0 || *v > prev))
                        .ok_or("values out of order or out of range")?;
                    prev = v;
                    each(v);
                    continue;
                }
            }
            let mut q = 0u64;
            while self.get(1)? == 1 {
                q += 1;
                if q > limit >> k {
                    return Err("a gap past the range of its values".into());
                }
            }
            let gap = (q << k) | self.get(k)?;
            let v = prev
                .checked_add(gap)
                .filter(|v| *v <= limit && (i == 0 || *v > prev))
                .ok_or("values out of order or out of range")?;
            prev = v;
            each(v);
        }
        Ok(())
    }

    /// Skips to the next whole byte; the bytes read so far.
    pub fn byte_align(&mut self) -> usize {
        self.pos = self.pos.div_ceil(8) * 8;
        self.pos / 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_values_roundtrip_in_fewer_bits() {
        let mut seed = 11u64;
        for (count, bits) in [
            (0usize, 27u32),
            (1, 27),
            (5, 27),
            (400, 27),
            (90, 58),
            (3, 64),
        ] {
            let mut v: Vec<u64> = (0..count)
                .map(|_| {
                    seed = crate::sketch::fmix64(seed.wrapping_add(1));
                    if bits == 64 {
                        seed
                    } else {
                        seed >> (64 - bits)
                    }
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            let k = parameter(v.len(), bits);
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            w.ascending(v.iter().copied(), k);
            w.finish();
            if count >= 400 {
                assert!(
                    out.len() * 8 < v.len() * 23,
                    "{} bytes for {}",
                    out.len(),
                    v.len()
                );
            }
            let limit = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let mut back = Vec::new();
            let mut r = BitReader::new(&out);
            r.ascending(v.len(), k, limit, |x| back.push(x)).unwrap();
            assert_eq!(back, v);
            // Truncated: an error, not a panic.
            if !out.is_empty() {
                let mut r = BitReader::new(&out[..out.len() - 1]);
                let _ = r.ascending(v.len(), k, limit, |_| {});
                assert!(BitReader::new(&out[..out.len() - 1])
                    .ascending(v.len() + 1, k, limit, |_| {})
                    .is_err());
            }
        }
    }
}
