//! A bounded writer over `&mut [u8]`, shared by the SSE and HTTP encoders.
use super::WriteError;

pub(super) struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Out<'a> {
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        Out { buf, len: 0 }
    }

    pub(super) fn put(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        let end = self.len.checked_add(bytes.len()).ok_or(WriteError::Overflow)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(WriteError::Overflow)?;
        dst.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Writes `n` in base `radix` (10 or 16, lowercase digits).
    pub(super) fn put_num(&mut self, mut n: u64, radix: u64) -> Result<(), WriteError> {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdef"[(n % radix) as usize];
            n /= radix;
            if n == 0 {
                break;
            }
        }
        self.put(&digits[i..])
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }
}
