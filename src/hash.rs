//! A stable hash of names: FNV-1a, 64 bits. What names a host's files (a local queue, a
//! kept cluster slot map) and what tells two lock names' environment variables apart
//! must be the same in every build and every process on a host, which std's hasher
//! (seeded per process, free to change between Rust releases) is not; no crate is
//! worth five lines.

/// FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_is_fnv1a() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
