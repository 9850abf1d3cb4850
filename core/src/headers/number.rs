//! Exact numeric reading of integer header and body values.

/// Largest integer the spec allows in a mirrored parameter: 2^53−1, the
/// JavaScript / IEEE 754 double safe range (row tools-x-mcp-header-int-safe-range).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// `i` if it lies within ±[`MAX_SAFE_INTEGER`].
pub(super) fn safe_integer(i: i64) -> Option<i64> {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i).then_some(i)
}

/// Reads decimal number text as an exact integer within ±[`MAX_SAFE_INTEGER`].
///
/// Grammar: JSON number syntax, except that leading zeros are allowed
/// (`-? digit+ ( . digit+ )? ( [eE] [+-]? digit+ )?`). The value is computed
/// exactly, without floating point, so `42`, `042`, `42.0`, `4.2e1` and
/// `420e-1` all read as 42, `-0` as 0, and `42.5` or `1e16` as `None`. This is
/// the numeric comparison the spec recommends for integer parameters (row
/// streamable-http-numeric-compare).
pub fn parse_safe_integer(text: impl IntoIterator<Item = u8>) -> Option<i64> {
    let mut it = text.into_iter().peekable();
    let negative = it.next_if_eq(&b'-').is_some();
    let mut acc = Significand::default();
    acc.digits(&mut it)?;
    let fraction = if it.next_if_eq(&b'.').is_some() { acc.digits(&mut it)? } else { 0 };
    let exponent = if it.next_if(|b| *b == b'e' || *b == b'E').is_some() {
        let negative_exp = it.next_if(|b| *b == b'+' || *b == b'-') == Some(b'-');
        let mut e: i64 = 0;
        let mut any = false;
        while let Some(d) = it.next_if(u8::is_ascii_digit) {
            e = e.saturating_mul(10).saturating_add(i64::from(d - b'0'));
            any = true;
        }
        if !any {
            return None;
        }
        if negative_exp {
            -e
        } else {
            e
        }
    } else {
        0
    };
    if it.next().is_some() {
        return None;
    }
    if acc.mantissa == 0 {
        return Some(0);
    }
    let scale = acc.zeros.saturating_add(exponent).saturating_sub(fraction);
    // A mantissa without trailing zeros times a negative power of ten is
    // not an integer; a power above 15 exceeds the safe range.
    if !(0..=15).contains(&scale) {
        return None;
    }
    let mut value = acc.mantissa;
    for _ in 0..scale {
        value = value.checked_mul(10)?;
    }
    let value = i64::try_from(value).ok()?;
    safe_integer(if negative { -value } else { value })
}

/// Significant digits read so far. Zeros are only counted (in `zeros`) until
/// a non-zero digit follows, so `mantissa` never ends in 0 and stays within
/// the safe range however many zeros the text has.
#[derive(Default)]
struct Significand {
    mantissa: u64,
    zeros: i64,
}

impl Significand {
    /// Reads one or more digits; returns how many, `None` if there are none
    /// or the significant digits leave the safe range.
    fn digits(&mut self, it: &mut core::iter::Peekable<impl Iterator<Item = u8>>) -> Option<i64> {
        let mut n: i64 = 0;
        while let Some(d) = it.next_if(u8::is_ascii_digit) {
            self.push(d - b'0')?;
            n = n.saturating_add(1);
        }
        (n > 0).then_some(n)
    }

    fn push(&mut self, digit: u8) -> Option<()> {
        if digit == 0 {
            self.zeros = self.zeros.saturating_add(1);
            return Some(());
        }
        const LIMIT: u64 = MAX_SAFE_INTEGER as u64;
        if self.mantissa != 0 {
            for _ in 0..=self.zeros {
                self.mantissa = self.mantissa.checked_mul(10).filter(|m| *m <= LIMIT)?;
            }
        }
        self.mantissa += u64::from(digit);
        self.zeros = 0;
        (self.mantissa <= LIMIT).then_some(())
    }
}
