//! FNV-1a, 64 bits: the hash the build keys its cache by and `cargo xtask
//! mutants` records for each file. Enough to tell whether bytes changed;
//! not a defence against anyone.

/// The hash of no bytes, where every hash starts.
pub const START: u64 = 0xcbf2_9ce4_8422_2325;

/// `hash` carried on over `bytes`: `more(more(START, a), b)` is the hash
/// of `a` followed by `b`.
pub fn more(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The hash of `bytes`.
pub fn hash(bytes: &[u8]) -> u64 {
    more(START, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_64() {
        // The published test vectors of FNV-1a, 64 bits.
        assert_eq!(hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(more(hash(b"foo"), b"bar"), hash(b"foobar"));
    }
}
