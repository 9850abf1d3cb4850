//! Integers in decimal on the stack: no allocation and no `fmt` (an id
//! written through `fmt` cost about 230 instructions), so also safe in a
//! signal handler.

/// `v` in decimal, written at the end of `buf` (u64::MAX has 20 digits).
pub fn u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    #[test]
    fn every_width() {
        for v in [0, 7, 10, 99, 1_000_000, u64::MAX / 10, u64::MAX] {
            assert_eq!(super::u64(v, &mut [0u8; 20]), v.to_string().as_bytes());
        }
    }
}
