//! Every key and value decoder of the index on arbitrary bytes: the first byte picks the
//! column family, the second where the key ends; stored texts are also decompressed.
//! Invariants: no panic, no hang, no huge allocation from a damaged length; what
//! decodes encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark::index::columns::{self, captures::Captures, texts::Texts, Column};

fuzz_target!(|data: &[u8]| {
    let [sel, split, rest @ ..] = data else {
        return;
    };
    let name = columns::ALL[*sel as usize % columns::ALL.len()];
    let at = (*split as usize).min(rest.len());
    let (key, value) = rest.split_at(at);
    let _ = columns::check_entry(name, key, value);
    // Round trips of the hand-made layouts.
    if let Ok(k) = Captures::decode_key(key) {
        assert_eq!(Captures::key(&k), key, "a capture key that does not encode back");
    }
    if let Ok(t) = Texts::decode_value(value) {
        assert_eq!(Texts::value(&t), value);
        let _ = tidemark::index::texts::decode(&t, None);
    }
});
